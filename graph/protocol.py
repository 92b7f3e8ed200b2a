"""The executor's text protocol: `<think>…</think>`, then one `<tool_call>{json}</tool_call>` or
`<answer>…</answer>`, read robustly.

Small local models break the format in every possible way (single quotes, missing closing tags,
a bare JSON object, an "Answer:" line, arguments as a JSON string), so the parser repairs what it
can and reports `malformed` only when nothing usable is left; the executor node then asks again
or forces an answer. Nothing here raises on model output.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

from mia.graph.models.json_repair import JSONRepairError, parse_json_loose

TurnKind = Literal["tool_call", "answer", "malformed"]

_TOOL_RESPONSE = re.compile(r"<\s*tool_response\s*>", re.I)
_THINK_OPEN = re.compile(r"<\s*think\s*>", re.I)
_THINK_CLOSE = re.compile(r"<\s*/\s*think\s*>", re.I)
_CALL_OPEN = re.compile(r"<\s*tool_call\s*>", re.I)
_CALL_CLOSE = re.compile(r"<\s*/\s*tool_call\s*>", re.I)
_ANSWER_OPEN = re.compile(r"<\s*answer\s*>", re.I)
_ANSWER_CLOSE = re.compile(r"<\s*/\s*answer\s*>", re.I)
_ANY_TAG = re.compile(r"<\s*/?\s*(think|tool_call|answer|tool_response)\s*>", re.I)
_ANSWER_LINE = re.compile(r"\b(?:final\s+answer|answer)(?:\*\*)?\s*[:：]\s*(.*)$", re.I | re.M)


@dataclass
class Turn:
    """One parsed executor reply."""

    kind: TurnKind
    think: str = ""
    tool: str | None = None
    arguments: dict[str, Any] = field(default_factory=dict)
    answer: str = ""
    content: str = ""
    """The reply as kept in the conversation (cut after the first tool call)."""
    error: str = ""
    repaired: bool = False


def lenient_json(text: str) -> Any:
    """Parse JSON the way small models write it (fenced, single-quoted, unquoted keys, trailing
    commas, Python literals, missing closing brackets): the backends' repairer, objects or arrays."""
    return parse_json_loose(text, want=None)


def split_think(text: str) -> tuple[str, str]:
    """(thinking, rest). An unclosed <think> runs until the next protocol tag or the end."""
    open_ = _THINK_OPEN.search(text)
    close = _THINK_CLOSE.search(text)
    if close and (not open_ or open_.start() < close.start()):
        start = open_.end() if open_ else 0
        return text[start:close.start()].strip(), (text[: open_.start()] if open_ else "") + text[close.end():]
    if open_:
        nxt = _ANY_TAG.search(text, open_.end())
        while nxt and nxt.group(1).lower() == "think":
            nxt = _ANY_TAG.search(text, nxt.end())
        end = nxt.start() if nxt else len(text)
        return text[open_.end():end].strip(), text[: open_.start()] + text[end:]
    return "", text


def strip_think(text: str) -> str:
    """The visible part of a reply (what the paper forwards from the planner: text after </think>)."""
    return _ANY_TAG.sub("", split_think(text or "")[1]).strip() if text else ""


def _tagged(text: str, open_re: re.Pattern[str], close_re: re.Pattern[str]) -> tuple[str, int, int] | None:
    """Body of the first open..close block (a missing close tag runs to the next tag or the end)."""
    m = open_re.search(text)
    if not m:
        return None
    close = close_re.search(text, m.end())
    if close:
        return text[m.end():close.start()], m.start(), close.end()
    nxt = _ANY_TAG.search(text, m.end())
    end = nxt.start() if nxt else len(text)
    return text[m.end():end], m.start(), end


def normalise_call(obj: Any, tool_names: tuple[str, ...]) -> tuple[str | None, dict[str, Any]] | None:
    """(tool name, arguments) from whatever shape the model produced, or None."""
    if not isinstance(obj, dict):
        return None
    if "function" in obj and isinstance(obj["function"], dict):
        obj = obj["function"]
    name = obj.get("name") or obj.get("tool") or obj.get("tool_name")
    if isinstance(obj.get("function"), str):
        name = name or obj["function"]
    args: Any = None
    for key in ("arguments", "args", "parameters", "input"):
        if key in obj:
            args = obj[key]
            break
    if isinstance(args, str):
        try:
            args = lenient_json(args)
        except JSONRepairError:
            args = {"query_list": [args]} if (name or "search") == "search" else {"input": args}
    if args is None:
        args = {k: v for k, v in obj.items() if k not in ("name", "tool", "tool_name", "function")}
    if not isinstance(args, dict):
        args = {"query_list": args} if isinstance(args, list) else {"input": args}
    if not name and any(k in args for k in ("query_list", "query", "queries")):
        name = "search"
    if not name:
        return None
    name = str(name).strip()
    if name == "search":
        args = normalise_search_args(args)
    return name, args


