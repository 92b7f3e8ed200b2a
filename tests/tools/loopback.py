"""A quiet HTTP handler base for the fake services the tool tests run on loopback (Tavily, pages)."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from typing import Any


class LoopbackHandler(BaseHTTPRequestHandler):
    """Sends whole responses with a length, reads JSON bodies, and logs nothing."""

    def log_message(self, *args: Any) -> None:  # keep test output clean
        pass

    def _send(self, status: int, body: bytes, kind: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _json_body(self) -> dict[str, Any]:
        return json.loads(self.rfile.read(int(self.headers["Content-Length"])))
