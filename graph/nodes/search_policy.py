"""The executor's search policy (`Context.min_tool_calls`): no answer before N searches.

Small local models copy the plan as their answer without ever calling the tool. When the
executor answers (or writes junk) before its required searches, the turn is re-asked so that it
must be a search call, in the strongest way the backend allows:

- `prefill`: in-process models (transformers, llama.cpp) get the assistant turn prefilled with
  the opening of a search call; the model only writes the query;
- `tool_choice`: models with native tool calling are bound with the search tool forced;
- `message`: other models (text protocol) get a corrective user message.

The query the model writes is used; an empty or unreadable one falls back to the question itself,
so the forced turn always ends as a real search.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from mia.graph.nodes.calls import invoke, text_of
from mia.graph.prompts import render
from mia.graph.protocol import normalise_search_args, parse_turn, render_call

FORCED_STOP = ["<tool_response>", "</tool_response>", "</tool_call>"]


def required_searches(min_tool_calls: int, max_tool_calls: int, n_tools: int) -> int:
    """Searches still owed before an answer: min_tool_calls, capped by the budget (0 without tools)."""
    if n_tools == 0:
        return 0
    return max(0, min(int(min_tool_calls), int(max_tool_calls)))


def accepts_prefill(model: Any) -> bool:
    """In-process text backends continue a prefilled assistant turn; fakes may opt in."""
    if getattr(model, "supports_prefill", False):
        return True
    from mia.graph.models.text_model import TextChatModel

    return isinstance(model, TextChatModel)


def accepts_grammar(model: Any) -> bool:
    """Backends that constrain decoding to a grammar (llama.cpp); fakes may opt in."""
    return bool(getattr(model, "supports_grammar", False))


def with_query(tool: str, args: dict[str, Any], question: str) -> tuple[dict[str, Any], bool]:
    """A search's arguments with at least one query: the question when the model gave none.
    Returns (args, fell_back)."""
    if tool != "search":
        return args, False
    args = normalise_search_args(args)
    if args["query_list"]:
        return args, False
    return {"query_list": [question.strip()]}, True


@dataclass
class ForcedSearch:
    """The outcome of a forced search turn: messages to append and the pending call."""

    messages: list[BaseMessage]
    tool: str
    args: dict[str, Any]
    call_id: str | None
    usage: dict[str, Any]
    how: str
    notes: list[str] = field(default_factory=list)


def force_search(
    model: Any,
    conversation: list[BaseMessage],
    question: str,
    tools: list[Any],
    native: bool,
    done: int,
    needed: int,
    premature: AIMessage | None = None,
) -> ForcedSearch:
    """Re-ask the executor so that its turn is a search call (see the module docstring).

    `premature` (the reply that answered too early) stays in the history only when a corrective
    message answers it; prefill and tool_choice replace it."""
    names = tuple(t.name for t in tools)
    name = "search" if "search" in names else names[0]
    if native:
        reply, usage = invoke(model.bind_tools(tools, tool_choice=name), conversation, "executor")
        call = reply.tool_calls[0] if reply.tool_calls else None
        args = dict(call.get("args") or {}) if call and call.get("name") == name else {}
        args, fell_back = with_query(name, args, question) if name == "search" else (args, False)
        if call is None or call.get("name") != name or (name != "search" and not args):
            fell_back = True
            args = {"query_list": [question.strip()]} if name == "search" else args
        call_id = (call.get("id") if call else None) or f"call_{uuid.uuid4().hex[:24]}"
        kept = AIMessage(content=text_of(reply), tool_calls=[{"name": name, "args": args, "id": call_id}])
        return ForcedSearch(
            [kept], name, args, call_id, usage, "tool_choice", ["question used as the query"] if fell_back else []
        )

    extra: list[BaseMessage] = []
    if accepts_prefill(model):
        prefill = render("executor", "search_prefill")
        reply, usage = invoke(model, conversation, "executor", stop=FORCED_STOP, prefill=prefill)
        text = text_of(reply)
        if "<tool_call>" not in text:  # the backend returned only the continuation
            text = prefill + text
        how = "prefill"
    else:
        extra = [
            *([premature] if premature is not None else []),
            HumanMessage(content=render("executor", "must_search", done=done, needed=needed)),
        ]
        reply, usage = invoke(model, conversation + extra, "executor", stop=FORCED_STOP)
        text = text_of(reply)
        how = "message"
    turn = parse_turn(text, names)
    if turn.kind == "tool_call" and turn.tool:
        tool, args = turn.tool, dict(turn.arguments)
        args, fell_back = with_query(tool, args, question)
    else:
        tool, args, fell_back = name, {"query_list": [question.strip()]}, True
    think = f"<think>{turn.think}</think>\n" if turn.think else ""
    kept = AIMessage(content=think + render_call(tool, args))
    return ForcedSearch(
        extra + [kept], tool, args, None, usage, how, ["question used as the query"] if fell_back else []
    )
