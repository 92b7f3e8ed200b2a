"""The executor's turn: `<think>…</think>`, then one `<tool_call>{json}</tool_call>` or
`<answer>…</answer>`. Typed `ToolCall` and `Turn`, one `parse` and one `render_call`.

Two readings of the same format:
- lenient (`strict=False`, the graph): small local models break the format in every possible
  way (single quotes, missing closing tags, a bare JSON object, an "Answer:" line, arguments as a
  JSON string), so the parser repairs what it can and reports `malformed` only when nothing usable
  is left;
- strict (`strict=True`, the paper's format reward and the training ReAct loop): a call is a
  closed `<tool_call>` block holding valid JSON, an answer a closed `<answer>` block.

Every function here is total (a typed failure, never an exception) and linear in the length of
its input, which it first cuts to MAX_TEXT_CHARS.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from mia.graph.protocol.json_span import (
    MAX_DEPTH,
    MAX_JSON_CHARS,
    JSONRepairError,
    lenient_json,
)
from mia.graph.protocol.tags import (
    closed_blocks,
    remove_blocks,
    remove_tags,
    split_think,
    tagged,
    tags,
)
from mia.graph.protocol.text import bounded, clean_text, drop_repeats

TurnKind = Literal["tool_call", "answer", "malformed"]

_NAME_KEYS = ("name", "tool", "tool_name")
_ARG_KEYS = ("arguments", "args", "parameters", "input")
_QUERY_KEYS = ("query_list", "query", "queries")
_ANSWER_LINE = re.compile(
    r"\b(?:final[ \t]+answer|answer)(?:\*\*)?[ \t]*[:：][ \t]*(.*)$", re.IGNORECASE | re.MULTILINE
)


@dataclass(frozen=True)
class ToolCall:
    """One tool call read from model output; `error` says why it is unusable (name or arguments)."""

    name: str | None
    arguments: dict[str, Any] | None
    error: str | None = None
    raw_arguments: Any = None
    """The arguments as written when they are not an object (a string that is not JSON, a list)."""


@dataclass(frozen=True)
class Turn:
    """One parsed executor reply."""

    kind: TurnKind
    think: str = ""
    call: ToolCall | None = None
    answer: str = ""
    content: str = ""
    """The reply as kept in the conversation (cut after the first tool call)."""
    error: str = ""
    repaired: bool = False

    @property
    def tool(self) -> str | None:
        return self.call.name if self.call else None

    @property
    def arguments(self) -> dict[str, Any]:
        return dict(self.call.arguments or {}) if self.call else {}


# --------------------------------------------------------------------------- tool calls


def _first_str(obj: Mapping[str, Any], keys: tuple[str, ...]) -> str | None:
    for key in keys:
        value = obj.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def read_call(value: Any, *, repair: bool = True) -> ToolCall:
    """A ToolCall from a decoded JSON value of whatever shape a model produced:
    {"name", "arguments"}, OpenAI's {"function": {"name", "arguments"}}, "args"/"parameters"/"input",
    arguments as a JSON string, or a bare arguments object without a name."""
    if not isinstance(value, dict):
        return ToolCall(None, None, "the tool call is not a JSON object")
    fn = value.get("function")
    inner = fn if isinstance(fn, dict) else {}
    name = _first_str(value, _NAME_KEYS) or _first_str(inner, _NAME_KEYS)
    if name is None and isinstance(fn, str) and fn.strip():
        name = fn.strip()
    source = value if any(k in value for k in _ARG_KEYS) else inner
    key = next((k for k in _ARG_KEYS if k in source), None)
    args: Any = source[key] if key else {k: v for k, v in value.items() if k not in (*_NAME_KEYS, "function")}
    if isinstance(args, str):
        text = args
        try:
            args = (lenient_json(text) if repair else _strict_json(text)) if text.strip() else {}
        except JSONRepairError:
            return ToolCall(name, None, "the arguments are not valid JSON", raw_arguments=text)
    if name is None:
        return ToolCall(
            None,
            args if isinstance(args, dict) else None,
            "the tool call has no 'name'",
            raw_arguments=None if isinstance(args, dict) else args,
        )
    if not isinstance(args, dict):
        return ToolCall(name, None, "arguments must be an object", raw_arguments=args)
    return ToolCall(name, args)


def normalise_search_args(args: Mapping[str, Any]) -> dict[str, Any]:
    """Accept query / queries / query_list, a string or a list: always {'query_list': [str, ...]}."""
    value = args.get("query_list", args.get("queries", args.get("query")))
    if value is None and args:
        value = next(iter(args.values()))
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        value = [] if value is None else [value]
    queries = [q.strip() if isinstance(q, str) else json.dumps(q, ensure_ascii=False) for q in value]
    return {"query_list": [clean_text(q) for q in queries if q]}


def _executor_call(call: ToolCall) -> ToolCall | None:
    """The lenient executor reading of a call: a nameless call with a query is a search; a list
    or a plain string as arguments is the query; search arguments normalised. None: no tool."""
    name, args = call.name, call.arguments
    if name is None and isinstance(args, dict) and any(k in args for k in _QUERY_KEYS):
        name = "search"
    if name is None:
        return None
    if args is None:
        raw = call.raw_arguments
        if isinstance(raw, list):
            args = {"query_list": raw}
        elif name == "search":
            args = {"query_list": [raw]} if isinstance(raw, str) else {"query_list": [] if raw is None else [raw]}
        else:
            args = {"input": raw}
    if name == "search":
        args = normalise_search_args(args)
    return ToolCall(name, args)


def _depth_ok(text: str) -> bool:
    depth = deepest = 0
    for ch in text:
        if ch in "{[":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "}]":
            depth -= 1
    return deepest <= MAX_DEPTH


def _strict_json(text: str) -> Any:
    if len(text) > MAX_JSON_CHARS or not _depth_ok(text):
        raise JSONRepairError("too long or nested too deep")
    try:
        return json.loads(text.strip())
    except (ValueError, RecursionError) as exc:
        raise JSONRepairError(getattr(exc, "msg", type(exc).__name__)) from None


def parse_calls(text: str | None, *, strict: bool = True) -> list[ToolCall]:
    """Every complete `<tool_call>` block of an assistant turn, malformed ones included (with
    `error` set). Strict: valid JSON only (the paper's format check); lenient: repaired."""
    out = []
    for body in closed_blocks(bounded(text or ""), "tool_call"):
        try:
            value = _strict_json(body) if strict else lenient_json(body)
        except JSONRepairError as exc:
            out.append(ToolCall(None, None, f"invalid JSON: {exc}"))
            continue
        out.append(read_call(value, repair=not strict))
    return out


def render_call(name: str, arguments: Any) -> str:
    """A tool call as the model is taught to write it."""
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False) + "\n</tool_call>"


