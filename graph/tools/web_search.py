"""`WebSearchTool`: Tavily web search with the same `query_list` interface as the local search.

Why the same interface: the executor's prompt and the memory's workflows talk about "search";
whether it hits the demo corpus or the web is configuration, not something the model must learn.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from pydantic import ConfigDict, PrivateAttr

from mia.graph.tools.arguments import query_list
from mia.graph.tools.base import Observation, ObservationTool, unique_sources
from mia.graph.tools.formatting import format_blocks
from mia.graph.tools.retry import with_retries
from mia.graph.tools.search_tool import DEFAULT_MAX_CHARS, QUERY_LIST_SCHEMA


class MissingTavilyKeyError(RuntimeError):
    """Web search was asked for but TAVILY_API_KEY is not set."""


def _retryable(err: BaseException) -> bool:
    """Network trouble and server errors are worth another try; a bad key or quota is not."""
    import requests
    from tavily import errors as tavily_errors

    if isinstance(err, (TimeoutError, tavily_errors.TimeoutError, requests.ConnectionError, requests.Timeout)):
        return True
    if isinstance(err, requests.HTTPError) and err.response is not None:
        return err.response.status_code >= 500
    return False


def _describe(err: BaseException) -> str:
    from tavily import errors as tavily_errors

    if isinstance(err, tavily_errors.InvalidAPIKeyError):
        return "the Tavily API key was rejected (check TAVILY_API_KEY)"
    if isinstance(err, tavily_errors.UsageLimitExceededError):
        return "the Tavily usage limit is exceeded"
    if isinstance(err, (TimeoutError, tavily_errors.TimeoutError)):
        return "the web search timed out"
    if isinstance(err, tavily_errors.ForbiddenError):
        return "Tavily refused the request (forbidden)"
    return f"{type(err).__name__}: {err}".strip()


def format_web_results(results: list[dict[str, Any]]) -> str:
    """`Doc i (Title: ..., URL: ...) snippet`: the URL lets the model `visit` the page."""
    lines = []
    for i, item in enumerate(results, start=1):
        title = str(item.get("title") or "").strip() or "(untitled)"
        content = " ".join(str(item.get("content") or "").split())
        lines.append(f"Doc {i} (Title: {title}, URL: {item.get('url', '')}) {content}")
    return "\n".join(lines)


class WebSearchTool(ObservationTool):
    """Searches the web through Tavily; each query returns its top results with URLs."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    name: str = "web_search"
    description: str = (
        "Search the web. Give a list of complete queries; each returns the top results as "
        "numbered 'Doc i (Title: ..., URL: ...) snippet' lines."
    )
    args_schema: Any = QUERY_LIST_SCHEMA
    primary_arg: str = "query_list"
    top_k: int = 3
    max_chars: int = DEFAULT_MAX_CHARS
    timeout: float = 15.0
    attempts: int = 2
    backoff: float = 0.5
    api_key: str | None = None
    base_url: str | None = None  # Tavily's default when None; tests point it at a loopback server
    client: Any = None  # anything with .search(query, max_results=..., timeout=...) -> {"results": [...]}
    _client: Any = PrivateAttr(default=None)

    def _get_client(self) -> Any:
        if self.client is not None:
            return self.client
        if self._client is None:
            key = self.api_key or _tavily_key()
            if not key:
                raise MissingTavilyKeyError("TAVILY_API_KEY is not set")
            from tavily import TavilyClient

            self._client = TavilyClient(api_key=key, api_base_url=self.base_url)
        return self._client

    def observe(self, args: dict[str, Any]) -> str | Observation:
        queries = query_list(args, self.name)
        try:
            client = self._get_client()
        except MissingTavilyKeyError as err:
            return f"Error: web search is unavailable: {err}."
        bodies, sources = [], []
        for query in queries:
            try:
                response = with_retries(
                    partial(client.search, query, max_results=self.top_k, timeout=self.timeout),
                    attempts=self.attempts,
                    backoff=self.backoff,
                    retryable=_retryable,
                )
                results = ((response or {}).get("results") or [])[: self.top_k]
                bodies.append(format_web_results(results))
                sources += [item.get("title") or item.get("url") for item in results]
            except Exception as err:  # one failing query must not hide the others' results
                bodies.append(f"Error: web search failed for this query ({_describe(err)}).")
        return Observation(format_blocks(queries, bodies, self.max_chars), unique_sources(sources))


def _tavily_key() -> str | None:
    """TAVILY_API_KEY from the environment or `.env` (the settings)."""
    from mia.graph.models.settings import read_settings

    secret = read_settings().tavily_api_key
    return secret.get_secret_value() if secret is not None else None
