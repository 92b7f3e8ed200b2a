"""Assembles the MIA graph:

    prepare -> retrieve_memory -> plan -> execute <-> tools
                                  |  ^
                                  v  | (yes, at most max_replans)
                               reflect -> replan
                                  | (no)
                               finalize -> judge -> memorise -> END

`memory_mode` none/trajectory-rag skip the planner and reflection; `judge_mode` off and
`memorise` False skip their nodes.
"""

from __future__ import annotations

from typing import Any, Literal

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from mia.graph.context import Context
from mia.graph.nodes.deps import Deps, default_deps
from mia.graph.nodes.execute import make_execute
from mia.graph.nodes.finalize import make_finalize, make_judge, make_memorise
from mia.graph.nodes.plan import make_plan
from mia.graph.nodes.prepare import make_prepare
from mia.graph.nodes.reflect import make_reflect, make_replan
from mia.graph.nodes.retrieve import make_retrieve_memory
from mia.graph.nodes.tools import make_tools_node
from mia.graph.state import InputState, OutputState, State


def after_retrieve(state: State, runtime: Runtime[Context]) -> Literal["plan", "execute"]:
    return "plan" if Context.coerce(runtime.context).memory_mode == "mia" else "execute"


def after_execute(state: State, runtime: Runtime[Context]) -> Literal["tools", "execute", "reflect", "finalize"]:
    ctx = Context.coerce(runtime.context)
    turn = state.get("last_turn")
    if turn == "tool_call":
        return "tools"
    if turn == "retry":
        return "execute"
    if ctx.memory_mode == "mia" and state.get("reflections", 0) < ctx.max_replans:
        return "reflect"
    return "finalize"


def after_reflect(state: State) -> Literal["replan", "finalize"]:
    return "replan" if state.get("last_turn") == "replan" else "finalize"


def after_finalize(state: State, runtime: Runtime[Context]) -> Literal["judge", "memorise", "__end__"]:
    ctx = Context.coerce(runtime.context)
    if ctx.judge_mode != "off":
        return "judge"
    return "memorise" if _memorises(ctx) else END


def after_judge(state: State, runtime: Runtime[Context]) -> Literal["memorise", "__end__"]:
    return "memorise" if _memorises(Context.coerce(runtime.context)) else END


def _memorises(ctx: Context) -> bool:
    return ctx.memorise and ctx.memory_mode != "none"


def build_builder(deps: Deps | None = None) -> StateGraph:
    """The uncompiled graph (for callers that compile it themselves)."""
    deps = deps or default_deps()
    g = StateGraph(State, context_schema=Context, input_schema=InputState, output_schema=OutputState)
    g.add_node("prepare", make_prepare(deps))
    g.add_node("retrieve_memory", make_retrieve_memory(deps))
    g.add_node("plan", make_plan(deps))
    g.add_node("execute", make_execute(deps))
    g.add_node("tools", make_tools_node(deps))
    g.add_node("reflect", make_reflect(deps))
    g.add_node("replan", make_replan(deps))
    g.add_node("finalize", make_finalize(deps))
    g.add_node("judge", make_judge(deps))
    g.add_node("memorise", make_memorise(deps))
    g.add_edge(START, "prepare")
    g.add_edge("prepare", "retrieve_memory")
    g.add_conditional_edges("retrieve_memory", after_retrieve)
    g.add_edge("plan", "execute")
    g.add_conditional_edges("execute", after_execute)
    g.add_edge("tools", "execute")
    g.add_conditional_edges("reflect", after_reflect)
    g.add_edge("replan", "execute")
    g.add_conditional_edges("finalize", after_finalize)
    g.add_conditional_edges("judge", after_judge)
    g.add_edge("memorise", END)
    return g


def build_graph(checkpointer: Any = None, store: Any = None, *, deps: Deps | None = None,
                name: str = "mia", **compile_kwargs: Any) -> Any:
    """The compiled MIA graph. `deps` swaps the model/memory/tool factories (tests use fakes);
    `store` is a LangGraph BaseStore (not MIA's memory, which lives in Chroma via `deps`)."""
    return build_builder(deps).compile(checkpointer=checkpointer, store=store, name=name, **compile_kwargs)


def recursion_limit(context: Context) -> int:
    """A LangGraph recursion limit that the budgets in `context` can never reach (each attempt:
    execute + tools per tool call, the malformed retries, the forced turn, reflect and replan)."""
    per_attempt = 2 * (context.max_tool_calls + 1) + context.max_format_retries + 4
    return 20 + per_attempt * (context.max_replans + 1)
