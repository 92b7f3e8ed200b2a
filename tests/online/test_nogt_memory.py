"""Without ground truth the reviewer panel's verdict is the reward, and its feedback goes into
memory; malformed reviewer output never breaks learning. The bidirectional memory loop on a
real Chroma store: shortest correct rollout and one incorrect rollout stored, plan pairs,
majority win-rate credit, periodic consolidation."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pytest

from mia.training.online.config import OnlineConfig
from mia.training.online.memory_loop import MemoryLoop
from mia.training.online.policy import SampledPlan
from mia.training.online.rollouts import RolloutScorer
from mia.training.online.trainer import GRPOBatchTrainer
from tests.judge.conftest import RecordingFake
from tests.online.fakes import episode, rollout


def review(score: int, reason: str) -> str:
    return json.dumps({"score": score, "reason": reason})


def scripted(*replies) -> RecordingFake:
    return RecordingFake(messages=iter(replies), prompts=[], temperatures=[])


@dataclass
class FakeEpisode:
    answer: str | None
    turns: list[str] = field(default_factory=lambda: ["<tool_call>{}</tool_call>", "<answer>x</answer>"])
    observations: list[str] = field(default_factory=lambda: ["[Doc] some evidence"])
    tool_calls: int = 1


class FakeReact:
    def __init__(self, answers):
        self.answers = list(answers)
        self.calls = []

    def run_many(self, messages, paragraphs, sample=False):
        self.calls += list(messages)
        return [FakeEpisode(self.answers.pop(0)) for _ in messages]


NOGT = OnlineConfig(ground_truth=False)


def test_panel_verdict_is_the_reward_and_its_feedback_is_kept() -> None:
    judge = scripted(review(8, "sound steps"), review(8, "grounded in the doc"), review(9, "a real answer"))
    scorer = RolloutScorer(FakeReact(["Paris"]), NOGT, judge)
    got = scorer.run(episode(0, gold_answers=[]), SampledPlan("1. search the capital", [1], [2]))
    assert got.outcome == "correct"
    assert got.reward == pytest.approx(0.9 + 0.1)  # 0.9 * arbiter + 0.1 * format
    assert "grounded in the doc" in got.feedback and "a real answer" in got.feedback
    assert not any("gold 0" in t for t in judge.prompt_texts())  # reviewers never see gold answers


@pytest.mark.parametrize(
    "replies, note",
    [
        (("no", "nope", "nah", "still no", "?", "!"), "missing"),  # every review hopeless, even re-asked
        ((RuntimeError("boom"), RuntimeError("boom"), RuntimeError("boom")), "missing"),  # every call fails
    ],
)
def test_malformed_or_failing_reviewers_give_no_reward_and_no_crash(replies, note) -> None:
    scorer = RolloutScorer(FakeReact(["Paris"]), NOGT, scripted(*replies))
    got = scorer.run(episode(0, gold_answers=[]), SampledPlan("1. search", [1], [2]))
    assert got.outcome == "unknown"  # undecided: no verdict reward, and never a failure lesson
    assert got.reward == pytest.approx(0.1)  # only the format term
    assert note in got.feedback


def test_malformed_then_repaired_review_still_counts() -> None:
    judge = scripted("Score: 8, Reason: clear steps", "lol", review(7, "ok"), review(8, "fine on retry"))
    got = RolloutScorer(FakeReact(["Paris"]), NOGT, judge).run(episode(0, gold_answers=[]), SampledPlan("p", [1], [2]))
    assert got.outcome == "correct" and "fine on retry" in got.feedback


def test_a_judge_that_raises_outside_the_panel_becomes_an_unknown_verdict(monkeypatch) -> None:
    import mia.graph.judge as judge_pkg

    def broken(*a, **k):
        raise ValueError("judge exploded")

    monkeypatch.setattr(judge_pkg, "judge", broken)
    got = RolloutScorer(FakeReact(["x"]), NOGT, scripted()).run(episode(0, gold_answers=[]), SampledPlan("p", [1], [2]))
    assert got.outcome == "unknown" and got.reward == pytest.approx(0.1) and "failed" in got.feedback  # format only


def test_ground_truth_reward_is_the_planner_stage_reward() -> None:
    scorer = RolloutScorer(FakeReact(["gold 0", "wrong"]), OnlineConfig(), None)
    good = scorer.run(episode(0), SampledPlan("1. search", [1], [2]))
    bad = scorer.run(episode(0), SampledPlan("1. search", [1], [2]))
    assert good.outcome == "correct" and good.reward == pytest.approx(0.7 + 0.2 + 0.05 + 0.05)
    assert bad.outcome == "incorrect" and bad.reward == pytest.approx(
        0.05
    )  # format; a wrong answer kept is a wrong decision


def test_nogt_needs_a_judge_model() -> None:
    with pytest.raises(ValueError, match="judge model"):
        RolloutScorer(FakeReact([]), NOGT, None)


class FakePolicy:
    def __init__(self):
        self.groups = None
        self.asked: list[tuple] = []  # (messages, max_new_tokens, stop) of each sampling

    def sample(self, messages, n, max_new_tokens, temperature, should_stop=None, stop=()):
        self.asked.append((messages, max_new_tokens, tuple(stop)))
        return [SampledPlan(f"plan {i}: search", [1, 2], [3, 4]) for i in range(n)]

    def grpo_step(self, groups, should_stop=None):
        self.groups = groups
        return {"reward_mean": 0.5, "updated": 1.0}


@pytest.fixture
def store(tmp_path):
    from mia.memory import MemoryStore

    s = MemoryStore.open(tmp_path / "memory")
    yield s
    s.close()


def test_learner_path_without_ground_truth_stores_reviewer_feedback_in_memory(store, tmp_path) -> None:
    """Rollouts -> reviewer panel (one reply malformed) -> GRPO groups -> memories with feedback."""
    good = (review(8, "sound logic"), review(8, "grounded"), review(9, "substantive"))
    bad = ("garbage", "more garbage", review(2, "hallucinated"), review(1, "gave up"))  # reasoning missing twice
    judge = scripted(*good, *bad)
    trainer = GRPOBatchTrainer(
        FakePolicy(),
        RolloutScorer(FakeReact(["Paris", "I cannot find it"]), OnlineConfig(ground_truth=False, rollouts=2), judge),
        OnlineConfig(ground_truth=False, rollouts=2),
    )
    ep = episode(0, gold_answers=[], namespace="ttl")
    result = trainer.learn([ep])
    rewards = [r for _, r in trainer.policy.groups[0]]
    assert rewards == [pytest.approx(1.0), pytest.approx(0.1)]
    loop = MemoryLoop(store, tmp_path / "online", consolidate_every=1)
    stored = loop.absorb(ep, result.rollouts[ep.id])
    assert stored["positive"] and stored["negative"] and stored["pair"]
    pos, neg = store.get(stored["positive"]), store.get(stored["negative"])
    assert pos.outcome == "correct" and "sound logic" in pos.judge_feedback
    assert neg.outcome == "incorrect" and "hallucinated" in neg.judge_feedback
    assert loop.end_batch("ttl") is not None  # consolidated every batch here


def test_memory_loop_keeps_shortest_correct_one_incorrect_and_credits_the_majority(store, tmp_path) -> None:
    from mia.memory import Trajectory

    seed = store.memorise(
        Trajectory(namespace="ttl", question="an old question?", plan="p", answer="a", outcome="correct")
    )
    loop = MemoryLoop(store, tmp_path / "online", consolidate_every=2)
    ep = episode(1, namespace="ttl", used_memory_ids=[seed.id])
    rollouts = [
        rollout("long correct plan", "correct", turns=3),
        rollout("short correct plan", "correct", turns=1),
        rollout("wrong plan", "incorrect", feedback="answer not in the documents"),
    ]
    stored = loop.absorb(ep, rollouts)
    assert store.get(stored["positive"]).plan == "short correct plan"
    assert store.get(stored["negative"]).plan == "wrong plan"
    pair = loop.plan_pairs()[0]
    assert pair["correct_plan"] == "short correct plan" and pair["incorrect_plan"] == "wrong plan"
    credited = store.get(seed.id)
    assert credited.usage_count == 1 and credited.success_count == 1  # 2 correct > 1 incorrect
    assert loop.end_batch("ttl") is None and loop.end_batch("ttl") is not None  # every 2nd batch
    only_wrong = loop.absorb(episode(2, namespace="ttl"), [rollout("bad", "incorrect")])
    assert only_wrong["positive"] is None and only_wrong["negative"] and not only_wrong["pair"]


class BatchBreaksReact(FakeReact):
    """A batch fails (say, out of memory); alone, the second plan's rollout fails too."""

    def run_many(self, messages, paragraphs, sample=False):
        if len(messages) > 1:
            raise RuntimeError("batch failed")
        if "second" in messages[0][-1]["content"]:
            raise RuntimeError("this rollout is broken")
        return super().run_many(messages, paragraphs, sample)


