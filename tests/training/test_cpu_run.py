"""Short real GRPO runs on CPU with the embedded SmolLM2-135M (tiny budgets, a few minutes).

They check what a user relies on: rewards are logged, the adapter is saved with its metadata,
reloads as `hf:<base>+<adapter>`, changes the planner's output, and a run resumes from its
checkpoint; the executor stage trains through our multi-turn rollout function.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mia.training.config import TrainConfig

pytestmark = pytest.mark.real_model
ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "training" / "configs" / "test-tiny.yaml"
HOTPOTQA = ROOT / "app" / "evaluation" / "datasets" / "hotpotqa.jsonl.gz"  # committed, same order as shared


def plan_length_reward(completions, **kwargs) -> list[float]:
    """Shaping for the test: F1 of a 135M model is often 0 for every sample of a group, and a
    group with equal rewards has no GRPO gradient. Shorter plans score higher, so the group's
    rewards always differ and the adapter must move."""
    texts = [c[-1]["content"] if isinstance(c, list) else c for c in completions]
    return [1.0 / (1.0 + len(t.split())) for t in texts]


@pytest.fixture(scope="module")
def tiny_cfg(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> TrainConfig:
    out = tmp_path_factory.mktemp("train")
    return TrainConfig.from_yaml(
        CONFIG,
        {
            "output_dir": str(out / "planner"),
            "data.path": str(HOTPOTQA),
            "data.limit": 1,
            "planner.memorise_rollouts": str(out / "memory"),
        },
    )


@pytest.fixture(scope="module")
def planner_run(tiny_cfg: TrainConfig):
    from mia.training.planner_stage import train_planner

    return train_planner(tiny_cfg, extra_reward_funcs=[plan_length_reward])


def test_planner_stage_logs_rewards_and_rollouts(planner_run) -> None:
    records = [json.loads(line) for line in planner_run.metrics_path.read_text().splitlines()]
    rewarded = [r for r in records if "reward" in r]
    assert [r["step"] for r in rewarded] == [1, 2]
    assert all("rewards/planner_reward/mean" in r and "episode/acc_final" in r for r in rewarded)
    rollouts = [
        json.loads(line) for line in (planner_run.metrics_path.parent / "rollouts.jsonl").read_text().splitlines()
    ]
    assert len(rollouts) == 4  # 2 steps x 2 generations, each carried out by the frozen executor
    assert all(0.0 <= r["reward"] <= 1.0 and r["plan"] for r in rollouts)
    assert planner_run.curve_path is not None and planner_run.curve_path.stat().st_size > 1000


def test_planner_rollouts_become_memories_on_the_real_model(planner_run, tiny_cfg: TrainConfig) -> None:
    from mia.memory import MemoryStore

    with MemoryStore.open(tiny_cfg.planner.memorise_rollouts, read_only=True, snapshot=True) as store:
        logged = list(store.trajectory_log.read())
        kept = store.list()
    assert logged and all(t.source == "offline-rollout" and t.plan for t in logged)
    assert 1 <= len(kept) <= 2 * 2  # per question and step: the best right and one wrong rollout at most


def test_adapter_saved_with_metadata_and_changes_the_planner(planner_run, tiny_cfg: TrainConfig) -> None:
    import torch
    from peft import PeftModel

    from mia.training.artifacts import read_adapter_meta
    from mia.training.policy import load_model, load_tokenizer
    from mia.training.prompts import planner_messages

    adapter = planner_run.adapter_dir
    assert (adapter / "adapter_model.safetensors").is_file()
    meta = read_adapter_meta(adapter)
    assert meta["steps"] == 2 and meta["stage"] == "planner" and meta["spec"] == planner_run.spec
    assert Path(meta["base_model"]) == planner_run.base_model and meta["reward"] is not None

    tok = load_tokenizer(planner_run.base_model)
    ids = tok.apply_chat_template(
        planner_messages("Who wrote the opera Maria Golovin?"),
        add_generation_prompt=True,
        return_tensors="pt",
        return_dict=True,
    )
    base = load_model(planner_run.base_model)
    with torch.no_grad():
        before = base(**ids).logits[0, -1]
    tuned = PeftModel.from_pretrained(base, str(adapter))
    with torch.no_grad():
        after = tuned(**ids).logits[0, -1]
    assert (after - before).abs().max().item() > 1e-4


def test_adapter_loads_through_the_model_spec(planner_run) -> None:
    from mia.graph.models import load_chat_model

    model = load_chat_model(planner_run.spec, temperature=0.0, max_tokens=8)
    reply = model.invoke("Write a one-step plan: find the capital of France.")
    assert isinstance(reply.content, str)


def test_planner_run_resumes_from_its_checkpoint(planner_run, tiny_cfg: TrainConfig) -> None:
    """A rerun picks up checkpoint-2 (optimizer, scheduler, step) instead of starting over: with
    the same max_steps nothing is redone, no new rollout is played, and the adapter is rewritten."""
    from mia.training.planner_stage import train_planner
    from mia.training.trainer_setup import latest_checkpoint

    out = Path(tiny_cfg.output_dir)
    assert latest_checkpoint(out).name == "checkpoint-2"
    rollouts = out / "rollouts.jsonl"
    before = rollouts.read_text()
    again = train_planner(tiny_cfg, extra_reward_funcs=[plan_length_reward])
    assert again.steps == 2 and rollouts.read_text() == before
    steps = [
        json.loads(line)["step"] for line in again.metrics_path.read_text().splitlines() if "reward" in json.loads(line)
    ]
    assert steps == [1, 2]


@pytest.mark.parametrize("sample_on", ["served", "learner"])
def test_executor_stage_trains_multi_turn_tool_use(tiny_cfg: TrainConfig, tmp_path: Path, sample_on: str) -> None:
    """Episodes played by llama.cpp with the step's LoRA (the default for an embedded base) or by
    the torch copy the trainer steps: either way a step trains on multi-turn tool use."""
    import dataclasses

    from mia.training.executor_stage import train_executor

    cfg = dataclasses.replace(tiny_cfg, executor=dataclasses.replace(tiny_cfg.executor, sample_on=sample_on))
    result = train_executor(cfg, max_steps=1, output_dir=tmp_path / "executor")
    assert result.steps == 1 and (result.adapter_dir / "adapter_model.safetensors").is_file()
    rollouts = [json.loads(line) for line in (tmp_path / "executor" / "rollouts.jsonl").read_text().splitlines()]
    assert len(rollouts) == 2 and all(r["turns"] for r in rollouts)
    plans = (tmp_path / "executor" / "plans.jsonl").read_text().splitlines()
    assert len(plans) == 1  # the frozen planner's plan, cached for resumption
    served = list((tmp_path / "executor" / "served-adapter").glob("adapter.*.gguf"))
    assert len(served) == (sample_on == "served")  # the step's LoRA, converted for llama.cpp


def test_the_planner_stage_samples_in_torch_when_asked(tiny_cfg: TrainConfig, tmp_path: Path) -> None:
    """`planner.sample_on: learner`: TRL's own generation with the torch copy, no served LoRA."""
    import dataclasses

    from mia.training.planner_stage import train_planner

    cfg = dataclasses.replace(tiny_cfg, planner=dataclasses.replace(tiny_cfg.planner, sample_on="learner"))
    result = train_planner(cfg, max_steps=1, output_dir=tmp_path / "planner", extra_reward_funcs=[plan_length_reward])
    assert result.steps == 1 and (result.adapter_dir / "adapter_model.safetensors").is_file()
    assert not (tmp_path / "planner" / "served-adapter").exists()


