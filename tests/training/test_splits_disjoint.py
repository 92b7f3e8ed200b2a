"""Every shipped training config trains and evaluates on questions that the ablation ladder's
splits (tune and final, results/ladder/ladder.toml) and the eval warm-up never use: an adapter
trained on the reported questions would make the `trained` row a claim about memorised answers."""

from __future__ import annotations

import gzip
import tomllib
from pathlib import Path

import pytest

from mia.training.config import TrainConfig

ROOT = Path(__file__).resolve().parents[2]
LADDER = tomllib.loads((ROOT / "results" / "ladder" / "ladder.toml").read_text())
WARMUP = 50  # `mia eval --warmup 50` takes the last 50 positions of the seeded order
CONFIGS = sorted((ROOT / "training" / "configs").glob("*.yaml"))


def _reserved(dataset_path: Path) -> set[int]:
    with gzip.open(dataset_path, "rt", encoding="utf-8") as fh:
        size = sum(1 for line in fh if line.strip())
    used = set(range(size - WARMUP, size))
    for split in LADDER["splits"].values():
        used |= set(range(split["start"], split["start"] + split["n"]))
    return used


@pytest.mark.parametrize("path", CONFIGS, ids=[p.stem for p in CONFIGS])
def test_training_questions_are_none_of_the_ladders(path: Path) -> None:
    cfg = TrainConfig.from_yaml(path)
    if cfg.sft.episodes:  # the SFT stage reads logged episodes: the reported questions are excluded
        assert any("results/ladder/" in p for p in cfg.sft.exclude), f"{path.name} does not exclude the final split"
    if not cfg.data.path:  # no question slice (an SFT-only config)
        return
    if cfg.data.seed is None:  # file order: only the tiny test config, which reports nothing
        assert cfg.name.startswith("test"), f"{path.name} slices the file order, not the seeded one"
        return
    reserved = _reserved(ROOT / cfg.data.path)
    train = set(range(cfg.data.offset, cfg.data.offset + (cfg.data.limit or 0)))
    held_out = set(range(cfg.data.eval_offset or 0, (cfg.data.eval_offset or 0) + cfg.data.eval_limit))
    assert not train & reserved, f"{path.name} trains on ladder positions {sorted(train & reserved)[:5]}..."
    assert not held_out & reserved and not held_out & train


def test_the_check_sees_an_overlap() -> None:
    cfg = TrainConfig.from_yaml(ROOT / "training" / "configs" / "cpu-qwen.yaml", {"data.offset": 150})
    reserved = _reserved(ROOT / cfg.data.path)
    assert set(range(cfg.data.offset, cfg.data.offset + (cfg.data.limit or 0))) & reserved
