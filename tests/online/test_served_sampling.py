"""The learner's plans sampled on the served llama.cpp planner (training/online/sampling.py): plain
temperature sampling whatever the served model's own settings, the learner's token ids, the end
token where a plan ended, and the choice of sampler."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage

from mia.training.online.config import OnlineConfig
from mia.training.online.policy import SampledPlan
from mia.training.online.sampling import ServedSampler, holds

MESSAGES = [
    {"role": "system", "content": "You write short numbered search plans."},
    {"role": "user", "content": "Plan the searches for: where was the director of Gang Of Four born?"},
]


class Tokenizer:
    eos_token_id = 0

    def __call__(self, text, add_special_tokens=False):
        return {"input_ids": [len(word) for word in text.split()]}


class Policy:
    tokenizer = Tokenizer()
    adapter_folder, unsaved = None, False  # the base weights, as served

    def prompt_ids(self, messages):
        return [7, 7, 7]

    def sample(self, messages, n, max_new_tokens, temperature, should_stop=None, stop=()):
        return [SampledPlan("own", [1], [2])] * n


class Served:
    """A chat model that records each call's sampling settings."""

    adapter_path = None

    def __init__(self, replies):
        self.replies, self.calls = list(replies), []

    def invoke(self, messages, **kwargs):
        self.calls.append(kwargs)
        text, finish = self.replies.pop(0)
        return AIMessage(content=text, response_metadata={"finish_reason": finish})


def test_plans_are_sampled_plainly_and_tokenised_by_the_learner() -> None:
    served = Served([("1. Search abc", "stop"), ("1. Search a long plan cut", "length")])
    plans = ServedSampler(served, Policy(), concurrency=1)(MESSAGES, 2, 128, 1.0, stop=["\nQuestion:"])
    assert (
        served.calls
        == [{"temperature": 1.0, "top_p": 1.0, "presence_penalty": 0.0, "max_tokens": 128, "stop": ["\nQuestion:"]}] * 2
    )
    assert [p.text for p in plans] == ["1. Search abc", "1. Search a long plan cut"]
    assert plans[0].completion_ids == [2, 6, 3, 0]  # ended: the end token is learned too
    assert plans[1].completion_ids == [2, 6, 1, 4, 4, 3]  # cut at max_tokens: no end token
    assert all(p.prompt_ids == [7, 7, 7] for p in plans)


def test_the_learner_samples_when_the_server_does_not_hold_its_weights(tmp_path) -> None:
    """A step not yet published, or another adapter served: sampling on the server would train on
    another policy's plans, so the learner's copy samples."""
    served, policy = Served([("1. Search abc", "stop")] * 2), Policy()
    assert holds(served, policy)
    policy.unsaved = True  # a step whose publication failed
    assert not holds(served, policy)
    assert [p.text for p in ServedSampler(served, policy)(MESSAGES, 2, 128, 1.0)] == ["own", "own"]
    assert served.calls == []
    version = tmp_path / "v0001"
    policy.adapter_folder, policy.unsaved = version, False
    assert not holds(served, policy)  # the server still serves the base
    served.adapter_path = str(version / "adapter.0123456789abcdef.gguf")  # set_adapter(v0001)
    assert holds(served, policy)
    served.adapter_path = str(tmp_path / "v0000" / "adapter.0123456789abcdef.gguf")
    assert not holds(served, policy)


def test_who_samples() -> None:
    from mia.training.online.session import plan_sampler

    assert plan_sampler(OnlineConfig(sample_on="learner"), object(), Policy()) is None
    assert plan_sampler(OnlineConfig(), object(), Policy()) is None  # auto: not a llama.cpp planner
    with pytest.raises(ValueError, match="sample_on='served' needs a planner served by llama.cpp"):
        plan_sampler(OnlineConfig(sample_on="served"), object(), Policy())
    with pytest.raises(ValueError, match="sample_on"):
        OnlineConfig(sample_on="gpu")


@pytest.mark.real_model
def test_the_served_smollm2_samples_plans_in_the_learners_tokens(data_dir) -> None:
    """llama.cpp serves the GGUF of the weights the learner trains: its samples become the
    learner's token ids, ended by the end token, stopped where the plan node stops."""
    from transformers import AutoTokenizer

    from mia.graph.models import load_chat_model
    from mia.training.online.session import plan_sampler
    from mia.training.policy import resolve_weights

    served = load_chat_model("llamacpp:smollm2", temperature=0.0, max_tokens=24, n_threads=1)
    base, _ = resolve_weights("local:smollm2")

    class Learner:
        tokenizer = AutoTokenizer.from_pretrained(str(base))
        adapter_folder, unsaved = None, False

        def prompt_ids(self, messages):
            text = self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
            return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    sampler = plan_sampler(OnlineConfig(), served, Learner())  # auto: llama.cpp serves the planner
    assert isinstance(sampler, ServedSampler)
    plans = sampler(MESSAGES, 4, 40, 1.0, stop=["."])
    assert len({p.text for p in plans}) > 1  # sampled at temperature 1, not the served greedy decode
    for plan in plans:
        assert "." not in plan.text and plan.prompt_ids == Learner().prompt_ids(MESSAGES)
        assert Learner.tokenizer.decode(plan.completion_ids, skip_special_tokens=True).strip() == plan.text
    eos = Learner.tokenizer.eos_token_id
    assert any(plan.completion_ids[-1] == eos for plan in plans)  # ended at the stop string
    # one without the end token was cut at the 40 new tokens (re-tokenised, a few tokens either way)
    assert all(len(plan.completion_ids) > 30 for plan in plans if plan.completion_ids[-1] != eos)


@pytest.mark.real_model
def test_the_default_learner_samples_on_its_served_llamacpp_planner(data_dir, tmp_path) -> None:
    """The trainer a session builds for a llama.cpp planner and executor (the embedded default)
    samples on the served planner; `sample_on="learner"` keeps the learner's own copy."""
    from mia import Context
    from mia.graph.models import load_chat_model
    from mia.training.online.session import build_grpo_trainer

    context = Context(planner_model="llamacpp:smollm2", executor_model="llamacpp:smollm2")
    served = load_chat_model("llamacpp:smollm2", temperature=0.0, max_tokens=24, n_threads=1)
    trainer = build_grpo_trainer(context, OnlineConfig(), None, served=served)
    assert isinstance(trainer.sampler, ServedSampler) and trainer.sampler.served is served
    own = build_grpo_trainer(context, OnlineConfig(sample_on="learner"), None, served=served)
    assert own.sampler == own.policy.sample
    # a published version is what the server holds once it serves that folder (converted to a GGUF LoRA)
    assert holds(served, trainer.policy)
    version = trainer.policy.save(tmp_path / "v0001")
    assert not holds(served, trainer.policy)
    served.set_adapter(version)
    assert holds(served, trainer.policy)
