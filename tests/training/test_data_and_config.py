"""Datasets from QA files and from the memory's trajectory log; the YAML config; the artifacts."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from mia.training.artifacts import plot_reward_curve, read_adapter_meta, read_metrics, reward_series, write_adapter_meta
from mia.training.config import TrainConfig
from mia.training.data import QAExample, executor_rows, load_qa_jsonl, planner_rows, to_dataset

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "training" / "configs"

RECORDS = [
    {
        "id": "a1",
        "question": "Which magazine was started first, Arthur's Magazine or First for Women?",
        "answer": "Arthur's Magazine",
        "answer_aliases": ["Arthurs Magazine"],
        "paragraphs": [
            {"title": "Arthur's Magazine", "text": "Arthur's Magazine (1844-1846) was a periodical."},
            {"title": "First for Women", "text": "First for Women is a magazine started in 1989."},
        ],
    },
    {
        "id": "a2",
        "question": "Who wrote Maria Golovin?",
        "answer": "Gian Carlo Menotti",
        "answer_aliases": [],
        "paragraphs": [{"title": "Maria Golovin", "text": "Maria Golovin is an opera by Gian Carlo Menotti."}],
    },
    {"id": "a3", "question": "Q3?", "answer": "x", "paragraphs": []},
]


def _write(path: Path, records: list[dict], gz: bool = False) -> Path:
    text = "".join(json.dumps(r) + "\n" for r in records)
    if gz:
        with gzip.open(path, "wt", encoding="utf-8") as fh:
            fh.write(text)
    else:
        path.write_text(text + "\n")  # a trailing blank line is tolerated
    return path


@pytest.mark.parametrize("gz", [False, True])
def test_load_qa_jsonl_slices_and_aliases(tmp_path: Path, gz: bool) -> None:
    path = _write(tmp_path / ("qa.jsonl.gz" if gz else "qa.jsonl"), RECORDS, gz)
    examples = load_qa_jsonl(path)
    assert [e.id for e in examples] == ["a1", "a2", "a3"]
    assert examples[0].gold_answers == ["Arthur's Magazine", "Arthurs Magazine"]
    assert [e.id for e in load_qa_jsonl(path, offset=1, limit=1)] == ["a2"]  # held-out slicing


@pytest.mark.parametrize("dataset", ["hotpotqa", "2wiki"])
def test_a_seeded_training_slice_never_meets_the_questions_mia_eval_scores_or_warms_up_on(dataset: str) -> None:
    """`data.seed` slices `mia eval --seed`'s own order: training on positions 100-399 leaves out the
    100 questions `--n 100` scores and the 50 `--warmup 50` answers. In file order the same count of
    training questions overlaps the scored ones (what unseen-question results must not have)."""
    from mia.app.evaluation.datasets import DATASETS, HERE, load_examples
    from mia.app.evaluation.harness import EvalConfig, warmup_split

    path = HERE / DATASETS[dataset].file
    scored, _ = load_examples(dataset, 100, seed=0)
    warm = warmup_split(EvalConfig(dataset=dataset, n=100, seed=0, warmup=50), scored)
    held_out = {e.id for e in scored} | {e.id for e in warm}
    assert len(held_out) == 150

    train = load_qa_jsonl(path, offset=100, limit=300, seed=0)
    assert len(train) == 300 and not {e.id for e in train} & held_out
    assert [e.id for e in load_qa_jsonl(path, limit=100, seed=0)] == [e.id for e in scored]  # the same order
    assert {e.id for e in load_qa_jsonl(path, limit=300)} & held_out  # file order: the leak this prevents


@pytest.mark.parametrize("name", ["cpu-smollm2.yaml", "cpu-qwen.yaml", "cpu-qwen-2wiki.yaml", "gpu-qwen.yaml"])
def test_committed_configs_train_on_questions_evaluation_never_scores(name: str) -> None:
    """Each run config's training slice misses the questions `mia eval --n 100 --warmup 50` scores
    and warms up on, and its held-out slice (`mia train eval`) misses the training slice."""
    from mia.app.evaluation.datasets import DATASETS, load_examples
    from mia.app.evaluation.harness import EvalConfig, warmup_split
    from mia.training.data import load_eval_examples, load_training_examples

    cfg = TrainConfig.from_yaml(CONFIGS / name, {"data.memory_dir": None})
    dataset = next(d for d, info in DATASETS.items() if cfg.data.path.endswith(info.file))
    scored, _ = load_examples(dataset, 100, seed=0)
    held_out = {e.id for e in scored + warmup_split(EvalConfig(dataset=dataset, n=100, warmup=50), scored)}
    train = {e.id for e in load_training_examples(cfg)}
    assert train and not train & held_out
    assert not train & {e.id for e in load_eval_examples(cfg)}


def test_memory_dir_fills_prompts_from_an_existing_store_and_refuses_an_empty_one(tmp_path: Path) -> None:
    """A real MiniLM store: its memories reach the planner prompt (read from a snapshot, see
    tests/memory/test_import_robustness.py). The store's parent folder, or a namespace without
    memories, is a clear error instead of an empty store silently created there and "none found"
    in every prompt."""
    from mia.memory import MemoryStore
    from mia.memory.trajectory import Trajectory, TrajectoryStep
    from mia.training.data import load_training_examples

    folder = tmp_path / "run" / "store" / "memory"
    steps = [
        TrajectoryStep(kind="tool_call", tool="search", args={"query_list": ["Arthur's Magazine founded"]}),
        TrajectoryStep(kind="observation", content="Arthur's Magazine (1844-1846) was a periodical."),
        TrajectoryStep(kind="answer", content="Arthur's Magazine"),
    ]
    with MemoryStore.open(folder) as store:
        store.memorise(
            Trajectory(
                question="Which magazine came first, Arthur's Magazine or Godey's?",
                namespace="warm",
                plan="1. Find both founding years.",
                steps=steps,
                answer="Arthur's Magazine",
                outcome="correct",
                gold_answers=["Arthur's Magazine"],
            )
        )
    qa = _write(tmp_path / "qa.jsonl", RECORDS)

    def config(memory_dir: Path, namespace: str = "warm") -> TrainConfig:
        cfg_file = tmp_path / "c.yaml"
        cfg_file.write_text(
            f"name: t\ndata: {{path: {qa}, limit: 1, memory_dir: {memory_dir}, namespace: {namespace}}}\n"
        )
        return TrainConfig.from_yaml(cfg_file)

    [ex] = load_training_examples(config(folder))
    # shown as the graph shows it (Context.memory_style "strategy"): the other question's names are placeholders
    assert "Successful strategies (1)" in ex.memories and "Which magazine came first, [A] or [B]?" in ex.memories
    with pytest.raises(FileNotFoundError, match="no chroma/ folder"):
        load_training_examples(config(folder.parent))
    assert not (folder.parent / "chroma").exists()
    with pytest.raises(ValueError, match="no memories in namespace 'other'.*warm"):
        load_training_examples(config(folder, "other"))


def test_load_qa_jsonl_errors_name_the_problem(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        load_qa_jsonl(tmp_path / "missing.jsonl")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "q", "answer": "a"}\nnot json\n')
    with pytest.raises(ValueError, match="bad.jsonl:2"):
        load_qa_jsonl(bad)
    empty_gold = _write(tmp_path / "e.jsonl", [{"question": "q", "answer": ""}])
    with pytest.raises(ValueError, match="no gold answer"):
        load_qa_jsonl(empty_gold)
    with pytest.raises(ValueError, match="no examples"):
        load_qa_jsonl(_write(tmp_path / "ok.jsonl", RECORDS), offset=10)


def test_rows_use_the_graph_prompts_and_carry_reward_columns(tmp_path: Path) -> None:
    examples = load_qa_jsonl(_write(tmp_path / "qa.jsonl", RECORDS), limit=2)
    rows = planner_rows(examples, max_words=50)
    system, user = rows[0]["prompt"]
    from mia.graph.prompts import load_prompts

    assert system == {"role": "system", "content": load_prompts("planner")["system"].strip()}
    assert examples[0].question in user["content"] and "50 words" in user["content"]
    assert rows[0]["gold_answers"] == examples[0].gold_answers and rows[0]["paragraphs"][0]["title"]
    ex_rows = executor_rows(examples, ["1. Search A.", "1. Search B."])
    assert "1. Search A." in ex_rows[0]["prompt"][1]["content"] and "<tool_call>" in ex_rows[0]["prompt"][0]["content"]
    with pytest.raises(ValueError, match="plans"):
        executor_rows(examples, ["only one"])
    ds = to_dataset(rows)
    assert ds.column_names[:2] == ["prompt", "qid"] and len(ds) == 2


def test_shared_hotpotqa_file_loads(shared_data: Path) -> None:
    examples = load_qa_jsonl(shared_data / "hotpotqa" / "hotpotqa_dev_distractor.jsonl", limit=5)
    assert len(examples) == 5 and all(len(e.paragraphs) >= 2 for e in examples)


def test_trajectory_log_becomes_training_data(tmp_path: Path) -> None:
    from mia.memory.trajectory import Trajectory, TrajectoryStep
    from mia.memory.trajectory_log import TrajectoryLog

    from mia.training.trajectory_data import (
        correct_plan_rows,
        examples_from_trajectory_log,
        plan_preference_pairs,
        read_trajectories,
    )

    q = "Who wrote Maria Golovin?"
    steps = [
        TrajectoryStep(kind="tool_call", content="search", tool="search", args={"query_list": ["Maria Golovin"]}),
        TrajectoryStep(kind="observation", content="Maria Golovin is an opera by Gian Carlo Menotti."),
        TrajectoryStep(kind="answer", content="Gian Carlo Menotti"),
    ]
    log = TrajectoryLog(tmp_path / "trajectories.jsonl")
    log.append(
        Trajectory(
            question=q,
            plan="1. Search the opera.",
            steps=steps,
            answer="Gian Carlo Menotti",
            outcome="correct",
            gold_answers=["Gian Carlo Menotti"],
        )
    )
    log.append(
        Trajectory(
            question=q,
            plan="1. Guess.",
            steps=steps[:2],
            answer="Puccini",
            outcome="incorrect",
            gold_answers=["Gian Carlo Menotti"],
        )
    )
    log.append(Trajectory(question="No ground truth?", plan="1. x", steps=steps, answer="42", outcome="correct"))
    log.append(Trajectory(question="Unjudged?", plan="1. x", steps=steps, answer="y", outcome="unknown"))
    with (tmp_path / "trajectories.jsonl").open("a") as fh:
        fh.write('{"torn line')  # a crashed writer: skipped, not fatal

    examples = examples_from_trajectory_log(tmp_path)
    assert [e.question for e in examples] == [q, "No ground truth?"]
    assert examples[0].gold_answers == ["Gian Carlo Menotti"]
    assert examples[1].gold_answers == ["42"]  # the judged-correct answer stands in for ground truth
    assert "Menotti" in examples[0].paragraphs[0]["text"]  # the sandbox is what the agent read
    pairs = plan_preference_pairs(read_trajectories(tmp_path))
    assert len(pairs) == 1 and pairs[0]["chosen"] == "1. Search the opera." and pairs[0]["rejected"] == "1. Guess."
    rows = correct_plan_rows(read_trajectories(tmp_path / "trajectories.jsonl"))
    assert rows[0]["messages"][-1] == {"role": "assistant", "content": "1. Search the opera."}
    with pytest.raises(FileNotFoundError):
        read_trajectories(tmp_path / "nope.jsonl")


@pytest.mark.parametrize("name", sorted(p.name for p in CONFIGS.glob("*.yaml")))
def test_committed_configs_load(name: str) -> None:
    from mia.graph.models.spec import parse_model_spec

    cfg = TrainConfig.from_yaml(CONFIGS / name)
    assert cfg.lora.r > 0
    # every model it names is a spec a run can load, and the policy has weights to train
    assert parse_model_spec(cfg.base_model).trainable
    for spec in (cfg.planner.executor_model, cfg.executor.planner_model):
        parse_model_spec(spec)
    if cfg.sft.episodes and not cfg.grpo:  # an SFT-only config: TRL's SFTConfig must accept its trainer keys
        import tempfile

        with tempfile.TemporaryDirectory() as out:  # (checked as on a CPU: TRL refuses bf16 without a GPU)
            cpu = TrainConfig.from_yaml(CONFIGS / name, {"device": "cpu", "dtype": "float32"})
            assert cpu.sft_args(Path(out)).completion_only_loss is True
    else:
        assert cfg.grpo["num_generations"] >= 2


def test_every_documented_config_is_committed() -> None:
    assert {"cpu-smollm2.yaml", "cpu-qwen.yaml", "gpu-qwen.yaml", "test-tiny.yaml"} <= {
        p.name for p in CONFIGS.glob("*.yaml")
    }


def test_config_overrides_typos_and_cpu_defaults(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("name: t\ndevice: cpu\ngrpo: {max_steps: 3, num_generations: 2}\nreward: {planner: {final: 0.5}}\n")
    cfg = TrainConfig.from_yaml(path, {"grpo.learning_rate": 1e-3, "budget.max_tool_calls": 1})
    assert cfg.reward.planner.final == 0.5 and cfg.reward.planner.first == 0.2
    assert cfg.budget.max_tool_calls == 1
    args = cfg.grpo_args(tmp_path / "out")
    assert args.learning_rate == 1e-3 and args.max_steps == 3 and args.num_generations == 2
    assert args.bf16 is False and args.gradient_checkpointing is False and args.use_cpu is True
    assert args.beta == 0.0
    path.write_text("name: t\nbudgte: {max_tool_calls: 1}\n")
    with pytest.raises(ValueError, match="budgte"):
        TrainConfig.from_yaml(path)


def test_metrics_curve_and_adapter_metadata(tmp_path: Path) -> None:
    metrics = tmp_path / "metrics.jsonl"
    metrics.write_text(
        "".join(json.dumps({"stage": "planner", "step": s, "reward": 0.1 * s}) + "\n" for s in range(1, 8)) + '{"torn'
    )
    records = read_metrics(metrics)
    assert reward_series(records, "planner") == (list(range(1, 8)), [pytest.approx(0.1 * s) for s in range(1, 8)])
    png = plot_reward_curve(records, tmp_path / "curve.png")
    assert png is not None and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert plot_reward_curve([], tmp_path / "none.png") is None
    write_adapter_meta(tmp_path, base_model="/models/base", stage="planner", steps=7, reward=0.7)
    meta = read_adapter_meta(tmp_path)
    assert meta["spec"] == f"hf:/models/base+{tmp_path.resolve()}" and meta["steps"] == 7
    # an adapter trained on an embedded model is served the way the defaults are: by llama.cpp
    write_adapter_meta(
        tmp_path, base_model="/data/qwen-coder-1.5b-hf", base_spec="local:qwen-coder-1.5b", stage="planner", steps=3
    )
    assert read_adapter_meta(tmp_path)["spec"] == f"llamacpp:qwen-coder-1.5b+{tmp_path.resolve()}"
    with pytest.raises(FileNotFoundError, match="mia train"):
        read_adapter_meta(tmp_path / "elsewhere")


def test_qa_example_row_keeps_title_and_text_only() -> None:
    ex = QAExample("i", "q", ["a"], [{"title": "T", "text": "x", "sentences": ["x"]}])
    assert ex.row()["paragraphs"] == [{"title": "T", "text": "x"}]


def test_yaml_is_validated_by_pydantic_with_the_key_path(tmp_path: Path) -> None:
    """A typo'd or mistyped key fails at load, naming its path and the keys that section knows."""
    path = tmp_path / "typo.yaml"
    path.write_text("name: t\nplanner: {exectuor_model: 'local:smollm2'}\n")
    with pytest.raises(ValueError) as info:
        TrainConfig.from_yaml(path)
    message = str(info.value)
    assert "config.planner.exectuor_model: unknown key" in message and "executor_model" in message
    assert "\n" not in message  # one line, no pydantic boilerplate
    path.write_text("reward: {planner: {finall: 0.5}}\n")
    with pytest.raises(ValueError, match=r"config\.reward\.planner\.finall: unknown key \(known: final"):
        TrainConfig.from_yaml(path)
    path.write_text("budget: {max_tool_calls: many}\nplanner: {episode_backend: remote}\n")
    with pytest.raises(ValueError) as info:
        TrainConfig.from_yaml(path)
    assert "config.budget.max_tool_calls: Input should be a valid integer" in str(info.value)
    assert "config.planner.episode_backend: Input should be 'local' or 'graph'" in str(info.value)


