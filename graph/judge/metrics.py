"""Answer metrics without a model: the HotpotQA/SQuAD normalisation, EM, token F1, cover match.

They are the judge's fallback when the judge model fails, the whole judge when no model is given,
and cheap extra numbers reported next to every LLM verdict (the paper computes none of them, which
makes its accuracy hard to compare with the literature).
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Iterable

from mia.graph.protocol import final_answer

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")
# HotpotQA: these answers only ever match exactly; a partial token overlap with them means nothing.
_EXACT_ONLY = frozenset({"yes", "no", "noanswer"})
# Replies that decline to answer (SimpleQA's NOT_ATTEMPTED); also "No results were found ...", which a
# yes/no reading would otherwise take for a "no".
_REFUSAL = re.compile(
    r"^\s*$|\b(i\s+(do\s+not|don'?t)\s+know|unknown|cannot\s+(find|answer|determine)|can'?t\s+(find|answer|determine)|"
    r"unable\s+to|no\s+answer|not\s+(found|enough\s+information)|insufficient\s+information|"
    r"no\s+(results?|information|relevant\s+information)\s+(was|were|is|are)?\s*(found|available|provided))\b",
    re.I,
)


def normalize_answer(text: str) -> str:
    """Lower-case, drop ASCII punctuation, drop the articles a/an/the, collapse whitespace.

    This is the official SQuAD/HotpotQA normalisation, kept verbatim so numbers are comparable
    with published ones (in particular it leaves non-ASCII punctuation alone).
    """
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def _golds(golds: str | Iterable[str]) -> list[str]:
    """Accept one gold answer or several aliases; refuse an empty list (a silent 0 hides bugs)."""
    items = [golds] if isinstance(golds, str) else list(golds)
    if not items:
        raise ValueError("at least one gold answer is needed")
    for item in items:
        if not isinstance(item, str):
            raise TypeError(f"gold answers must be strings, got {type(item).__name__}")
    return items


def exact_match(prediction: str, golds: str | Iterable[str]) -> float:
    """1.0 when the normalised prediction equals any normalised gold alias, else 0.0."""
    pred = normalize_answer(prediction)
    return float(any(pred == normalize_answer(gold) for gold in _golds(golds)))


def _f1_one(prediction: str, gold: str) -> float:
    """HotpotQA token F1 between one prediction and one gold answer."""
    pred, ref = normalize_answer(prediction), normalize_answer(gold)
    if (pred in _EXACT_ONLY or ref in _EXACT_ONLY) and pred != ref:
        return 0.0
    pred_tokens, ref_tokens = pred.split(), ref.split()
    if not pred_tokens or not ref_tokens:
        return float(pred_tokens == ref_tokens)
    same = sum((Counter(pred_tokens) & Counter(ref_tokens)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred_tokens), same / len(ref_tokens)
    return 2 * precision * recall / (precision + recall)


def f1_score(prediction: str, golds: str | Iterable[str]) -> float:
    """Token F1, the best over the gold aliases (yes/no/noanswer only match exactly)."""
    return max(_f1_one(prediction, gold) for gold in _golds(golds))


def cover_match(prediction: str, golds: str | Iterable[str]) -> bool:
    """True when some normalised gold alias appears as a whole-token run inside the prediction.

    Token-level, not substring: gold "no" is not covered by "not", nor "art" by "party".
    This is the paper's fallback when its judge call fails ("gold contained in prediction").
    """
    pred = normalize_answer(prediction).split()
    for gold in _golds(golds):
        ref = normalize_answer(gold).split()
        if ref and any(pred[i : i + len(ref)] == ref for i in range(len(pred) - len(ref) + 1)):
            return True
    return False


def extract_answer(text: str) -> str:
    """The final answer in an agent's output, whitespace-normalised: the protocol's
    `final_answer` (the paper's training-reward extraction, reference 4.5)."""
    return final_answer(text)


def is_refusal(text: str) -> bool:
    """True for an answer that declines to answer ("I don't know", "unknown", "No results were found")."""
    return bool(_REFUSAL.search(text))


def shares_nothing(em: float, f1: float | None, cover: bool) -> bool:
    """The metrics flatly contradict a CORRECT grade: no exact match, no cover match, F1 0. The one
    rule behind JudgeConfig.contradiction, and behind bench/judge's count of such grades."""
    return not (em or cover or (f1 or 0.0) > 0.0)


def same_words(em: float, f1: float | None) -> bool:
    """The metrics flatly contradict any grade but CORRECT: the answer is a gold answer, or its very
    words in another order (F1 1.0: "May 2, 1934" for the gold "2 May 1934", which the embedded
    Qwen grader called INCORRECT twice, results/2wiki-qwen-planners/mia-grpo and
    results/2wiki-qwen-defaults/mia; no other logged answer scores F1 1.0 without an exact match)."""
    return em >= 1.0 or (f1 or 0.0) >= 1.0


__all__ = [
    "normalize_answer",
    "exact_match",
    "f1_score",
    "cover_match",
    "extract_answer",
    "is_refusal",
    "shares_nothing",
    "same_words",
]
