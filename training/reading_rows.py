"""Reading rows for the executor SFT: a wrong first answer whose own search results held a gold
answer, taught again as an answer turn that quotes the sentences holding it, then gives it.

Why (issue 37): rejection sampling on right first attempts taught what the model already did (one
search, then the answer). Its misses are mostly reading, not searching: of the 53 wrong answers
that are not yes/no in the 2Wiki default row at positions 220-319
(`results/two-searches-2wiki/default`, no reported split; bench/training/sft-data.md), 34 had a gold answer inside the
executor's own search results (14 of the 24 compositional ones). Those attempts searched well and
answered wrong. A row keeps their prompt exactly as served (the searches and their results) and
replaces the answer turn with one grounded in the results:

    <think>"Film X": X is a 1979 film directed by Y. "Y": Y was born in Z. So the answer is Z.</think>
    <answer>Z</answer>

This is rationalisation in STaR's sense (the gold answer as the hint), with the rationale taken
from the passages rather than sampled, so it costs no model call and quotes only what the results say.

Precision before recall (a wrong label teaches a wrong reading): the gold must be named in a
sentence of a result whose title the question or the attempt's own queries name (`direct`), or of
a result whose title such a result's text names (`bridge`: one hop, both sentences quoted); never
for yes/no questions or comparisons (their candidates are in the question, and the sentence naming
one is not the reason), nor where a gold answer's words are in the question.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from mia.graph.judge.matching import match_answer
from mia.graph.judge.shape import sentences
from mia.graph.judge.surface import content, find, tokens
from mia.graph.protocol import is_yes_no_question, question_options, render_turn
from mia.graph.tools.arguments import ToolArgumentError, query_list
from mia.graph.tools.formatting import parse_hits
from mia.training.sft_data import Episode, first_answer, question_key, served_turns

_POSSESSIVE = re.compile(r"['\u2019]s\b")  # "Annesley's father": the name is "Annesley"
_DISAMBIGUATION = re.compile(r"\s*\([^()]*\)\s*$")  # "Usher (musician)" is named "Usher" in text


@dataclass(frozen=True)
class Evidence:
    """The sentences that give the gold answer, each with its result's title (a bridge first)."""

    quotes: tuple[tuple[str, str], ...]
    answer: str

    def thought(self) -> str:
        said = " ".join(f'"{title}": {sentence}' for title, sentence in self.quotes)
        return f"{said} So the answer is {self.answer}."


def _names(title: str, where: Sequence[str]) -> bool:
    """Whether the title's identifying words appear, in a row, in the token list `where`: the whole
    title, or the title without its disambiguation ("Usher (musician)" as "Usher")."""
    for name in dict.fromkeys((title, _DISAMBIGUATION.sub("", title))):
        words = tokens(name)
        if content(words) and find(words, list(where)):
            return True
    return False


def _text_tokens(text: str) -> list[str]:
    """The tokens of a question or query with possessives cut, so that its names match titles."""
    return tokens(_POSSESSIVE.sub("", text))


def find_evidence(
    question: str, gold: Sequence[str], queries: Sequence[str], observations: Sequence[str]
) -> Evidence | None:
    """The quoted evidence for a gold answer in these search results, or None (see the module doc)."""
    if is_yes_no_question(question) or question_options(question):
        return None
    asked = _text_tokens(question)
    golds = [g for g in gold if content(tokens(g))]
    if not golds or any(find(tokens(g), asked) for g in golds):
        return None
    hits = [hit for text in observations for hit in parse_hits(text)]
    anchors = asked + [t for q in queries for t in ["|", *_text_tokens(q)]]
    direct = [(title, body) for title, body in hits if _names(title, anchors)]
    for title, body in hits:
        for sentence in sentences(body):
            said = tokens(sentence)
            alias = next((g for g in golds if find(tokens(g), said)), None)
            if alias is None:
                continue
            if any(title == t for t, _ in direct):
                return Evidence(((title, sentence),), alias)
            for bridge_title, bridge_body in direct:
                link = next((s for s in sentences(bridge_body) if _names(title, tokens(s))), None)
                if link is not None and bridge_title != title:
                    return Evidence(((bridge_title, link), (title, sentence)), alias)
    return None


def reading_row(episode: Episode) -> dict[str, Any] | None:
    """One prompt-completion row (TRL's conversational format) for an episode whose first answer
    was wrong (the answer matcher against `episode.gold`) while its first attempt's results held a
    gold answer: the conversation served before that answer, and the grounded answer turn. None
    when the episode does not qualify."""
    golds = [g for g in episode.gold if tokens(g)]
    steps = first_answer(episode.steps)
    if not golds or steps is None:
        return None
    if match_answer(episode.question, str(steps[-1].get("content") or ""), golds).decision != "incorrect":
        return None
    queries = [q for s in steps if s.get("kind") == "tool_call" for q in _queries(s.get("args"))]
    observations = [str(s.get("content") or "") for s in steps if s.get("kind") == "observation"]
    evidence = find_evidence(episode.question, golds, queries, observations)
    if evidence is None:
        return None
    turns = served_turns(replace(episode, steps=tuple(steps)))
    if not turns or turns[-1].kind != "answer":
        return None
    completion = render_turn(evidence.thought(), answer=evidence.answer)
    return {"prompt": turns[-1].prompt, "completion": [{"role": "assistant", "content": completion}]}


def reading_rows(episodes: Iterable[Episode], *, skip_questions: Iterable[str] = ()) -> list[dict[str, Any]]:
    """A reading row for each question of `episodes` that gives one (the first such episode in log
    order), never for a question of `skip_questions` (the reported splits, and the questions the
    right rows already teach)."""
    seen = {question_key(q) for q in skip_questions}
    rows: list[dict[str, Any]] = []
    for episode in episodes:
        key = question_key(episode.question)
        if key in seen:
            continue
        row = reading_row(episode)
        if row is not None:
            seen.add(key)
            rows.append(
                {
                    **row,
                    "question": episode.question,
                    "source": episode.source,
                    "planned": bool(episode.plan.strip()),
                    "reading": True,
                }
            )
    return rows


def _queries(args: Any) -> list[str]:
    """A logged call's queries as the search tool read them; none where it could not."""
    try:
        return query_list(args) if isinstance(args, Mapping) else []
    except ToolArgumentError:
        return []


__all__ = ["Evidence", "find_evidence", "reading_row", "reading_rows"]
