"""QA sets -> GRPO datasets for the planner and the executor stages.

Reads the normalised QA JSONL (one `{id, question, answer, answer_aliases, paragraphs}` per line,
plain or gzipped) from a path, so training does not depend on the app's committed copies. The
planner prompt holds the question plus the memories a MemoryStore retrieves for it (when one is
given), exactly as the graph's planner node would show them.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, TextIO

from mia.training.examples import QAExample
from mia.training.prompts import executor_messages, planner_messages, render_memories
from mia.training.splits import seeded_order
from mia.training.trajectory_data import examples_from_trajectory_log


def open_text(path: Path) -> TextIO:
    """A JSONL file as text, gzipped (`.gz`) or plain."""
    return gzip.open(path, "rt", encoding="utf-8") if path.suffix == ".gz" else open(path, encoding="utf-8")


def parse_qa_record(obj: dict[str, Any], line_no: int = 0) -> QAExample:
    """One normalised QA record -> QAExample; a clear error names the line when a field is missing."""
    try:
        question = str(obj["question"]).strip()
        golds = [obj["answer"]] if isinstance(obj.get("answer"), str) else list(obj.get("answer") or [])
    except (KeyError, TypeError) as exc:
        raise ValueError(f"QA record on line {line_no} lacks 'question'/'answer': {exc}") from None
    golds += [a for a in obj.get("answer_aliases") or [] if isinstance(a, str)]
    golds = list(dict.fromkeys(g.strip() for g in golds if isinstance(g, str) and g.strip()))
    if not question or not golds:
        raise ValueError(f"QA record on line {line_no} has an empty question or no gold answer")
    paragraphs = [
        {"title": str(p.get("title") or ""), "text": str(p["text"])}
        for p in obj.get("paragraphs") or []
        if isinstance(p, dict) and isinstance(p.get("text"), str) and p["text"].strip()
    ]
    return QAExample(
        id=str(obj.get("id") or f"q{line_no}"), question=question, gold_answers=golds, paragraphs=paragraphs
    )


def load_qa_jsonl(
    path: str | Path, offset: int = 0, limit: int | None = None, seed: int | None = None
) -> list[QAExample]:
    """Examples `offset .. offset+limit` of a QA JSONL file, in the file's order or (with `seed`) in
    the seeded order `mia eval --seed` uses; either is deterministic, so a held-out slice after the
    training slice is never seen in training."""
    path = Path(path).expanduser()
    if path.is_dir():
        found = sorted(path.glob("*.jsonl")) + sorted(path.glob("*.jsonl.gz"))
        if not found:
            raise FileNotFoundError(f"no *.jsonl or *.jsonl.gz file in {path}")
        path = found[0]
    if not path.is_file():
        raise FileNotFoundError(f"QA file not found: {path}")
    with open_text(path) as fh:
        lines = [(line_no, line) for line_no, line in enumerate(fh, 1) if line.strip()]
    if seed is not None:
        lines = seeded_order(lines, seed)
    end = None if limit is None else offset + limit
    out: list[QAExample] = []
    for line_no, line in lines[offset:end]:
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}:{line_no}: not JSON ({exc.msg})") from None
        out.append(parse_qa_record(obj, line_no))
    if not out:
        raise ValueError(f"no examples in {path} at offset {offset}")
    return out


def attach_memories(
    examples: Iterable[QAExample], store: Any, namespace: str = "default", k_pos: int = 2, k_neg: int = 2
) -> list[QAExample]:
    """Fill each example's `memories` from a MemoryStore, as the planner node would retrieve them."""
    out = []
    for ex in examples:
        got = store.retrieve(ex.question, namespace=namespace, k_pos=k_pos, k_neg=k_neg)
        ex.memories = render_memories(got)
        out.append(ex)
    return out


def planner_rows(examples: Sequence[QAExample], max_words: int | None = None) -> list[dict[str, Any]]:
    """Rows of the planner stage: the planner prompt (conversational) plus the reward columns."""
    return [{"prompt": planner_messages(ex.question, ex.memories, max_words=max_words), **ex.row()} for ex in examples]


def executor_rows(examples: Sequence[QAExample], plans: Sequence[str]) -> list[dict[str, Any]]:
    """Rows of the executor stage: the executor prompt for (question, frozen planner's plan)."""
    if len(plans) != len(examples):
        raise ValueError(f"{len(plans)} plans for {len(examples)} examples")
    return [
        {"prompt": executor_messages(ex.question, plan), "plan": plan, **ex.row()}
        for ex, plan in zip(examples, plans, strict=True)
    ]


def to_dataset(rows: list[dict[str, Any]]):
    """A `datasets.Dataset` (imported here: datasets pulls in pyarrow)."""
    from datasets import Dataset

    if not rows:
        raise ValueError("cannot train on an empty dataset")
    return Dataset.from_list(rows)


def load_training_examples(cfg: Any) -> list[QAExample]:
    """The questions of a run: the QA slice, plus (or only) questions from the memory's trajectory
    log, with memories retrieved from a MemoryStore when `data.memory_dir` is set."""
    data = cfg.data
    examples: list[QAExample] = []
    if data.path:
        examples += load_qa_jsonl(data.path, offset=data.offset, limit=data.limit, seed=data.seed)
    if data.trajectories:
        # only the chosen namespace's questions: another namespace's log is another user's data
        examples += examples_from_trajectory_log(
            data.trajectories, only_correct=data.trajectories_only_correct, namespace=data.namespace
        )
    if not examples:
        raise ValueError("no training questions: set data.path and/or data.trajectories in the config")
    if data.memory_dir:
        examples = _with_memories(examples, Path(data.memory_dir).expanduser(), data)
    return examples


def _with_memories(examples: list[QAExample], folder: Path, data: Any) -> list[QAExample]:
    """Memories from an existing store, read from a private copy: the folder is left byte for byte
    as it was (it may be a committed store) and no lock is taken. A folder that holds no store, or a
    namespace with no memories, is an error: opening it would create an empty store and train every
    plan on "none found", which is not the prompt the served planner sees."""
    from mia.memory import MemoryStore

    if not (folder / "chroma").is_dir():
        raise FileNotFoundError(
            f"data.memory_dir {folder} holds no memory store (no chroma/ folder in it): "
            "give the store's folder, e.g. an evaluation run's RUN/store/memory"
        )
    with MemoryStore.open(folder, read_only=True, snapshot=True) as store:  # a copy: the folder stays as it was
        if not store.count(data.namespace):
            raise ValueError(
                f"the memory store {folder} has no memories in namespace {data.namespace!r} "
                f"(its namespaces: {', '.join(store.namespaces()) or 'none'})"
            )
        return attach_memories(examples, store, data.namespace, data.k_pos, data.k_neg)


def load_eval_examples(cfg: Any, limit: int | None = None) -> list[QAExample]:
    """The held-out slice (`data.eval_offset`, default: right after the training slice)."""
    data = cfg.data
    offset = data.eval_offset if data.eval_offset is not None else data.offset + (data.limit or 0)
    return load_qa_jsonl(data.path, offset=offset, limit=limit or data.eval_limit, seed=data.seed)
