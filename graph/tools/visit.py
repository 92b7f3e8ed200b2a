"""`VisitTool`: read a web page found by web search (readable text, truncated).

With a Tavily key (TAVILY_API_KEY, or `api_key`/`client`), pages are read by Tavily's extract API
(a maintained extractor that renders and cleans pages, one request for all URLs); a URL Tavily
cannot read, or a failing extract call, falls back to fetching the page directly with httpx and
our HTML-to-text. Without a key, httpx only.

Why a character budget: pages are long and the executor's context is small; the first part of the
main text is what a search hit usually points to.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from pydantic import ConfigDict, PrivateAttr

from mia.graph.tools.arguments import ToolArgumentError
from mia.graph.tools.base import Observation, ObservationTool, unique_sources
from mia.graph.tools.formatting import truncate
from mia.graph.tools.html_text import extract_text
from mia.graph.tools.retry import with_retries

MAX_URLS = 3
USER_AGENT = "mia-agent/0.1 (+https://github.com/; research agent page reader)"
log = logging.getLogger(__name__)

VISIT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "url": {"type": "string", "description": "The http(s) URL of the page to read (from a search result)."},
        "goal": {"type": "string", "description": "Optional: what you are looking for on the page."},
    },
    "required": ["url"],
}


def _retryable(err: BaseException) -> bool:
    import httpx

    if isinstance(err, (httpx.TransportError,)):
        return True
    return isinstance(err, httpx.HTTPStatusError) and err.response.status_code >= 500


def _urls(args: dict[str, Any]) -> list[str]:
    value = args.get("url", args.get("urls"))
    if isinstance(value, str):
        value = [value]
    example = '{"name": "visit", "arguments": {"url": "https://example.org/page"}}'
    if not value or not isinstance(value, (list, tuple)) or not all(isinstance(u, str) for u in value):
        raise ToolArgumentError(
            f'Error: visit needs "url", one http(s) URL string (got {value!r:.80}). Call it like {example}'
        )
    urls = [u.strip() for u in value if u.strip()][:MAX_URLS]
    bad = [u for u in urls if not u.lower().startswith(("http://", "https://"))]
    if bad or not urls:
        raise ToolArgumentError(f"Error: not an http(s) URL: {bad[0] if bad else value!r:.120}. Call it like {example}")
    return urls


class VisitTool(ObservationTool):
    """Fetches a page and returns its readable text (title first), cut to the character budget."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    name: str = "visit"
    description: str = "Read a web page: give the URL of a search result; returns the page's main text."
    args_schema: Any = VISIT_SCHEMA
    primary_arg: str = "url"
    max_chars: int = 6000
    timeout: float = 15.0
    attempts: int = 2
    backoff: float = 0.5
    max_bytes: int = 5_000_000
    api_key: str | None = None  # Tavily; else $TAVILY_API_KEY; neither: httpx only
    base_url: str | None = None  # Tavily's default when None; tests point it at a loopback server
    client: Any = None  # anything with .extract(urls, format=..., timeout=...) -> {"results": [...]}
    _client: Any = PrivateAttr(default=None)

    def _tavily(self) -> Any:
        """A Tavily client when a key or a client is given, else None."""
        if self.client is not None:
            return self.client if hasattr(self.client, "extract") else None
        if self._client is None:
            key = self.api_key or os.environ.get("TAVILY_API_KEY")
            if not key:
                return None
            from tavily import TavilyClient

            self._client = TavilyClient(api_key=key, api_base_url=self.base_url)
        return self._client

    def extract(self, urls: list[str]) -> dict[str, str]:
        """Pages Tavily read, by URL ({} without a key, or when the call fails: then httpx reads them)."""
        client = self._tavily()
        if client is None:
            return {}
        try:
            response = client.extract(urls, format="text", timeout=self.timeout) or {}
        except Exception as err:  # noqa: BLE001 - a failed extract falls back to reading the pages directly
            log.warning("Tavily extract failed (%s: %s); reading the pages directly", type(err).__name__, err)
            return {}
        pages = {}
        for item in response.get("results") or []:
            url, text = str(item.get("url") or ""), str(item.get("raw_content") or "").strip()
            if url in urls and text:
                title = str(item.get("title") or "").strip()
                pages[url] = f"Page: {title} ({url})\n{text}" if title else f"Page: {url}\n{text}"
        return pages

    def fetch(self, url: str) -> str:
        """The page as text, or an error string (never raises)."""
        import httpx

        def get() -> httpx.Response:
            with httpx.Client(
                timeout=self.timeout, follow_redirects=True, headers={"User-Agent": USER_AGENT}
            ) as client:
                response = client.get(url)
                response.raise_for_status()
                return response

        try:
            response = with_retries(get, attempts=self.attempts, backoff=self.backoff, retryable=_retryable)
        except httpx.HTTPStatusError as err:
            return f"Error: could not read {url}: the server answered HTTP {err.response.status_code}."
        except httpx.TimeoutException:
            return f"Error: could not read {url}: timed out after {self.timeout:g} s."
        except httpx.HTTPError as err:
            return f"Error: could not read {url} ({type(err).__name__}: {err})."
        kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
        body = response.content[: self.max_bytes].decode(response.encoding or "utf-8", errors="replace")
        if kind in ("text/html", "application/xhtml+xml", ""):
            title, text = extract_text(body)
        elif kind.startswith("text/") or kind in ("application/json", "application/xml"):
            title, text = "", body.strip()
        else:
            return f"Error: could not read {url}: unsupported content type {kind!r}."
        if not text:
            return f"Error: {url} has no readable text."
        header = f"Page: {title} ({url})" if title else f"Page: {url}"
        return f"{header}\n{text}"

    def observe(self, args: dict[str, Any]) -> Observation:
        urls = _urls(args)
        share = self.max_chars // len(urls)
        extracted = self.extract(urls)
        pages = {url: extracted.get(url) or self.fetch(url) for url in urls}
        read = [url for url, page in pages.items() if not page.startswith("Error:")]
        return Observation("\n=======\n".join(truncate(page, share) for page in pages.values()), unique_sources(read))
