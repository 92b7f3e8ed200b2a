"""execute: one executor turn of the ReAct loop.

The reply is read as a tool call, an answer, or malformed (repaired by the protocol parser when
possible, asked again a bounded number of times otherwise). Budgets (tool calls, estimated
context size, format retries) end in one forced final-answer turn, so every run ends with an
answer and never with an exception from model output.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langgraph.runtime import Runtime

from mia.graph.context import Context
from mia.graph.nodes.calls import invoke, text_of
from mia.graph.nodes.deps import Deps
from mia.graph.nodes.planned_search import EVIDENCE, next_planned_call, planned_turn
from mia.graph.nodes.search_policy import accepts_grammar, accepts_prefill, force_search, required_searches, with_query
from mia.graph.images import load_image
from mia.graph.prompts import render
from mia.graph.prompts.builder import executor_messages, force_answer
from mia.graph.protocol import ToolCall, Turn, estimate_tokens, extract_final_answer, parse_turn, render_call
from mia.graph.protocol.grammar import turn_grammar
from mia.graph.state import State, given

TEXT_STOP = ["<tool_response>", "</tool_response>"]
ANSWER_PREFILL = "<answer>"


def uses_native_tools(model: Any, protocol: str) -> bool:
    """native: always; text: never; auto: when the backend has real tool calling (local models,
    which render tools into the prompt anyway, get the text protocol)."""
    if protocol == "native":
        return True
    if protocol == "text":
        return False
    module = type(model).__module__
    if module.startswith("mia.graph.models") or "fake" in module:
        return False
    from langchain_core.language_models import BaseChatModel

    return type(model).bind_tools is not BaseChatModel.bind_tools


def sees_image(model: Any, ctx: Context) -> bool:
    """Whether the executor gets the question's image: on, off, or auto (its model's LangChain
    profile says it accepts images; local models have no profile and get the caption only)."""
    if ctx.executor_vision != "auto":
        return ctx.executor_vision == "on"
    profile = getattr(model, "profile", None) or {}
    return bool(profile.get("image_inputs")) if isinstance(profile, dict) else False


def initial_messages(
    state: State, ctx: Context, tools: list[Any], native: bool, image_block: dict[str, Any] | None = None
) -> list[BaseMessage]:
    """System prompt with the tools, then the question (with its image caption, and the image
    itself for a multimodal executor) with the plan (and, for trajectory-rag, the similar past
    trajectories): the shared prompt builder's executor prompt."""
    memories = (state.get("memory_text") or "") if ctx.memory_mode == "trajectory-rag" else ""
    system, user = executor_messages(
        state["question"],
        (state.get("plan") or "") if ctx.plan_in_prompt else "",
        tools,
        native,
        memories,
        caption=given(state, "caption") or "",
        image_block=image_block,
        plan_style=ctx.plan_style,
    )
    return [SystemMessage(content=system["content"]), HumanMessage(content=user["content"])]


