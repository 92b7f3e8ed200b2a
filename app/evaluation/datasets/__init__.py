"""Evaluation sets shipped with mia, and loading of user files in the same normalised JSONL format.

Why shipped: users do not have the shared data folder; these compressed files are small subsets of
public dev sets (see SOURCES.md), built by scripts/build_eval_datasets.py.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import ValidationError

from mia.app.evaluation.records import EvalExample
from mia.training.splits import seeded_order

HERE = Path(__file__).resolve().parent
Setting = Literal["distractor", "open"]


@dataclass(frozen=True)
class DatasetInfo:
    """A shipped set: its file, and whether each question searches its own paragraphs or a corpus."""

    name: str
    file: str
    setting: Setting
    description: str


DATASETS: dict[str, DatasetInfo] = {
    "hotpotqa": DatasetInfo("hotpotqa", "hotpotqa.jsonl.gz", "distractor", "HotpotQA dev, distractor (1,000)"),
    "2wiki": DatasetInfo("2wiki", "2wiki.jsonl.gz", "distractor", "2WikiMultihopQA dev, distractor (500)"),
    "2wiki-open": DatasetInfo(
        "2wiki-open",
        "2wiki-open.jsonl.gz",
        "open",
        "2WikiMultihopQA dev over the 6,119-paragraph HippoRAG corpus (1,000)",
    ),
    "musique": DatasetInfo("musique", "musique.jsonl.gz", "distractor", "MuSiQue-Ans dev, 20 paragraphs each (200)"),
}
OPEN_CORPUS_FILE = HERE / "2wiki-open-corpus.jsonl.gz"


class DatasetError(ValueError):
    """A dataset name is unknown or a file is not in the normalised format (names file and line)."""


def _open_text(path: Path):
    return gzip.open(path, "rt", encoding="utf-8") if path.suffix == ".gz" else path.open(encoding="utf-8")


def read_examples(path: Path) -> list[EvalExample]:
    """Read a normalised JSONL (optionally .gz) file; a bad line is an error naming its number."""
    if not path.is_file():
        raise DatasetError(f"dataset file not found: {path}")
    examples: list[EvalExample] = []
    seen: set[str] = set()
    with _open_text(path) as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                if isinstance(row, dict) and "id" in row:
                    row["id"] = str(row["id"])
                ex = EvalExample.model_validate(row)
            except (json.JSONDecodeError, ValidationError) as err:
                raise DatasetError(f"{path}:{lineno}: not a normalised question record ({err})") from err
            if ex.image and "://" not in ex.image and not ex.image.startswith("data:"):
                ex.image = str((path.parent / ex.image).expanduser())  # relative to the dataset file
            if ex.id in seen:
                raise DatasetError(f"{path}:{lineno}: duplicate id {ex.id!r}")
            seen.add(ex.id)
            examples.append(ex)
    if not examples:
        raise DatasetError(f"{path}: no questions")
    return examples


def resolve(name_or_path: str) -> tuple[Path, Setting]:
    """A shipped name, or a path to a user file (searched in each question's own paragraphs)."""
    if name_or_path in DATASETS:
        info = DATASETS[name_or_path]
        return HERE / info.file, info.setting
    path = Path(name_or_path).expanduser()
    if path.suffix in {".jsonl", ".gz"} or path.exists():
        return path, "distractor"
    raise DatasetError(f"unknown dataset {name_or_path!r}: use one of {', '.join(DATASETS)} or a .jsonl path")


def sample(examples: list[EvalExample], n: int | None, seed: int, start: int = 0) -> list[EvalExample]:
    """A seeded shuffle, then n questions from position `start`: the same seed gives the same
    questions in the same order for every configuration, and n=30 is a prefix of n=60 (so a run can
    be extended). `start` gives a disjoint split of the same order (tuning on positions 0-99, final
    rows on 100-199). The order is training's too (`data.seed`), so a planner can be trained on
    questions no run evaluates."""
    if start < 0:
        raise DatasetError(f"start must be 0 or more, got {start}")
    order = seeded_order(examples, seed)
    if start >= len(order):
        raise DatasetError(f"start {start} is past the end of the set ({len(order)} questions)")
    return order[start:] if n is None else order[start : start + n]


def load_examples(
    name_or_path: str, n: int | None = None, seed: int = 0, start: int = 0
) -> tuple[list[EvalExample], Setting]:
    """The questions to evaluate (n from position `start` of the seeded order) and their search setting."""
    path, setting = resolve(name_or_path)
    return sample(read_examples(path), n, seed, start), setting


def load_open_corpus_paragraphs() -> list[dict[str, str]]:
    """The 6,119 paragraphs of the 2Wiki open setting as {title, text} (shared by all questions)."""
    with _open_text(OPEN_CORPUS_FILE) as fh:
        return [{"title": r["title"], "text": r["text"]} for r in map(json.loads, fh)]
