"""Fixtures for the tools tests: real HotpotQA paragraphs and a small, real-text corpus."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mia.graph.tools.loading import DEMO_PATH
from mia.graph.tools.paragraphs import read_jsonl_gz


@pytest.fixture(scope="session")
def hotpot_questions(shared_data: Path) -> list[dict]:
    """The first 8 HotpotQA distractor questions (80 paragraphs together)."""
    with (shared_data / "hotpotqa" / "hotpotqa_dev_distractor.jsonl").open(encoding="utf-8") as fh:
        return [json.loads(line) for _, line in zip(range(8), fh)]


@pytest.fixture(scope="session")
def demo_sample() -> list[dict]:
    """The 10 shortest of the first 300 paragraphs of the committed demo corpus: real text, cheap
    to embed (the cache tests build several indexes), and no need for ../shared."""
    head = read_jsonl_gz(DEMO_PATH)[:300]
    return sorted(head, key=lambda p: (len(p["text"]), p["id"]))[:10]
