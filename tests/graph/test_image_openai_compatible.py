"""The captioner over real HTTP to an OpenAI-compatible server (what vLLM serving Qwen2.5-VL
receives): the photo arrives as an `image_url` part with a base64 data URL."""

from __future__ import annotations

import base64
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from mia.graph.builder import build_graph, recursion_limit
from mia.graph.context import Context
from mia.graph.nodes.deps import Deps

from .fakes import ScriptedChatModel, search_tool
from .sample_images import CHINA

CAPTION = "A temple roof among trees."


class VisionServer(BaseHTTPRequestHandler):
    bodies: list[dict[str, Any]] = []

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).bodies.append(body)
        reply = {
            "id": "c1",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": CAPTION}}],
            "usage": {"prompt_tokens": 1200, "completion_tokens": 7, "total_tokens": 1207},
        }
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


def test_captioner_sends_the_image_to_an_openai_compatible_server(tmp_path, monkeypatch) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), VisionServer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local")
    fakes = {
        "fake:planner": ScriptedChatModel(script=["1. Search the temple."]),
        "fake:executor": ScriptedChatModel(script=["<answer>Jiangxi</answer>"]),
    }

    def model_factory(spec: str, temperature: float, max_tokens: int) -> Any:
        if spec in fakes:
            return fakes[spec]
        from mia.graph.models import load_chat_model

        return load_chat_model(spec, temperature=temperature, max_tokens=max_tokens)

    deps = Deps(model_factory=model_factory, tools_factory=lambda ctx, p: [search_tool()])
    ctx = Context(
        planner_model="fake:planner",
        executor_model="fake:executor",
        manager_model="fake:planner",
        judge_model="fake:planner",
        captioner_model=f"openai-compatible:Qwen/Qwen2.5-VL-7B-Instruct@{url}",
        memory_mode="none",
        judge_mode="off",
        memorise=False,
        min_tool_calls=0,
        tool_protocol="text",
        data_dir=str(tmp_path),
    )
    try:
        out = build_graph(deps=deps).invoke(
            {"question": "Where is this temple?", "image": str(CHINA)},
            context=ctx,
            config={"recursion_limit": recursion_limit(ctx)},
        )
    finally:
        server.shutdown()
    assert out["trajectory"]["caption"] == CAPTION and out["answer"] == "Jiangxi"
    captioner = out["usage"]["captioner"]
    assert (captioner["calls"], captioner["input_tokens"], captioner["output_tokens"]) == (1, 1200, 7)
    (body,) = VisionServer.bodies
    assert body["model"] == "Qwen/Qwen2.5-VL-7B-Instruct"
    parts = body["messages"][-1]["content"]
    image = next(p for p in parts if p["type"] == "image_url")
    header, data = image["image_url"]["url"].split(",", 1)
    assert header == "data:image/jpeg;base64" and base64.b64decode(data) == CHINA.read_bytes()
