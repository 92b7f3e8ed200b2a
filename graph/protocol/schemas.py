"""The one renderer of tool schemas into a text prompt (the executor's text protocol, the local
backends' `<tools>` block and training all show tools the same way): one JSON object per line in
the OpenAI/Qwen function format."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any


def tool_schema(tool: Any) -> dict[str, Any]:
    """{"type": "function", "function": {"name", "description", "parameters"}} for a LangChain
    tool or an OpenAI-format dict (returned unchanged)."""
    if isinstance(tool, dict):
        return tool if "function" in tool else {"type": "function", "function": tool}
    params = getattr(tool, "args", None) or {}
    schema = {"type": "object", "properties": params}
    try:
        from langchain_core.utils.function_calling import convert_to_openai_tool

        schema = convert_to_openai_tool(tool)["function"].get("parameters") or schema
    except Exception:  # noqa: BLE001, S110 - a tool without a pydantic schema: its args are the schema
        pass
    return {
        "type": "function",
        "function": {"name": tool.name, "description": getattr(tool, "description", ""), "parameters": schema},
    }


def tool_schema_lines(tools: Sequence[Any]) -> str:
    """One JSON schema per line, as the text protocol's system prompt shows them."""
    return "\n".join(json.dumps(tool_schema(t), ensure_ascii=False) for t in tools)