def render_turn(think: str = "", *, call: tuple[str, Any] | None = None, answer: str | None = None) -> str:
    """One executor turn as the system prompt teaches it: `<think>` then one call or one answer.
    Training writes the turns it teaches with this (strict `parse` reads them back unchanged)."""
    if (call is None) == (answer is None):
        raise ValueError("a turn is one tool call or one answer")
    head = f"<think>\n{think.strip()}\n</think>\n" if think.strip() else ""
    return head + (render_call(*call) if call is not None else f"<answer>{str(answer).strip()}</answer>")


# --------------------------------------------------------------------------- answers


def last_answer(text: str | None) -> str | None:
    """The content of the last complete <answer>...</answer> block, or None (strict reading)."""
    found = closed_blocks(bounded(text or ""), "answer")
    return found[-1].strip() if found else None


def _squash(text: str) -> str:
    return " ".join(text.split())


_AFTER_TOOL_RESPONSE = re.compile(r"</tool_response>[ \t\r\n]*assistant\b(.*)\Z", re.DOTALL | re.IGNORECASE)
_ROLE_LINES = re.compile(r"^[ \t]*(system|user|assistant|tool)[ \t]*$", re.MULTILINE | re.IGNORECASE)


def final_answer(text: str | None) -> str:
    """The final answer in an agent's whole output, whitespace-normalised (the paper's
    training-reward extraction, reference 4.5, plus one guard for cut-off output):
    the last `<answer>...</answer>` after the last `</think>`; a last `<answer>` opened but never
    closed; the text after a `</tool_response> assistant` marker; the text without
    think/tool blocks and bare role lines; finally the whole string. An answer that loops is cut
    where it starts repeating itself (`drop_repeats`)."""
    return drop_repeats(_located_answer(text))


def _located_answer(text: str | None) -> str:
    text = bounded(text or "")
    if not text:
        return ""
    closes = [t for t in tags(text) if t.name == "think" and t.closing]
    tail = text[closes[-1].end :] if closes else text
    answer_tags = [t for t in tags(tail) if t.name == "answer"]
    opens = [t for t in answer_tags if not t.closing]
    if opens and not any(t.closing and t.start > opens[-1].start for t in answer_tags):
        unclosed = _squash(remove_tags(tail[opens[-1].end :]))
        if unclosed:
            return unclosed
    found = closed_blocks(tail, "answer")
    if found:
        return _squash(found[-1])
    after_tool = _AFTER_TOOL_RESPONSE.search(text)
    if after_tool and after_tool.group(1).strip():
        return _squash(remove_tags(after_tool.group(1)))
    stripped = _squash(remove_tags(_ROLE_LINES.sub(" ", remove_blocks(tail, ("tool_call", "tool_response", "think")))))
    return stripped or _squash(text)


# --------------------------------------------------------------------------- one turn