def test_training_reads_only_the_chosen_namespace(tmp_path: Path) -> None:
    """Defect 12.6: `data.namespace` selects the trajectories training learns from."""
    from mia.memory.trajectory import Trajectory, TrajectoryStep
    from mia.memory.trajectory_log import TrajectoryLog

    from mia.training.data import load_training_examples

    steps = [
        TrajectoryStep(kind="observation", content="Paris is the capital of France."),
        TrajectoryStep(kind="answer", content="Paris"),
    ]
    log = TrajectoryLog(tmp_path / "trajectories.jsonl")
    for ns, question in (("alice", "Alice's question?"), ("bob", "Bob's private question?")):
        log.append(
            Trajectory(
                question=question,
                plan="1. x",
                steps=steps,
                answer="Paris",
                outcome="correct",
                gold_answers=["Paris"],
                namespace=ns,
            )
        )
    cfg = TrainConfig.from_dict({"data": {"trajectories": str(tmp_path), "namespace": "alice"}})
    assert [e.question for e in load_training_examples(cfg)] == ["Alice's question?"]


def test_resolve_weights_keeps_the_adapter_of_an_embedded_spec(tmp_path: Path, monkeypatch) -> None:
    """`llamacpp:<embedded>+<adapter>` (what a finished stage prints) trains and freezes with its
    adapter: the adapter used to be dropped, so an alternate run's planner stage faced the base
    executor instead of the trained one."""
    import mia.graph.models.convert as convert
    from mia.training.policy import resolve_weights

    base = tmp_path / "smollm2-hf"
    base.mkdir()
    monkeypatch.setattr(convert, "ensure_converted", lambda name: base)
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text("{}")
    (adapter / "adapter_model.safetensors").write_bytes(b"x")
    assert resolve_weights(f"llamacpp:smollm2+{adapter}") == (base.resolve(), adapter.resolve())
    assert resolve_weights("local:smollm2") == (base.resolve(), None)