def test_a_failed_batch_is_played_one_by_one_and_a_broken_rollout_earns_no_answer_credit() -> None:
    scorer = RolloutScorer(BatchBreaksReact(["gold 0", "gold 0"]), OnlineConfig(), None)
    plans = [SampledPlan(f"1. search the {which} way", [1], [2]) for which in ("first", "second", "third")]
    got = scorer.score_group(episode(0), plans)
    assert [r.outcome for r in got] == ["correct", "incorrect", "correct"]
    assert got[1].answer is None and got[1].reward == pytest.approx(0.05)  # the plan's format credit only
    assert got[0].reward == pytest.approx(1.0)


def test_the_batch_trainer_stops_between_questions_without_a_step() -> None:
    """close() while a batch's second question is sampled: no GRPO step, `LearningStopped`."""
    from mia.training.online.stopping import LearningStopped

    policy = FakePolicy()
    sampled: list[int] = []
    plain = policy.sample

    def sample(*args, should_stop=None, **kwargs):
        sampled.append(1)
        return plain(*args, **kwargs)

    policy.sample = sample
    cfg = OnlineConfig(rollouts=2)
    trainer = GRPOBatchTrainer(policy, RolloutScorer(FakeReact(["gold 0", "x"] * 4), cfg, None), cfg)
    with pytest.raises(LearningStopped):
        trainer.learn([episode(0), episode(1)], should_stop=lambda: len(sampled) >= 1)
    assert sampled == [1] and policy.groups is None


