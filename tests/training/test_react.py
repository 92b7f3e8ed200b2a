"""The training ReAct loop on the real embedded model: several episodes played in lockstep (one
batched, left-padded generation per turn) behave like the same episodes played one by one."""

from __future__ import annotations

from pathlib import Path

import pytest

from mia.training.prompts import executor_messages
from mia.training.react import Episode, ReactBudget, ReactRunner, SandboxSearch

PARAS = [
    {"title": "Maria Golovin", "text": "Maria Golovin is an opera by Gian Carlo Menotti, first staged in 1958."},
    {"title": "Menotti", "text": "Gian Carlo Menotti was an Italian-American composer born in 1911."},
]
QUESTIONS = [
    ("Who composed Maria Golovin?", "1. Search the opera Maria Golovin.\n2. Answer with its composer."),
    (
        "In which year was the composer of the opera Maria Golovin, first staged in 1958, born?",
        "1. Search the opera.\n2. Search its composer's birth year.\n3. Answer.",
    ),
]


@pytest.fixture(scope="module")
def runner(data_dir: Path) -> ReactRunner:
    import torch

    from mia.graph.models.convert import ensure_converted
    from mia.training.policy import load_model, load_tokenizer

    torch.set_num_threads(1)
    folder = ensure_converted("smollm2", data_dir)
    budget = ReactBudget(max_tool_calls=1, max_turn_tokens=40, max_answer_tokens=16)
    return ReactRunner(load_model(folder, None), load_tokenizer(folder), SandboxSearch(top_k=1), budget)


def _consistent(ep: Episode, runner: ReactRunner) -> None:
    """Token bookkeeping: every generated token is masked 1, every tool/template token 0, and the
    policy's own tokens decode to the recorded turns."""
    assert len(ep.completion_ids) == len(ep.env_mask) and ep.turns
    own = [t for t, m in zip(ep.completion_ids, ep.env_mask, strict=True) if m == 1]
    decoded = runner.tokenizer.decode(own, skip_special_tokens=True)
    assert decoded.replace(" ", "") == "".join(ep.turns).replace(" ", "")
    assert ep.tool_calls <= runner.budget.max_tool_calls
    assert len(ep.observations) <= ep.tool_calls


def test_lockstep_episodes_match_one_by_one(runner: ReactRunner) -> None:
    messages = [executor_messages(q, plan) for q, plan in QUESTIONS]
    alone = [runner.run(m, PARAS, sample=False) for m in messages]
    together = runner.run_many(messages, [PARAS, PARAS], sample=False)
    assert len(together) == 2
    for a, b in zip(alone, together, strict=True):
        _consistent(b, runner)
        assert b.prompt_ids == a.prompt_ids  # no padding leaks into an episode's own ids
        assert b.turns[0] == a.turns[0]  # greedy: the padded batch decodes what the row alone decodes
        assert (b.answer, b.tool_calls) == (a.answer, a.tool_calls)


def test_cut_keeps_a_real_end_token_but_not_padding(runner: ReactRunner) -> None:
    tok = runner.tokenizer
    pad = tok.pad_token_id
    stopped = tok("<answer>Menotti</answer>", add_special_tokens=False)["input_ids"]
    assert runner._cut(stopped + [pad, pad], pad) == stopped  # ended by a stop string: padding only
    ended = tok("Menotti", add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
    assert runner._cut(ended + [pad], pad) == ended  # the model's own end token is kept
    assert runner._cut(stopped, pad) == stopped  # ran out of budget: nothing to cut


def test_sampled_batch_of_one_prompt_gives_a_group(runner: ReactRunner) -> None:
    import torch

    torch.manual_seed(0)
    messages = executor_messages(*QUESTIONS[0])
    group = runner.run_many([messages] * 4, [PARAS] * 4, sample=True)
    for ep in group:
        _consistent(ep, runner)
    assert len({tuple(ep.completion_ids) for ep in group}) > 1  # sampling: the rollouts differ
