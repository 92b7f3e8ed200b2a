"""Tavily web search against a fake Tavily API on loopback, and `visit` against a local web server."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import ThreadingHTTPServer

import pytest

from mia.graph.tools import VisitTool, WebSearchTool
from mia.graph.tools.html_text import extract_text

from .loopback import LoopbackHandler

PAGE = """<html><head><title>Quokka &amp; friends</title><script>var x = "SECRET_SCRIPT";</script>
<style>body{color:red}</style></head><body><nav>Home | About | NAVIGATION_LINKS</nav>
<main><h1>The quokka</h1><p>The quokka is a small marsupial found on Rottnest Island.</p>
<p>It is about the size of a domestic cat, and it is known as the happiest animal in the world.
Rottnest Island is off the coast of Western Australia near Perth. Visitors come to take photos.</p></main>
<footer>FOOTER_TEXT</footer></body></html>"""


class _Handler(LoopbackHandler):
    requests: list[dict] = []
    mode = {"search": "ok"}

    def do_POST(self):  # the Tavily API
        payload = self._json_body()
        _Handler.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), **payload})
        mode = _Handler.mode["search"]
        if mode == "ok":
            results = [
                {
                    "title": f"Result {i} for {payload['query']}",
                    "url": f"https://example.org/{i}",
                    "content": f"Snippet {i}   about {payload['query']}.",
                    "score": 1 - i / 10,
                }
                for i in range(1, 6)
            ]
            self._send(200, json.dumps({"query": payload["query"], "results": results}).encode())
        elif mode == "unauthorized":
            self._send(401, json.dumps({"detail": {"error": "Unauthorized: missing or invalid API key."}}).encode())
        elif mode == "server-error":
            self._send(502, b'{"detail": "bad gateway"}')
        elif mode == "slow":
            time.sleep(1.5)
            self._send(200, b'{"results": []}')

    def do_GET(self):  # pages for `visit`
        if self.path == "/page":
            self._send(200, PAGE.encode(), "text/html; charset=utf-8")
        elif self.path == "/plain":
            self._send(200, b"just plain text", "text/plain")
        elif self.path == "/binary":
            self._send(200, b"%PDF-1.4", "application/pdf")
        elif self.path == "/flaky":
            _Handler.requests.append({"path": "/flaky"})
            if sum(r["path"] == "/flaky" for r in _Handler.requests) == 1:
                self._send(503, b"try later", "text/plain")
            else:
                self._send(200, b"<p>Second time lucky.</p>", "text/html")
        else:
            self._send(404, b"not found", "text/plain")


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request, client_address):  # a client that timed out and left: expected
        pass


@pytest.fixture()
def server() -> Iterator[str]:
    _Handler.requests = []
    _Handler.mode = {"search": "ok"}
    httpd = _QuietServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_tavily_search_through_a_fake_api(server):
    tool = WebSearchTool(api_key="tvly-test", base_url=server, top_k=2)
    out = tool.invoke({"query_list": ["quokka habitat", "perth climate"]})
    blocks = out.split("\n=======\n")
    assert blocks[0] == (
        'Results for "quokka habitat":\n'
        "Doc 1 (Title: Result 1 for quokka habitat, URL: https://example.org/1) Snippet 1 about quokka habitat.\n"
        "Doc 2 (Title: Result 2 for quokka habitat, URL: https://example.org/2) Snippet 2 about quokka habitat."
    )
    assert "Result 1 for perth climate" in blocks[1]
    assert [r["query"] for r in _Handler.requests] == ["quokka habitat", "perth climate"]
    assert all(
        r["path"] == "/search" and r["auth"] == "Bearer tvly-test" and r["max_results"] == 2 for r in _Handler.requests
    )
    call = tool.invoke(
        {"type": "tool_call", "id": "c", "name": "web_search", "args": {"query_list": ["quokka habitat"]}}
    )
    assert call.artifact["sources"] == ["Result 1 for quokka habitat", "Result 2 for quokka habitat"]


def test_tavily_rejected_key_is_an_observation_without_retries(server):
    _Handler.mode["search"] = "unauthorized"
    tool = WebSearchTool(api_key="tvly-bad", base_url=server, backoff=0.01)
    out = tool.invoke({"query": "anything"})
    assert "Error: web search failed for this query (the Tavily API key was rejected" in out
    assert len(_Handler.requests) == 1


def test_tavily_server_errors_are_retried_then_reported(server):
    _Handler.mode["search"] = "server-error"
    tool = WebSearchTool(api_key="tvly-test", base_url=server, attempts=3, backoff=0.01)
    out = tool.invoke({"query_list": ["anything"]})
    assert out.startswith('Results for "anything":\nError: web search failed')
    assert len(_Handler.requests) == 3


def test_tavily_timeout_is_reported(server):
    _Handler.mode["search"] = "slow"
    tool = WebSearchTool(api_key="tvly-test", base_url=server, timeout=0.3, attempts=1)
    assert "Error: web search failed for this query (the web search timed out)" in tool.invoke({"query_list": ["x"]})


def test_missing_key_and_bad_arguments(monkeypatch):
    monkeypatch.delenv("TAVILY_API_KEY", raising=False)
    tool = WebSearchTool()
    assert tool.invoke({"query_list": ["x"]}) == "Error: web search is unavailable: TAVILY_API_KEY is not set."
    assert tool.invoke({"query_list": []}).startswith('Error: "query_list" is empty')


def test_an_injected_failing_client():
    class Failing:
        def search(self, query, **kwargs):
            raise RuntimeError("boom")

    out = WebSearchTool(client=Failing()).invoke({"query_list": ["x"]})
    assert "Error: web search failed for this query (RuntimeError: boom)" in out


def test_visit_reads_the_main_text(server):
    out = VisitTool().invoke({"url": f"{server}/page", "goal": "where quokkas live"})
    assert out.startswith(f"Page: Quokka & friends ({server}/page)\n")
    assert "Rottnest Island" in out and "The quokka" in out
    for junk in ("SECRET_SCRIPT", "NAVIGATION_LINKS", "FOOTER_TEXT", "color:red"):
        assert junk not in out
    read = VisitTool().invoke(
        {"type": "tool_call", "id": "c", "name": "visit", "args": {"url": [f"{server}/page", f"{server}/missing"]}}
    )
    assert read.artifact["sources"] == [f"{server}/page"]  # the page that failed was not read
    short = VisitTool(max_chars=80).invoke(f"{server}/page")
    assert len(short) <= 80 and "[truncated" in short


def test_visit_errors_are_observations(server):
    tool = VisitTool(timeout=2, attempts=2, backoff=0.01)
    assert (
        tool.invoke({"url": f"{server}/missing"})
        == f"Error: could not read {server}/missing: the server answered HTTP 404."
    )
    assert "unsupported content type 'application/pdf'" in tool.invoke({"url": f"{server}/binary"})
    assert tool.invoke({"url": f"{server}/plain"}).endswith("just plain text")
    assert "Second time lucky." in tool.invoke({"url": f"{server}/flaky"})  # one retry on 503
    assert "ConnectError" in tool.invoke({"url": "http://127.0.0.1:9/"})
    assert tool.invoke({"url": "file:///etc/passwd"}).startswith("Error: not an http(s) URL")
    assert tool.invoke({}).startswith('Error: visit needs "url"')


def test_extract_text_without_main_falls_back_to_body():
    title, text = extract_text("<html><body><div>One</div><div>Two<br>Three</div><script>x()</script></body></html>")
    assert title == ""
    assert [line for line in text.split("\n") if line] == ["One", "Two", "Three"]