def parse(text: str | None, *, strict: bool = False, tool_names: tuple[str, ...] = ("search",)) -> Turn:
    """Read one executor reply: a tool call, an answer, or malformed (with the reason)."""
    raw = bounded(clean_text(text))
    if strict:
        return _parse_strict(raw)
    cut = next((t for t in tags(raw) if t.name == "tool_response"), None)
    if cut:  # the model started to invent the tool's reply
        raw = raw[: cut.start]
    think, rest = split_think(raw)
    if not raw.strip():
        return Turn("malformed", error="empty reply", content=raw)

    block = tagged(rest, "tool_call")
    if block is not None:
        content = _cut_after_call(raw)
        closed = any(t.name == "tool_call" and t.closing for t in tags(raw))
        try:
            value = lenient_json(block[0])
        except JSONRepairError as exc:
            return Turn("malformed", think=think, content=content, error=f"tool call is not valid JSON ({exc})")
        call = _executor_call(read_call(value))
        if call is None:
            return Turn("malformed", think=think, content=content, error="tool call names no tool")
        # a search without a query is still a call: the executor node fills one in
        return Turn("tool_call", think=think, call=call, content=content, repaired=not closed)

    answer = tagged(rest, "answer")
    if answer is not None and answer[0].strip():
        return Turn("answer", think=think, answer=answer[0].strip(), content=raw)

    visible = remove_tags(rest).strip()
    if "{" in visible:  # a bare JSON object: a tool call or {"answer": ...}
        try:
            value = lenient_json(visible[visible.find("{") :])
        except JSONRepairError:
            value = None
        if isinstance(value, dict) and isinstance(value.get("answer"), (str, int, float)) and "name" not in value:
            return Turn("answer", think=think, answer=str(value["answer"]).strip(), content=raw, repaired=True)
        call = _executor_call(read_call(value)) if isinstance(value, dict) else None
        if call is not None:
            return Turn("tool_call", think=think, call=call, content=raw, repaired=True)

    matches = list(_ANSWER_LINE.finditer(visible))
    if matches:
        line = matches[-1]
        value = line.group(1).strip() or _next_line(visible, line.end())
        if value:
            return Turn("answer", think=think, answer=value, content=raw, repaired=True)
    if visible:
        # The paper's rule: a turn without a tool call ends the attempt; its text is the answer.
        return Turn("answer", think=think, answer=visible, content=raw, repaired=True)
    return Turn("malformed", think=think, content=raw, error="no tool call and no answer after the thinking")


def _parse_strict(raw: str) -> Turn:
    think = split_think(raw)[0]
    answer = last_answer(raw)
    if answer is not None:
        return Turn("answer", think=think, answer=answer, content=raw)
    calls = parse_calls(raw, strict=True)
    if calls:
        call = calls[0]
        if call.error:
            return Turn("malformed", think=think, call=call, content=raw, error=call.error)
        return Turn("tool_call", think=think, call=call, content=raw)
    return Turn("malformed", think=think, content=raw, error="neither a complete <tool_call> nor an <answer> block")


def _cut_after_call(raw: str) -> str:
    close = next((t for t in tags(raw) if t.name == "tool_call" and t.closing), None)
    return raw[: close.end] if close else raw


def _next_line(text: str, pos: int) -> str:
    for line in text[pos:].splitlines():
        if line.strip():
            return line.strip()
    return ""


def parse_turn(text: str | None, tool_names: tuple[str, ...] = ("search",)) -> Turn:
    """The graph's lenient reading of one executor reply (`parse(text, strict=False)`)."""
    return parse(text, strict=False, tool_names=tool_names)


def cut_before_answer(text: str) -> str:
    """The reply up to its <answer> tag (the paper trims the last executor turn before a replan)."""
    text = text or ""
    open_ = next((t for t in tags(bounded(text)) if t.name == "answer" and not t.closing), None)
    return (text[: open_.start] if open_ else text).rstrip()


def parse_yes_no(text: str | None) -> bool | None:
    """The planner's reflection verdict: True = replan. Reads the visible part first, then all."""
    raw = bounded(clean_text(text))
    for part in (remove_tags(split_think(raw)[1]), raw):
        for w in re.findall(r"[a-z]+", part.lower()):
            if w in ("yes", "replan", "y"):
                return True
            if w in ("no", "n"):
                return False
    return None


def extract_final_answer(text: str | None) -> str:
    """Best-effort answer from a forced final turn: <answer>, an Answer: line, else the visible
    text without any tool call (a forced turn may still try one)."""
    turn = parse(text)
    if turn.kind == "answer":
        return turn.answer
    if turn.kind == "tool_call":
        return ""
    rest = remove_blocks(split_think(bounded(clean_text(text)))[1], ("tool_call",))
    unclosed = next((t for t in tags(rest) if t.name == "tool_call" and not t.closing), None)
    return remove_tags(rest[: unclosed.start] if unclosed else rest).strip()
