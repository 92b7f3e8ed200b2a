"""The learner's plans sampled on the served llama.cpp planner (training/online/sampling.py): plain
temperature sampling whatever the served model's own settings, from and in the learner's token
ids, the end token where a plan ended, and the choice of sampler."""

from __future__ import annotations

import pytest

from mia.training.online.config import OnlineConfig
from mia.training.online.policy import SampledPlan
from mia.training.online.sampling import ServedSampler, holds

MESSAGES = [
    {"role": "system", "content": "You write short numbered search plans."},
    {"role": "user", "content": "Plan the searches for: where was the director of Gang Of Four born?"},
]


class Tokenizer:
    """Token i writes the word "i"; 0 and 1 are end-of-generation tokens."""

    eos_token_id = 0
    all_special_ids = [0, 1]

    def decode(self, ids, skip_special_tokens=False):
        return " ".join(str(i) for i in ids if not (skip_special_tokens and i in self.all_special_ids))

    def __call__(self, text, add_special_tokens=False):
        return {"input_ids": [int(word) for word in text.split()]}


class Policy:
    tokenizer = Tokenizer()
    adapter_folder, unsaved = None, False  # the base weights, as served

    def prompt_ids(self, messages):
        return [7, 7, 7]

    def sample(self, messages, n, max_new_tokens, temperature, should_stop=None, stop=()):
        return [SampledPlan("own", [1], [2])] * n


class Served:
    """A llama.cpp chat model whose server records each request and replies (text, ids, finish)."""

    adapter_path = None

    def __init__(self, replies):
        self.replies, self.calls = list(replies), []
        self.backend = self

    def handle_completions(self, request):
        self.calls.append(request)
        text, ids, finish = self.replies.pop(0)
        return {"choices": [{"text": text, "finish_reason": finish, "logprobs": {"content": [{"id": i} for i in ids]}}]}


def test_plans_are_sampled_plainly_in_the_learners_ids() -> None:
    served = Served([("11 12", [11, 12, 5], "stop"), ("11 13", [11, 13, 1], "stop"), ("11 14", [11, 14], "length")])
    plans = ServedSampler(served, Policy(), concurrency=1)(MESSAGES, 3, 128, 1.0, stop=["\nQuestion:"])
    request = served.calls[0]
    assert request["prompt"] == [7, 7, 7]  # the learner's prompt ids: no template on the server's side
    assert (request["temperature"], request["top_p"], request["top_k"], request["min_p"]) == (1.0, 1.0, 0, 0.0)
    assert (request["max_tokens"], request["stop"], request["logprobs"]) == (128, ["\nQuestion:"], 1)
    assert [p.text for p in plans] == ["11 12", "11 13", "11 14"]
    # stopped at a stop string (its first token 5 left in the ids by llama.cpp, not in the text):
    # the end token is learned too
    assert plans[0].completion_ids == [11, 12, 0]
    assert plans[1].completion_ids == [11, 13, 0]  # ended by another end-of-generation token: the learner's
    assert plans[2].completion_ids == [11, 14]  # cut at max_tokens: no end token
    assert all(p.prompt_ids == [7, 7, 7] for p in plans)


def test_the_learner_samples_when_the_server_does_not_hold_its_weights(tmp_path) -> None:
    """A step not yet published, or another adapter served: sampling on the server would train on
    another policy's plans, so the learner's copy samples."""
    served, policy = Served([("11", [11], "stop")] * 2), Policy()
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
    learner's token ids (llama.cpp's own), ended by the end token, stopped where the plan node stops."""
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
    assert all(len(plan.completion_ids) == 40 for plan in plans if plan.completion_ids[-1] != eos)  # cut at 40


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
