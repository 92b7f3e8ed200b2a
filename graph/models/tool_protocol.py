"""The text tool-calling protocol of the local backends (Qwen/Hermes style).

Tool schemas are rendered into the system prompt inside <tools>; the model answers with
<tool_call>{"name": ..., "arguments": {...}}</tool_call>. Small models produce junk around (or
instead of) that, so parsing is lenient and never raises: a call that cannot be recovered becomes
an `invalid_tool_call` carrying the raw text and the reason, so nothing is lost.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.messages.tool import InvalidToolCall, ToolCall, invalid_tool_call, tool_call

from mia.graph.protocol import (
    JSONRepairError,
    bounded,
    clean_text,
    escape_untrusted,
    parse_json_loose,
    read_call,
    render_call,
    tool_schema_lines,
)
from mia.graph.models.prompts import prompts

OPEN, CLOSE = "<tool_call>", "</tool_call>"
_BARE_JSON = re.compile(r"^(```(?:json)?\s*)?\{")


def new_call_id() -> str:
    """An OpenAI-looking id for a parsed call (the model itself never produces one)."""
    return f"call_{uuid.uuid4().hex[:24]}"


def tool_names(tools: Sequence[dict[str, Any]] | None) -> list[str]:
    """Names of OpenAI-format tool schemas."""
    return [t["function"]["name"] for t in tools or [] if "function" in t]


def forced_tool(tool_choice: Any, tools: Sequence[dict[str, Any]] | None) -> str | None:
    """The name a tool_choice forces: '<name>', {'function': {'name'}}, or 'any'/'required' with one tool.
    Returns '' for 'any'/'required' with several tools, None when nothing is forced."""
    names = tool_names(tools)
    if isinstance(tool_choice, dict):
        return (tool_choice.get("function") or {}).get("name") or tool_choice.get("name")
    if tool_choice in ("any", "required", True):
        return names[0] if len(names) == 1 else ""
    if isinstance(tool_choice, str) and tool_choice in names:
        return tool_choice
    return None


def tools_system_prompt(tools: Sequence[dict[str, Any]], tool_choice: Any = None) -> str:
    """The system-prompt block that describes the tools (and a forced choice, if any)."""
    cfg = prompts()["tools"]
    text = cfg["system"].format(tools=tool_schema_lines(tools))
    forced = forced_tool(tool_choice, tools)
    if forced:
        text += "\n" + cfg["required"].format(name=forced)
    elif forced == "":
        text += "\n" + cfg["required_any"]
    return text


def object_prefill(schema: dict[str, Any] | None) -> str:
    """The start of a JSON object up to its first property's value: '{"name": '.

    Small models then fill in values instead of echoing the schema back.
    """
    props = list((schema or {}).get("properties") or {})
    required = [p for p in (schema or {}).get("required") or [] if p in props]
    first = (required or props or [None])[0]
    if first is None:
        return "{"
    quote = '"' if ((schema or {})["properties"][first] or {}).get("type") == "string" else ""
    return "{" + json.dumps(first) + ": " + quote


def schema_example(schema: dict[str, Any] | None) -> str:
    """A one-line skeleton of an object schema, e.g. {"name": <string>, "age": <integer>}."""
    props = (schema or {}).get("properties") or {}
    fields = [
        f"{json.dumps(k)}: <{v.get('type', 'value') if isinstance(v, dict) else 'value'}>" for k, v in props.items()
    ]
    return "{" + ", ".join(fields) + "}"


def prefill_for(tool_choice: Any, tools: Sequence[dict[str, Any]] | None) -> str:
    """Assistant-turn prefix that makes a forced call nearly certain even for a 135M model."""
    forced = forced_tool(tool_choice, tools)
    if forced:
        params = next((t["function"].get("parameters") for t in tools or [] if t["function"]["name"] == forced), None)
        return f'{OPEN}\n{{"name": {json.dumps(forced)}, "arguments": {object_prefill(params)}'
    if forced == "":
        return f"{OPEN}\n"
    return ""


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = []
    for block in content or []:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and block.get("type") == "text":
            parts.append(str(block.get("text", "")))
    return "".join(parts)


def to_chat_dicts(messages: Sequence[BaseMessage], system_extra: str = "") -> list[dict[str, str]]:
    """LangChain messages -> [{'role', 'content'}] for a chat template.

    Tool results become user turns wrapped in <tool_response> and consecutive turns of one role
    are merged, because many chat templates reject 'tool' roles or two user turns in a row.
    """
    out: list[dict[str, str]] = []

    def add(role: str, content: str) -> None:
        if out and out[-1]["role"] == role:
            out[-1]["content"] += "\n\n" + content
        else:
            out.append({"role": role, "content": content})

    for msg in messages:
        if isinstance(msg, SystemMessage):
            add("system", _text(msg.content))
        elif isinstance(msg, HumanMessage):
            add("user", _text(msg.content))
        elif isinstance(msg, AIMessage):
            pieces = [_text(msg.content)] + [render_call(c["name"], c["args"]) for c in msg.tool_calls]
            add("assistant", "\n".join(p for p in pieces if p))
        elif isinstance(msg, ToolMessage):
            add("user", prompts()["tools"]["response"].format(content=escape_untrusted(_text(msg.content))))
        else:  # ChatMessage / FunctionMessage: keep the text under its role
            role = getattr(msg, "role", "user")
            add(role if role in ("system", "user", "assistant") else "user", _text(msg.content))
    if system_extra:
        if out and out[0]["role"] == "system":
            out[0]["content"] = (out[0]["content"] + "\n\n" + system_extra).strip()
        else:
            out.insert(0, {"role": "system", "content": system_extra})
    return out


def _call_from_obj(obj: Any, names: Sequence[str], raw: str) -> ToolCall | InvalidToolCall:
    """A LangChain tool call from a decoded value (read by the protocol's `read_call`), or an
    invalid one carrying the raw text and the reason."""
    call = read_call(obj)
    if call.error:
        args = raw if call.name is None else _dump(call.raw_arguments)
        return invalid_tool_call(name=call.name, args=args, id=new_call_id(), error=call.error)
    if names and call.name not in names:
        return invalid_tool_call(
            name=call.name,
            args=_dump(call.arguments),
            id=new_call_id(),
            error=f"unknown tool {call.name!r}; known: {', '.join(names)}",
        )
    return tool_call(name=call.name or "", args=dict(call.arguments or {}), id=new_call_id())


def _dump(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def parse_tool_output(text: str, names: Sequence[str] = ()) -> tuple[str, list[ToolCall], list[InvalidToolCall]]:
    """Split model output into (visible text, tool_calls, invalid_tool_calls). Never raises.

    Only the first <tool_call> is used (one action per step, as in a ReAct loop). Without a tag, a
    bare JSON object naming a known tool is accepted too, a common small-model slip.
    """
    text = bounded(clean_text(text))
    start = text.find(OPEN)
    if start == -1:
        stripped = text.strip()
        if names and _BARE_JSON.match(stripped):
            try:
                obj = parse_json_loose(stripped)
            except JSONRepairError:
                return text, [], []
            if isinstance(obj, dict) and isinstance(obj.get("name"), str) and obj["name"] in names:
                call = _call_from_obj(obj, names, stripped)
                if "error" not in call:
                    return "", [call], []
        return text, [], []
    content = text[:start].strip()
    body = text[start + len(OPEN) :]
    end = body.find(CLOSE)
    body = body[:end] if end != -1 else body
    try:
        obj = parse_json_loose(body)
    except JSONRepairError:
        bad = invalid_tool_call(name=None, args=body.strip(), id=new_call_id(), error="no JSON object in <tool_call>")
        return content, [], [bad]
    call = _call_from_obj(obj, names, body.strip())
    if "error" in call:
        return content, [], [call]  # type: ignore[list-item]
    return content, [call], []