def test_the_planner_stage_samples_on_llamacpp_by_default(planner_run, tiny_cfg: TrainConfig) -> None:
    """An embedded base: the plans of each step were sampled by llama.cpp with that step's LoRA."""
    served = Path(tiny_cfg.output_dir) / "served-adapter"
    assert (served / "adapter_model.safetensors").is_file() and list(served.glob("adapter.*.gguf"))


def test_the_planner_stage_on_the_graph_reflects_with_the_served_policy(tiny_cfg: TrainConfig, tmp_path: Path) -> None:
    """The graph backend with reflection on (max_replans 1, as served): the plans and the planner's
    reflection come from the llama.cpp server holding the step's LoRA; every episode ran."""
    import dataclasses

    from mia.training.planner_stage import train_planner

    planner = dataclasses.replace(
        tiny_cfg.planner, episode_backend="graph", executor_model="llamacpp:smollm2", max_replans=1
    )
    cfg = dataclasses.replace(tiny_cfg, planner=dataclasses.replace(planner, memorise_rollouts=None))
    out = tmp_path / "planner-graph"
    result = train_planner(cfg, max_steps=1, output_dir=out, extra_reward_funcs=[plan_length_reward])
    assert result.steps == 1
    rollouts = [json.loads(line) for line in (out / "rollouts.jsonl").read_text().splitlines()]
    assert len(rollouts) == 2 and all(r["error"] is None for r in rollouts)
    assert list((out / "served-adapter").glob("adapter.*.gguf"))
