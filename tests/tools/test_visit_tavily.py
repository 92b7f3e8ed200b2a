"""`visit` through Tavily extract when a key is set (a fake Tavily API on loopback, real HTTP through
tavily-python), with the direct httpx read as the fallback, and the no-key path (httpx only)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import ThreadingHTTPServer

import pytest

from mia.graph.tools import VisitTool

from .loopback import LoopbackHandler


class _Handler(LoopbackHandler):
    calls: list[dict] = []
    mode = "ok"

    def do_POST(self):  # Tavily's /extract
        payload = self._json_body()
        _Handler.calls.append({"path": self.path, "auth": self.headers.get("Authorization"), **payload})
        if _Handler.mode == "unauthorized":
            self._send(401, json.dumps({"detail": {"error": "Unauthorized: missing or invalid API key."}}).encode())
            return
        good = [u for u in payload["urls"] if "/good" in u]
        results = [{"url": u, "raw_content": f"Extracted by Tavily from {u}.", "images": []} for u in good]
        failed = [{"url": u, "error": "could not extract"} for u in payload["urls"] if u not in good]
        self._send(200, json.dumps({"results": results, "failed_results": failed, "response_time": 0.1}).encode())

    def do_GET(self):  # the pages themselves (the httpx fallback)
        _Handler.calls.append({"path": self.path, "method": "GET"})
        self._send(200, f"<main><p>Read directly: {self.path}</p></main>".encode(), "text/html")


@pytest.fixture()
def server() -> Iterator[str]:
    _Handler.calls, _Handler.mode = [], "ok"
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_visit_uses_tavily_extract_with_a_key(server: str) -> None:
    tool = VisitTool(api_key="tvly-test", base_url=server)
    out = tool.invoke({"url": [f"{server}/good/1", f"{server}/other"]})
    posts = [c for c in _Handler.calls if c["path"] == "/extract"]
    assert len(posts) == 1 and posts[0]["urls"] == [f"{server}/good/1", f"{server}/other"]
    assert posts[0]["auth"] == "Bearer tvly-test" and posts[0]["format"] == "text"
    assert f"Page: {server}/good/1\nExtracted by Tavily from {server}/good/1." in out
    assert "Read directly: /other" in out  # the URL Tavily failed on is read with httpx
    assert [c["path"] for c in _Handler.calls if c.get("method") == "GET"] == ["/other"]


def test_visit_reads_the_key_from_the_environment(server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TAVILY_API_KEY", "tvly-env")
    out = VisitTool(base_url=server).invoke(f"{server}/good/2")
    assert "Extracted by Tavily" in out and _Handler.calls[0]["auth"] == "Bearer tvly-env"


def test_a_failing_extract_falls_back_to_httpx(server: str) -> None:
    _Handler.mode = "unauthorized"
    out = VisitTool(api_key="tvly-bad", base_url=server, attempts=1).invoke(f"{server}/good/3")
    assert "Read directly: /good/3" in out and "Extracted" not in out


def test_without_a_key_visit_never_calls_tavily(server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TAVILY_API_KEY", raising=False)
    out = VisitTool(base_url=server).invoke(f"{server}/good/4")
    assert "Read directly: /good/4" in out
    assert [c["path"] for c in _Handler.calls] == ["/good/4"]


def test_an_injected_client_without_extract_is_ignored(server: str) -> None:
    class SearchOnly:
        def search(self, query, **kwargs):
            return {"results": []}

    out = VisitTool(client=SearchOnly()).invoke(f"{server}/x")
    assert "Read directly: /x" in out
