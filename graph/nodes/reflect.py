"""reflect and replan (reference 3.3). When the executor stops, the planner reads the trace and
says yes/no to replanning; on yes (at most `max_replans` times) it writes a supplementary plan,
the executor's last turn is cut before its <answer>, and execution continues on the same
history with the remaining budget. A replan that adds nothing (`adds_nothing`: only the plan's
steps or searches already made) is recorded but not followed with `drop_repeated_replan`: the
executor would only search and answer again (bench/e2e/repeated-replans.md has the figures)."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage
from langgraph.runtime import Runtime
from mia.graph.context import Context
from mia.graph.nodes.calls import invoke, text_of
from mia.graph.nodes.deps import Deps
from mia.graph.nodes.episode import build_trajectory
from mia.graph.nodes.plan import to_messages
from mia.graph.nodes.failure import trace_failure, unread_by_evidence
from mia.graph.nodes.steps import searches_made
from mia.graph.prompts.builder import (
    failure_replan_request,
    late_plan_message,
    planner_messages,
    reflection,
    replan_message,
    replan_request,
)
from mia.graph.protocol import PLAN_STOP, adds_nothing, cut_before_answer, parse_yes_no, searches_added, served_plan
from mia.graph.state import State, given


NO_FAILURE = "none shown"  # the reflection step's args.failure when the trace shows none


def make_reflect(deps: Deps):
    def reflect(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
        ctx = Context.coerce(runtime.context)
        if ctx.replan_when == "failure" or not state.get("planner_messages"):  # no plan yet: plan_when "failure"
            return judge_by_failure(state, ctx)
        trace = build_trajectory(state, ctx).to_trace_text(
            max_words_per_observation=ctx.max_observation_words, include_judgement=False
        )
        conversation = list(state.get("planner_messages") or [])
        conversation.append({"role": "user", "content": reflection(trace)})
        reply, usage = invoke(deps.chat_model(ctx, "planner"), to_messages(conversation), "planner")
        raw = text_of(reply)
        verdict = parse_yes_no(raw)
        decision = "yes" if verdict else "no"
        conversation.append({"role": "assistant", "content": decision})
        update: dict[str, Any] = {
            "planner_messages": conversation,
            "reflections": state.get("reflections", 0) + 1,
            "steps": [
                {
                    "kind": "reflection",
                    "content": decision,
                    **({"args": {"unclear": True, "raw": raw[:200]}} if verdict is None else {}),
                }
            ],
            "usage": usage,
            "last_turn": "replan" if verdict else "accept",
        }
        if verdict is None:
            update["warnings"] = [f"unclear reflection verdict, taken as no: {raw[:80]!r}"]
        return update

    return reflect


def judge_by_failure(state: State, ctx: Context) -> dict[str, Any]:
    """Reflection without a model call: replan only on a failure the trace shows (mia.graph.nodes.failure).
    When the agent's own search results settle it (a dated comparison answered against its years),
    the step is marked `settled` and replan hands the executor that message instead of a plan.
    With `evidence_search`, an answer to such a question given before both names' own paragraphs
    were read is first held back once, and the graph searches the unread names (`evidence_round`)."""
    steps, answer = list(state.get("steps") or []), state.get("answer") or ""
    answered = state.get("stop_reason") == "answered"
    if answered and ctx.evidence_search and not state.get("evidence_rounds"):
        if state.get("tool_calls", 0) < ctx.max_tool_calls and (
            names := unread_by_evidence(steps, answer, state["question"])
        ):
            return evidence_round(state, names)
    failure, settled = trace_failure(steps, answer, state.get("stop_reason") or "", state["question"])
    args: dict[str, Any] = {"failure": failure or NO_FAILURE, **({"settled": True} if settled else {})}
    return {
        "reflections": state.get("reflections", 0) + 1,
        "steps": [{"kind": "reflection", "content": "yes" if failure else "no", "args": args}],
        "last_turn": "replan" if failure else "accept",
    }


def evidence_round(state: State, unread: list[str]) -> dict[str, Any]:
    """Hold the answer back: the graph searches the unread names as the executor's next turn, and the
    executor answers again from them. Not a reflection round (`reflections` is unchanged), so the next
    answer is still checked against what the searches read."""
    args = {"failure": f"answered before reading {' and '.join(unread)}", "settled": True, "unread": unread}
    return {
        "evidence_rounds": state.get("evidence_rounds", 0) + 1,
        "steps": [{"kind": "reflection", "content": "yes", "args": args}],
        "last_turn": "replan",
    }


def _last_reflection(steps: list[Any]) -> dict[str, Any]:
    last = next((s for s in reversed(steps) if isinstance(s, dict) and s.get("kind") == "reflection"), None)
    return dict((last or {}).get("args") or {})


def shown_in_reflection(steps: list[Any]) -> str:
    """The failure the last reflection step recorded (replan_when "failure"), or "" (none, or the planner's yes/no)."""
    failure = str(_last_reflection(steps).get("failure") or "")
    return "" if failure == NO_FAILURE else failure


def make_replan(deps: Deps):
    def replan(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
        ctx = Context.coerce(runtime.context)
        conversation = list(state.get("planner_messages") or [])
        failure = shown_in_reflection(state.get("steps") or [])
        last = _last_reflection(state.get("steps") or [])
        if last.get("unread"):  # an evidence round: the graph searches, the executor answers again
            step = {"kind": "replan", "content": "", "args": {"settled": True, "unread": last["unread"]}}
            return {
                "replans": state.get("replans", 0) + 1,
                "evidence_queries": last["unread"],
                **drop_answer(state, step),
            }
        if failure and last.get("settled"):  # no plan needed
            step = {"kind": "replan", "content": "", "args": {"settled": True}}
            return {"replans": state.get("replans", 0) + 1, **continue_with(state, "", failure, step)}
        if not conversation:  # plan_when "failure": the first plan, written after the failed attempt
            return late_plan(deps, state, ctx, failure)
        if failure:  # the trace and its failure are the request (replan_when "failure")
            trace = build_trajectory(state, ctx).to_trace_text(
                max_words_per_observation=ctx.max_observation_words, include_judgement=False
            )
            request = failure_replan_request(trace, failure, state["question"])
        else:
            request = replan_request(state["question"])
        conversation.append({"role": "user", "content": request})
        reply, usage = invoke(deps.chat_model(ctx, "planner"), to_messages(conversation), "planner", stop=PLAN_STOP)
        raw = text_of(reply)
        text = served_plan(raw, state["question"])
        conversation.append({"role": "assistant", "content": text})
        if ctx.drop_repeated_replan and adds_nothing(
            text, state.get("plan") or "", searches_made(state.get("steps") or [])
        ):
            return {
                "planner_messages": conversation,
                "replans": state.get("replans", 0) + 1,
                "steps": [{"kind": "replan", "content": text, "args": {"dropped": "it repeats the plan"}}],
                "usage": usage,
                "last_turn": "accept",
            }
        return {
            "planner_messages": conversation,
            "replans": state.get("replans", 0) + 1,
            "usage": usage,
            **continue_with(state, text, replan_message(text), {"kind": "replan", "content": text}),
        }

    return replan


def late_plan(deps: Deps, state: State, ctx: Context, failure: str) -> dict[str, Any]:
    """The planner's first plan for a question the executor failed alone (plan_when "failure"): the
    planner prompt with the retrieved memories and the failed attempt; the executor's answer is held
    back and it continues with the plan and the failure named. A plan that only repeats the searches
    made is not followed (drop_repeated_replan): the answer stands."""
    trace = build_trajectory(state, ctx).to_trace_text(
        max_words_per_observation=ctx.max_observation_words, include_judgement=False
    )
    conversation = planner_messages(
        state["question"],
        state.get("memory_text") or "",
        caption=given(state, "caption") or "",
        style=ctx.plan_style,
        attempt=(trace, failure),
    )
    reply, usage = invoke(deps.chat_model(ctx, "planner"), to_messages(conversation), "planner", stop=PLAN_STOP)
    text = served_plan(text_of(reply), state["question"])
    conversation.append({"role": "assistant", "content": text})
    shown = [str(m["id"]) for m in state.get("memories") or [] if m.get("id")]  # the planner saw them now
    base = {
        "planner_messages": conversation,
        "replans": state.get("replans", 0) + 1,
        "usage": usage,
        "used_memory_ids": shown,
    }
    if not text or (ctx.drop_repeated_replan and not searches_added(text, searches_made(state.get("steps") or []))):
        step = {
            "kind": "replan",
            "content": text,
            "args": {"first_plan": True, "dropped": "it repeats the searches made"},
        }
        return {**base, "steps": [step], "last_turn": "accept"}
    step = {"kind": "replan", "content": text, "args": {"first_plan": True}}
    return {
        **base,
        "plan": text,
        "closed_plan": text,
        **continue_with(state, text, late_plan_message(text, failure), step),
    }


def drop_answer(state: State, step: dict[str, Any]) -> dict[str, Any]:
    """The update that takes the executor's answer turn out of the history (its step stays in the
    trace), so that its next turn follows the last observation."""
    history = list(state.get("messages") or [])
    last = history[-1] if history else None
    removed = [RemoveMessage(id=last.id)] if isinstance(last, AIMessage) and not last.tool_calls and last.id else []
    return {"messages": removed, "steps": [step], "answer": "", "last_turn": "replan", "format_retries": 0}


def continue_with(state: State, plan: str, handed: str, step: dict[str, Any]) -> dict[str, Any]:
    """The update that hands the executor a plan mid-episode: its last turn cut before <answer>
    (same id: add_messages replaces it), then `handed`; the answer is cleared and execution goes on."""
    messages: list[Any] = []
    history = list(state.get("messages") or [])
    last = history[-1] if history else None
    if isinstance(last, AIMessage) and not last.tool_calls:
        messages.append(AIMessage(content=cut_before_answer(text_of(last)) or "<think>", id=last.id))
    messages.append(HumanMessage(content=handed))
    return {
        "replan": plan,
        "messages": messages,
        "steps": [step],
        "answer": "",
        "last_turn": "replan",
        "format_retries": 0,
    }
