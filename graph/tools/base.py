"""`ObservationTool`: a LangChain tool that always answers with a string.

Why: in both the text ReAct protocol and native tool calling, a tool failure is information for
the model (it can rephrase, or answer from what it has); an exception would end the graph run.
So inputs of the wrong shape are coerced or explained, and every error becomes an observation.

Its response format is LangChain's `content_and_artifact`: `invoke(args)` gives the text, a tool call
gives a `ToolMessage` whose artifact names the sources read (titles, URLs). The graph records them on
the trajectory so that a workflow can point at what was found without copying raw tool text.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Literal, NamedTuple

from langchain_core.tools import BaseTool

from mia.graph.tools.arguments import ToolArgumentError

log = logging.getLogger(__name__)


class Observation(NamedTuple):
    """What a tool read: the text the model sees and the sources it came from (titles, URLs)."""

    text: str
    sources: tuple[str, ...] | list[str] = ()


def unique_sources(names: Any, limit: int = 10) -> list[str]:
    """Non-empty names, whitespace collapsed, first occurrence kept, at most `limit`."""
    seen: dict[str, None] = {}
    for name in names:
        name = " ".join(str(name or "").split())
        if name and name not in seen:
            seen[name] = None
    return list(seen)[:limit]


class ObservationTool(BaseTool):
    """Subclasses implement `observe(args) -> str | Observation` and set `args_schema` to a
    JSON-schema dict (no pydantic validation, so that bad arguments reach `observe` and get a
    helpful answer)."""

    primary_arg: str = "input"  # where a bare string input goes
    response_format: Literal["content", "content_and_artifact"] = "content_and_artifact"

    def observe(self, args: dict[str, Any]) -> str | Observation:  # pragma: no cover - abstract
        raise NotImplementedError

    def _coerce(self, tool_input: Any) -> Any:
        """Wrap a bare string/list into the primary argument; leave tool calls and dicts alone."""
        if isinstance(tool_input, dict):
            if tool_input.get("type") == "tool_call" and not isinstance(tool_input.get("args"), dict):
                return {**tool_input, "args": self._as_args(tool_input.get("args"))}
            return tool_input
        return self._as_args(tool_input)

    def _as_args(self, value: Any) -> dict[str, Any]:
        if value is None:
            return {}
        if isinstance(value, dict):
            return value
        return {self.primary_arg: value}

    def run(self, tool_input: Any, *args: Any, **kwargs: Any) -> Any:
        return super().run(self._coerce(tool_input), *args, **kwargs)

    async def arun(self, tool_input: Any, *args: Any, **kwargs: Any) -> Any:
        return await super().arun(self._coerce(tool_input), *args, **kwargs)

    def _run(self, *args: Any, run_manager: Any = None, **kwargs: Any) -> tuple[str, dict[str, list[str]]]:
        if args:  # positional input only happens with odd callers; treat it as the primary argument
            kwargs.setdefault(self.primary_arg, args[0] if len(args) == 1 else list(args))
        try:
            got = self.observe(kwargs)
        except ToolArgumentError as err:
            got = str(err)
        except Exception as err:  # never raise into the graph
            log.warning("tool %s failed: %s", self.name, err, exc_info=True)
            got = f"Error: the {self.name} tool failed ({type(err).__name__}: {err}). Try again or answer with what you have."
        observed = got if isinstance(got, Observation) else Observation(str(got))
        return observed.text, {"sources": list(observed.sources)}

    async def _arun(self, *args: Any, run_manager: Any = None, **kwargs: Any) -> tuple[str, dict[str, list[str]]]:
        # The work is blocking (embedding, HTTP); keep it off the event loop.
        return await asyncio.to_thread(self._run, *args, **kwargs)