def normalise_search_args(args: dict[str, Any]) -> dict[str, Any]:
    """Accept query / queries / query_list, a string or a list: always {'query_list': [str, ...]}."""
    value = args.get("query_list", args.get("queries", args.get("query")))
    if value is None and args:
        value = next(iter(args.values()))
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        value = [] if value is None else [str(value)]
    queries = [str(q).strip() for q in value if str(q).strip()]
    return {"query_list": queries}


def parse_turn(text: str | None, tool_names: tuple[str, ...] = ("search",)) -> Turn:
    """Read one executor reply: a tool call, an answer, or malformed (with the reason)."""
    raw = text or ""
    cut = _TOOL_RESPONSE.search(raw)
    if cut:  # the model started to invent the tool's reply
        raw = raw[: cut.start()]
    think, rest = split_think(raw)
    if not raw.strip():
        return Turn("malformed", error="empty reply", content=raw)

    call = _tagged(rest, _CALL_OPEN, _CALL_CLOSE)
    if call is not None:
        body = call[0]
        content = _cut_after_call(raw)
        try:
            got = normalise_call(lenient_json(body), tool_names)
        except JSONRepairError as exc:
            return Turn("malformed", think=think, content=content, error=f"tool call is not valid JSON ({exc})")
        if got is None:
            return Turn("malformed", think=think, content=content, error="tool call names no tool")
        name, args = got  # a search without a query is still a call: the executor node fills one in
        return Turn("tool_call", think=think, tool=name, arguments=args, content=content,
                    repaired=not _CALL_CLOSE.search(raw))

    answer = _tagged(rest, _ANSWER_OPEN, _ANSWER_CLOSE)
    if answer is not None and answer[0].strip():
        return Turn("answer", think=think, answer=answer[0].strip(), content=raw)

    visible = _ANY_TAG.sub("", rest).strip()
    if "{" in visible:  # a bare JSON object: a tool call or {"answer": ...}
        try:
            obj = lenient_json(visible[visible.find("{"):])
        except JSONRepairError:
            obj = None
        if isinstance(obj, dict) and isinstance(obj.get("answer"), (str, int, float)) and "name" not in obj:
            return Turn("answer", think=think, answer=str(obj["answer"]).strip(), content=raw, repaired=True)
        got = normalise_call(obj, tool_names) if isinstance(obj, dict) else None
        if got is not None:
            return Turn("tool_call", think=think, tool=got[0], arguments=got[1], content=raw, repaired=True)

    matches = list(_ANSWER_LINE.finditer(visible))
    line = matches[-1] if matches else None
    if line:
        value = line.group(1).strip() or _next_line(visible, line.end())
        if value:
            return Turn("answer", think=think, answer=value, content=raw, repaired=True)

    if visible:
        # The paper's rule: a turn without a tool call ends the attempt; its text is the answer.
        return Turn("answer", think=think, answer=visible, content=raw, repaired=True)
    return Turn("malformed", think=think, content=raw, error="no tool call and no answer after the thinking")


def _cut_after_call(raw: str) -> str:
    close = _CALL_CLOSE.search(raw)
    return raw[: close.end()] if close else raw


def _next_line(text: str, pos: int) -> str:
    for line in text[pos:].splitlines():
        if line.strip():
            return line.strip()
    return ""


def cut_before_answer(text: str) -> str:
    """The reply up to its <answer> tag (the paper trims the last executor turn before a replan)."""
    m = _ANSWER_OPEN.search(text or "")
    return (text[: m.start()] if m else text or "").rstrip()


def parse_yes_no(text: str | None) -> bool | None:
    """The planner's reflection verdict: True = replan. Reads the visible part first, then all."""
    for part in (strip_think(text or ""), text or ""):
        words = re.findall(r"[a-z]+", part.lower())
        for w in words:
            if w in ("yes", "replan", "y"):
                return True
            if w in ("no", "n"):
                return False
    return None


def extract_final_answer(text: str) -> str:
    """Best-effort answer from a forced final turn: <answer>, an Answer: line, else the visible
    text without any tool call (a forced turn may still try one)."""
    turn = parse_turn(text)
    if turn.kind == "answer":
        return turn.answer
    rest = split_think(text or "")[1]
    rest = re.sub(r"<\s*tool_call\s*>.*?(<\s*/\s*tool_call\s*>|$)", "", rest, flags=re.S | re.I)
    visible = _ANY_TAG.sub("", rest).strip()
    if turn.kind == "tool_call" or not visible:
        return ""
    return visible


def estimate_tokens(text: str) -> int:
    """A cheap token estimate (about 4 characters a token) for the context budget."""
    return len(text) // 4 + 1


def truncate_words(text: str, max_words: int) -> str:
    """Keep the first max_words whitespace words, with an omission marker (paper: 512/1024)."""
    words = text.split()
    if max_words <= 0 or len(words) <= max_words:
        return text
    return " ".join(words[:max_words]) + f" ... [{len(words) - max_words} words omitted]"
