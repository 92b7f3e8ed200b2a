"""`mia ask` streams the executor's reply token by token, without the protocol's tags, and no
weight-loading bars; with a scripted streaming model and with the real SmolLM2."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessageChunk
from langchain_core.outputs import ChatGenerationChunk
from typer.testing import CliRunner

from mia.app.cli import app
from mia.graph.models.defaults import DEFAULT_MODELS
from mia.graph.nodes import deps as deps_module

from .fakes import ScriptedChatModel, make_deps

runner = CliRunner()
CALL = '<think>I need the capital first.</think><tool_call>{"name": "search", "arguments": {"query_list": ["capital Paris"]}}</tool_call>'
ANSWER = "<think>The search says Paris.</think><answer>Paris</answer>"
TAGS = ("<think>", "</think>", "<tool_call>", "</tool_call>", "<answer>", "</answer>", '"name": "search"')


class StreamingModel(ScriptedChatModel):
    """The scripted model, streaming its reply three characters at a time."""

    streamed: int = 0

    def _stream(
        self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> Iterator[ChatGenerationChunk]:
        text = self._generate(messages, stop=stop, **kwargs).generations[0].message.content
        for start in range(0, len(text), 3):
            self.streamed += 1
            chunk = ChatGenerationChunk(message=AIMessageChunk(content=text[start : start + 3]))
            if run_manager:
                run_manager.on_llm_new_token(chunk.text, chunk=chunk)
            yield chunk


@pytest.fixture()
def streaming(monkeypatch: pytest.MonkeyPatch) -> StreamingModel:
    model = StreamingModel(script=["1. Search the capital.", CALL, ANSWER])
    deps, _ = make_deps(dict.fromkeys(DEFAULT_MODELS.values(), model))
    monkeypatch.setattr(deps_module, "_DEFAULT", deps)
    for role in ("PLANNER", "EXECUTOR", "MANAGER", "JUDGE"):
        monkeypatch.delenv(f"MIA_{role}_MODEL", raising=False)
    return model


def test_ask_streams_the_reply_without_tags(streaming: StreamingModel, tmp_path: Path) -> None:
    res = runner.invoke(app, ["ask", "Capital of France?", "--data-dir", str(tmp_path), "--judge-mode", "off"])
    assert res.exit_code == 0, res.output
    assert streaming.streamed > 20  # the replies really came as tokens
    out = res.output
    for tag in TAGS:
        assert tag not in out, out
    thought, call, second, answer = (
        out.index("I need the capital first."),
        out.index("tool search("),
        out.index("The search says Paris."),
        out.index("final answer"),
    )
    assert thought < call < second < answer  # each streamed reply comes before its node's summary
    assert out.count("I need the capital first.") == 1 and out.count("The search says Paris.") == 1  # no repeats


def test_json_output_streams_nothing(streaming: StreamingModel, tmp_path: Path) -> None:
    res = runner.invoke(
        app, ["ask", "Capital of France?", "--json", "--data-dir", str(tmp_path), "--judge-mode", "off"]
    )
    assert res.exit_code == 0, res.output
    lines = res.stdout.strip().splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["answer"] == "Paris"  # the JSON line only


@pytest.mark.real_model
def test_real_model_ask_streams_without_tags_or_bars(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from huggingface_hub.utils import are_progress_bars_disabled, enable_progress_bars

    from mia.app.commands import agent

    written: list[str] = []
    write = agent.LiveReply._write
    monkeypatch.setattr(agent.LiveReply, "_write", lambda self, text: (written.append(text), write(self, text)))
    enable_progress_bars()
    record = json.loads((Path(__file__).parent / "data" / "hotpotqa_sample.json").read_text())[0]
    paragraphs = tmp_path / "paragraphs.json"
    paragraphs.write_text(json.dumps(record["paragraphs"]))
    spec = "llamacpp:smollm2"
    res = runner.invoke(
        app,
        [
            "ask",
            record["question"],
            "--paragraphs",
            str(paragraphs),
            "--data-dir",
            str(tmp_path),
            "--planner-model",
            spec,
            "--executor-model",
            spec,
            "--manager-model",
            spec,
            "--memory-mode",
            "none",
            "--judge-mode",
            "off",
            "--no-memorise",
            "--max-tool-calls",
            "1",
            "--max-tokens",
            "24",
        ],
    )
    assert res.exit_code == 0, res.output
    for tag in TAGS[:-1]:
        assert tag not in res.output, res.output
    assert "Loading weights" not in res.output and "final answer" in res.output
    assert are_progress_bars_disabled()
    pieces = [w for w in written if w]
    assert len(pieces) > 3, written  # the real model's reply arrived token by token
    for tag in TAGS[:-1]:
        assert tag not in "".join(pieces)