def test_undecided_rollouts_store_no_failure_lesson_and_credit_nothing(store, tmp_path) -> None:
    """Issue 38: a rollout whose reviewers split (unknown) is never stored as a negative memory and
    never moves the win rate of the memories the planner was shown."""
    from mia.memory import Trajectory

    seed = store.memorise(
        Trajectory(namespace="ttl", question="an old question?", plan="p", answer="a", outcome="correct")
    )
    loop = MemoryLoop(store, tmp_path / "online", consolidate_every=0)
    stored = loop.absorb(
        episode(3, namespace="ttl", used_memory_ids=[seed.id]),
        [rollout("split plan", "unknown"), rollout("also", "unknown")],
    )
    assert stored == {"positive": None, "negative": None, "pair": False}
    assert [m.outcome for m in store.list(namespace="ttl")] == ["correct"]
    again = store.get(seed.id)
    assert (again.usage_count, again.success_count) == (seed.usage_count, seed.success_count)


@pytest.mark.parametrize("style", ["hops", "paper"])
def test_the_learner_samples_the_plans_the_plan_node_asks_for(style) -> None:
    """The learner's prompt is the served planner's (its style, its word limit, the episode's
    memories) and a sampled plan ends where a served one does (the plan node's stop strings): the
    first Qwen test-time run sampled from a 40-word prompt at 48 tokens and cut most plans mid-step."""
    from mia.graph.prompts.builder import planner_messages
    from mia.graph.protocol import PLAN_STOP

    policy, cfg = FakePolicy(), OnlineConfig(rollouts=2)
    trainer = GRPOBatchTrainer(policy, RolloutScorer(FakeReact(["gold 0", "x"]), cfg, None), cfg, plan_style=style)
    ep = episode(0)
    ep.memories = "Workflow: search each name, then compare."
    trainer.learn([ep])
    [(messages, max_new_tokens, stop)] = policy.asked
    assert messages == planner_messages(ep.question, ep.memories, style=style)
    assert stop == tuple(PLAN_STOP) and max_new_tokens == cfg.plan_max_tokens == 128


def test_rollouts_get_the_served_executors_budget_unless_one_is_set() -> None:
    from mia.graph.context import Context
    from mia.training.config import BudgetConfig
    from mia.training.online.config import rollout_budget

    served = Context(max_tool_calls=4, search_top_k=5, executor_max_tokens=384)
    assert rollout_budget(OnlineConfig(), served) == BudgetConfig(
        max_tool_calls=4, max_turn_tokens=384, max_answer_tokens=384, search_top_k=5
    )
    tight = BudgetConfig(max_tool_calls=2, search_top_k=2)
    assert rollout_budget(OnlineConfig(budget=tight), served) is tight