def make_execute(deps: Deps):
    def execute(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
        ctx = Context.coerce(runtime.context)
        model = deps.chat_model(ctx, "executor")
        tools = deps.tools(ctx, given(state, "paragraphs")) if ctx.max_tool_calls > 0 else []
        native = bool(tools) and uses_native_tools(model, ctx.tool_protocol)
        history: list[BaseMessage] = list(state.get("messages") or [])
        new: list[BaseMessage] = []
        if not history:
            image = given(state, "image")
            block = (
                load_image(image).content_block() if image not in (None, "", b"") and sees_image(model, ctx) else None
            )
            new = initial_messages(state, ctx, tools, native, block)
        conversation = history + new

        reason = ""
        if state.get("tool_calls", 0) >= ctx.max_tool_calls:
            reason = "budget"
        if not reason and sum(estimate_tokens(text_of(m)) for m in conversation) > ctx.max_context_tokens:
            reason = "context"
        if reason:
            return forced_answer(model, conversation, new, reason)
        if (unread := state.get("evidence_queries")) and "search" in {t.name for t in tools}:  # an evidence round
            turn_update = planned_turn(list(unread), native, EVIDENCE)
            return {**turn_update, "messages": new + turn_update["messages"], "evidence_queries": []}
        planned = next_planned_call(state, ctx, tools)
        if planned is not None:  # the plan's searches, made by the graph before the executor's turn
            turn_update = planned_turn(planned, native)
            return {**turn_update, "messages": new + turn_update["messages"]}

        bound = model.bind_tools(tools) if native else model
        names = tuple(t.name for t in tools) or ("search",)
        done = state.get("tool_calls", 0)
        needed = required_searches(ctx.min_tool_calls, ctx.max_tool_calls, len(tools))
        kwargs: dict[str, Any] = {} if native else {"stop": TEXT_STOP}
        if not native and ctx.turn_grammar and accepts_grammar(model):
            kwargs["grammar"] = turn_grammar(names, call=bool(tools), answer=done >= needed)
        reply, usage = invoke(bound, conversation, "executor", **kwargs)
        text = text_of(reply)
        if reply.tool_calls:  # native tool calling: the backend parsed the call; the same typed Turn
            call = reply.tool_calls[0]
            turn = Turn(
                "tool_call", think=text.strip(), content=text, call=ToolCall(call["name"], dict(call.get("args") or {}))
            )
            kept: AIMessage = AIMessage(content=text, tool_calls=[call], id=reply.id)
            call_id = call.get("id")
        else:
            turn = parse_turn(text, names)
            kept = AIMessage(content=turn.content if turn.kind == "tool_call" else text)
            call_id = None
        turn_kind, args, think = turn.kind, turn.arguments, turn.think
        tool = turn.tool or ""  # read only for a tool_call turn, which always names its tool

        warnings: list[str] = []
        if turn_kind in ("answer", "malformed") and done < needed:
            forced_search = force_search(
                model,
                conversation,
                state["question"],
                tools,
                native,
                done,
                needed,
                premature=AIMessage(content=text or "(empty reply)"),
            )
            usage = _add(usage, forced_search.usage)
            extra = "; ".join(forced_search.notes)
            warnings.append(
                f"the executor {'answered' if turn_kind == 'answer' else 'wrote a malformed reply'} "
                f"after {done} of {needed} required searches: search forced by "
                f"{forced_search.how}{' (' + extra + ')' if extra else ''}"
            )
            steps = [{"kind": "tool_call", "content": "", "tool": forced_search.tool, "args": forced_search.args}]
            return {
                "usage": usage,
                "messages": new + forced_search.messages,
                "steps": steps,
                "last_turn": "tool_call",
                "warnings": warnings,
                "pending_tool": {"name": forced_search.tool, "args": forced_search.args, "id": forced_search.call_id},
            }
        if turn_kind == "tool_call":
            args, fell_back = with_query(tool, args, state["question"])
            if fell_back:  # the history shows the call that actually ran
                warnings.append("the executor's search had no query: the question was used as the query")
                if reply.tool_calls:
                    kept = AIMessage(content=text, tool_calls=[{**reply.tool_calls[0], "args": args}], id=reply.id)
                else:
                    kept = AIMessage(content=render_call(tool, args))

        update: dict[str, Any] = {"usage": usage}
        if warnings:
            update["warnings"] = warnings
        steps = [{"kind": "thought", "content": think}] if think else []
        if turn_kind == "tool_call":
            if not tools or state.get("tool_calls", 0) >= ctx.max_tool_calls:
                plain = AIMessage(content=text or turn_kind)  # no dangling native tool call
                forced = forced_answer(model, conversation + [plain], new + [plain], "budget")
                forced["usage"] = _add(usage, forced["usage"])
                return forced
            steps.append({"kind": "tool_call", "content": "", "tool": tool, "args": args})
            update.update(
                messages=new + [kept],
                steps=steps,
                last_turn="tool_call",
                pending_tool={"name": tool, "args": args, "id": call_id},
            )
        elif turn_kind == "answer":
            steps.append({"kind": "answer", "content": turn.answer})
            update.update(
                messages=new + [kept], steps=steps, last_turn="answer", answer=turn.answer, stop_reason="answered"
            )
        else:
            retries = state.get("format_retries", 0) + 1
            if retries > ctx.max_format_retries:
                forced = forced_answer(model, conversation + [kept], new + [kept], "format")
                forced["usage"] = _add(usage, forced["usage"])
                forced["format_retries"] = retries
                return forced
            ask = HumanMessage(content=render("executor", "malformed", error=turn.error))
            update.update(
                messages=new + [kept, ask],
                steps=steps,
                last_turn="retry",
                format_retries=retries,
                warnings=warnings + [f"malformed executor reply ({turn.error})"],
            )
        return update

    return execute


def forced_answer(model: Any, conversation: list[BaseMessage], new: list[BaseMessage], reason: str) -> dict[str, Any]:
    """One last turn without tools whose text is taken as the answer, whatever its shape."""
    order = HumanMessage(content=force_answer(reason))
    if accepts_prefill(model):
        # In-process models continue an opened <answer>: a small model that was just shown a tool
        # result otherwise tends to start a <tool_response> of its own and stop with nothing.
        reply, usage = invoke(
            model, conversation + [order], "executor", stop=TEXT_STOP + ["</answer>"], prefill=ANSWER_PREFILL
        )
        body = text_of(reply).split("</answer>")[0]
        body = body[len(ANSWER_PREFILL) :] if body.startswith(ANSWER_PREFILL) else body  # some backends echo it
        text = ANSWER_PREFILL + body + "</answer>"
    else:
        reply, usage = invoke(model, conversation + [order], "executor", stop=TEXT_STOP)
        text = text_of(reply)
    answer = extract_final_answer(text)
    kept = AIMessage(content=text)
    steps = [{"kind": "answer", "content": answer}]
    return {
        "messages": new + [order, kept],
        "steps": steps,
        "usage": usage,
        "last_turn": "answer",
        "answer": answer,
        "stop_reason": f"forced:{reason}",
        "pending_tool": None,
    }


def _add(a: dict, b: dict) -> dict:
    out = {role: dict(c) for role, c in a.items()}
    for role, counts in b.items():
        mine = out.setdefault(role, {})
        for k, v in counts.items():
            mine[k] = mine.get(k, 0) + v
    return out
