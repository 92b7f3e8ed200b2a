"""`mia ask --learn` end to end on the embedded model: the answer is given, the episode is queued
durably for the learner, and the served planner version is reported."""

from __future__ import annotations

import json

from typer.testing import CliRunner

ARGS = [
    "--max-tool-calls",
    "0",
    "--max-tokens",
    "8",
    "--max-replans",
    "0",
    "--memory-mode",
    "none",
    "--planner-model",
    "local:smollm2",
    "--executor-model",
    "local:smollm2",
    "--judge-model",
    "local:smollm2",
    "--json",
]


def test_ask_learn_queues_the_episode(tmp_path, data_dir) -> None:
    import torch

    from mia.app.cli import app

    paragraphs = tmp_path / "paras.json"
    paragraphs.write_text(json.dumps([{"title": "France", "text": "Paris is the capital of France."}]))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a shared CPU: oversubscribed torch threads crawl
    try:
        result = CliRunner().invoke(
            app,
            [
                "ask",
                "What is the capital of France?",
                "--gold",
                "Paris",
                "--learn",
                "--paragraphs",
                str(paragraphs),
                "--data-dir",
                str(tmp_path / "data"),
                "--namespace",
                "learn-test",
                *ARGS,
            ],
        )
    finally:
        torch.set_num_threads(threads)
    assert result.exit_code == 0, result.output
    assert "Test-time learning on: planner adapter base" in result.output
    assert "queued for the next update" in result.output
    lines = (tmp_path / "data" / "online" / "learn-test" / "episodes.jsonl").read_text().splitlines()  # per namespace
    episode = json.loads(lines[0])
    assert episode["question"] == "What is the capital of France?" and episode["gold_answers"] == ["Paris"]
    assert episode["adapter_version"] == "base" and episode["paragraphs"][0]["title"] == "France"
    assert episode["reward"] is not None
