"""Where test-time learning keeps its files under a data dir, defined once: the session writes
there and the evaluation's learning report reads there."""

from __future__ import annotations

from pathlib import Path

ONLINE_DIR = "online"  # <data>/online/<namespace>/: episodes.jsonl, cursor.json, learner.jsonl
ADAPTERS_DIR = ("adapters", "planner")  # <data>/adapters/planner/<namespace>/: v0001/, ..., registry.json
LEARNER_LOG = "learner.jsonl"
REGISTRY_FILE = "registry.json"
BASE = "base"  # the registry's name for the served planner before any online update


def online_folder(data_dir: Path, namespace_folder: str) -> Path:
    return Path(data_dir) / ONLINE_DIR / namespace_folder


def adapters_folder(data_dir: Path, namespace_folder: str) -> Path:
    return Path(data_dir).joinpath(*ADAPTERS_DIR) / namespace_folder
