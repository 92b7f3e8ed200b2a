"""tools: runs the executor's pending tool call. A failing or unknown tool becomes an error
observation the executor can react to; nothing a tool does can crash the run."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from langchain_core.messages import HumanMessage, ToolMessage
from langgraph.runtime import Runtime
from mia.graph.context import Context
from mia.graph.nodes.deps import Deps
from mia.graph.nodes.steps import searches_made
from mia.graph.prompts import render
from mia.graph.prompts.builder import observation
from mia.graph.protocol import clean_text, escape_untrusted, query_key, truncate_words, unfilled_hop
from mia.graph.state import State, given


class ToolRun(NamedTuple):
    """A tool call's observation text, whether the tool answered, and the sources it read."""

    text: str
    ok: bool
    sources: tuple[str, ...] = ()


def run_tool(tools: list[Any], name: str, args: dict[str, Any]) -> ToolRun:
    """Invoke the tool as a tool call, so that a `content_and_artifact` tool (mia's own) hands over
    the sources it read; any other tool's plain result is its text."""
    by_name = {t.name: t for t in tools}
    tool = by_name.get(name)
    if tool is None:
        return ToolRun(
            f"Error: there is no tool named {name!r}. Available tools: {', '.join(by_name) or 'none'}.", False
        )
    try:
        result = tool.invoke({"name": name, "args": args, "id": "mia-tool-call", "type": "tool_call"})
    except Exception as exc:  # tools are outside code: report, do not crash
        return ToolRun(
            f"Error: the tool {name!r} failed ({type(exc).__name__}: {exc}). Try different arguments.", False
        )
    artifact = getattr(result, "artifact", None)
    sources = artifact.get("sources") if isinstance(artifact, dict) else None
    if not isinstance(result, str):
        result = getattr(result, "content", None) or result
    text = clean_text(result).strip() or "(no results)"  # tool text enters the graph here
    return ToolRun(text, True, tuple(clean_text(str(s)) for s in sources) if isinstance(sources, list) else ())


def split_queries(args: dict[str, Any], hold: Callable[[str], bool]) -> tuple[dict[str, Any], list[str]]:
    """A search call's arguments without the queries `hold` picks, and those queries."""
    queries = args.get("query_list")
    if not isinstance(queries, list):
        return args, []
    held = [str(q) for q in queries if hold(str(q))]
    return ({**args, "query_list": [q for q in queries if not hold(str(q))]} if held else args), held


def drop_repeated_queries(
    args: dict[str, Any], earlier_steps: Sequence[Mapping[str, Any]]
) -> tuple[dict[str, Any], list[str]]:
    """A search call's arguments without the queries this episode already ran (Context.repeated_search
    "cached"), and those queries. Their results are in the executor's context already: running
    them again costs a tool call's tokens and shows nothing new."""
    done = {query_key(q) for q in searches_made(earlier_steps)}
    return split_queries(args, lambda q: query_key(q) in done)


def held_back(
    args: dict[str, Any], earlier_steps: Sequence[Mapping[str, Any]], ctx: Context, plan: str
) -> tuple[dict[str, Any], list[str]]:
    """The call's arguments without the queries it should not run, and a note for each kind held
    back: a hop plan's unfilled placeholder ("#1 father" finds nothing about the father; the executor
    is told to fill it, which is the next hop) and, with repeated_search "cached", a query already run."""
    notes = []
    if ctx.plan_style == "hops" and plan:  # no plan (plain ReAct): no placeholders to fill
        args, unfilled = split_queries(args, unfilled_hop)
        if unfilled:
            notes.append(render("executor", "unfilled_hop", queries="; ".join(f'"{q}"' for q in unfilled)))
    if ctx.repeated_search == "cached":
        args, repeated = drop_repeated_queries(args, earlier_steps)
        if repeated:  # the queries not run again are named first, their results are above
            notes.append(render("executor", "repeated_search", queries="; ".join(f'"{q}"' for q in repeated)))
    return args, notes


def make_tools_node(deps: Deps):
    def tools(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
        ctx = Context.coerce(runtime.context)
        pending = state.get("pending_tool") or {}
        name, args = pending.get("name") or "", dict(pending.get("args") or {})
        args, notes = held_back(args, list(state.get("steps") or [])[:-1], ctx, state.get("plan") or "")
        try:
            available = deps.tools(ctx, given(state, "paragraphs"))
        except Exception as exc:
            available, ran = [], ToolRun(f"Error: tools are unavailable ({type(exc).__name__}: {exc}).", False)
        else:
            ran = run_tool(available, name, args) if args.get("query_list") or not notes else ToolRun("", True)
        if notes:
            ran = ran._replace(text="\n".join([*notes, ran.text]).strip())
        text, ok = ran.text, ran.ok
        text = truncate_words(text, ctx.max_observation_words)
        fenced = escape_untrusted(text)  # a document cannot close the <tool_response> fence
        if pending.get("id"):
            message: Any = ToolMessage(content=fenced, tool_call_id=pending["id"], name=name)
        else:
            message = HumanMessage(content=observation(text))
        update: dict[str, Any] = {
            "messages": [message],
            "steps": [{"kind": "observation", "content": text, "tool": name, "sources": list(ran.sources)}],
            "tool_calls": state.get("tool_calls", 0) + 1,
            "pending_tool": None,
        }
        if not ok:
            update["warnings"] = [text[:200]]
        return update

    return tools
