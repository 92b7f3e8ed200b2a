"""Assembles the MIA graph:

    prepare -> retrieve_memory ---------> execute <-> tools       (plan_when "failure", the default)
                     |                     ^  |  ^
                     +--> plan ------------+  v  | (a failure shown, at most max_replans)
           (plan_when "start", the paper)  reflect -> replan  (the first plan, or a supplementary one;
                                              | (none)          one that adds nothing -> finalize)
                                           finalize -> judge -> memorise -> END

`memory_mode` none/trajectory-rag skip the planner and reflection; `judge_mode` off and
`memorise` False skip their nodes. `plan_when` "failure" skips `plan` (unless the input presets
one): the executor answers first, and `replan` writes the first plan only after a failure the trace
shows.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, cast

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from pydantic import BaseModel, Field

from mia.graph.context import Context
from mia.graph.nodes.deps import Deps, default_deps
from mia.graph.nodes.execute import make_execute
from mia.graph.nodes.finalize import make_finalize, make_judge, make_memorise
from mia.graph.nodes.plan import make_plan
from mia.graph.nodes.prepare import make_prepare
from mia.graph.nodes.reflect import make_reflect, make_replan
from mia.graph.nodes.retrieve import close_question, make_retrieve_memory
from mia.graph.nodes.tools import make_tools_node
from mia.graph.state import InputState, OutputState, State
from mia.graph.tracing import in_role


def after_retrieve(state: State, runtime: Runtime[Context]) -> Literal["plan", "execute"]:
    ctx = Context.coerce(runtime.context)
    preset = bool((state.get("plan") or "").strip())  # a plan given in the input (training) is used at once
    return "plan" if ctx.memory_mode == "mia" and (ctx.plan_when == "start" or preset) else "execute"


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


def after_replan(state: State) -> Literal["execute", "finalize"]:
    return "execute" if state.get("last_turn") == "replan" else "finalize"


def after_finalize(state: State, runtime: Runtime[Context]) -> Literal["judge", "memorise", "close_question"]:
    ctx = Context.coerce(runtime.context)
    if ctx.judge_mode != "off":
        return "judge"
    return "memorise" if _memorises(ctx) else "close_question"


def after_judge(state: State, runtime: Runtime[Context]) -> Literal["memorise", "close_question"]:
    return "memorise" if _memorises(Context.coerce(runtime.context)) else "close_question"


def _memorises(ctx: Context) -> bool:
    return ctx.memorise and ctx.memory_mode != "none"


def build_builder(deps: Deps | None = None) -> StateGraph[State, Context, InputState, OutputState]:
    """The uncompiled graph (for callers that compile it themselves)."""
    deps = deps or default_deps()
    g = StateGraph(State, context_schema=Context, input_schema=InputState, output_schema=OutputState)
    g.add_node("prepare", in_role(make_prepare(deps), "captioner"), metadata={"role": "captioner"})
    g.add_node("retrieve_memory", make_retrieve_memory(deps))
    g.add_node("plan", in_role(make_plan(deps), "planner"), metadata={"role": "planner"})
    g.add_node("execute", in_role(make_execute(deps), "executor"), metadata={"role": "executor"})
    g.add_node("tools", make_tools_node(deps))
    g.add_node("reflect", in_role(make_reflect(deps), "planner"), metadata={"role": "planner"})
    g.add_node("replan", in_role(make_replan(deps), "planner"), metadata={"role": "planner"})
    g.add_node("finalize", make_finalize(deps))
    g.add_node("judge", in_role(make_judge(deps), "judge"), metadata={"role": "judge"})
    g.add_node("memorise", in_role(make_memorise(deps), "manager"), metadata={"role": "manager"})
    g.add_edge(START, "prepare")
    g.add_edge("prepare", "retrieve_memory")
    g.add_conditional_edges("retrieve_memory", after_retrieve)
    g.add_edge("plan", "execute")
    g.add_conditional_edges("execute", after_execute)
    g.add_edge("tools", "execute")
    g.add_conditional_edges("reflect", after_reflect)
    g.add_conditional_edges("replan", after_replan)
    g.add_conditional_edges("finalize", after_finalize)
    g.add_conditional_edges("judge", after_judge)
    g.add_node("close_question", close_question)
    g.add_edge("memorise", "close_question")
    g.add_edge("close_question", END)
    return g


class AskInput(BaseModel):
    """What a caller of MIA as a tool gives: only the question."""

    question: str = Field(description="The question to research and answer.")


class MiaGraph(CompiledStateGraph[Any, Context, Any, Any]):
    """The compiled MIA graph. Only `as_tool` differs: the graph's input also takes gold answers,
    sandbox paragraphs and a preset plan, which an agent calling MIA as a tool must not see."""

    def as_tool(
        self,
        args_schema: Any = None,
        *,
        name: str | None = None,
        description: str | None = None,
        arg_types: dict[str, type] | None = None,
    ) -> BaseTool:
        """A tool whose schema is only the question and whose result is the answer (the graph's
        other outputs stay in the trace). An explicit `args_schema`/`arg_types` keeps LangChain's
        behaviour."""
        if args_schema is not None or arg_types is not None:
            return super().as_tool(args_schema, name=name, description=description, arg_types=arg_types)

        def run_config(config: RunnableConfig) -> RunnableConfig:
            # an agent's default limit (25 steps) is below what MIA's default budgets may take
            return {**config, "recursion_limit": max(config.get("recursion_limit") or 0, recursion_limit(Context()))}

        def ask(question: str, config: RunnableConfig) -> str:
            return str(self.invoke({"question": question}, config=run_config(config)).get("answer") or "")

        async def aask(question: str, config: RunnableConfig) -> str:
            out = await self.ainvoke({"question": question}, config=run_config(config))
            return str(out.get("answer") or "")

        return StructuredTool.from_function(
            func=ask,
            coroutine=aask,
            name=name or self.get_name(),
            args_schema=AskInput,
            description=description
            or "Research a question: recall workflows that worked for similar questions, "
            "plan, search, check the plan, and answer.",
        )


def build_graph(
    checkpointer: Any = None,
    store: Any = None,
    *,
    deps: Deps | None = None,
    models: Mapping[str, Any] | None = None,
    name: str = "mia",
    **compile_kwargs: Any,
) -> MiaGraph:
    """The compiled MIA graph. `deps` swaps the model/memory/tool factories (tests use fakes);
    `models` hands roles chat model objects (`{"executor": ChatOpenAI(...)}`) instead of specs.
    `store` is the LangGraph store (`runtime.store`); a `MiaStore` is also the graph's own memory
    (retrieval and memorising go to it), any other BaseStore is only passed on to the nodes'
    runtime, and MIA's memory stays in the data directory's Chroma. The checkpointer and the store
    may also be `postgresql://...` URLs (and the checkpointer a SQLite path): see mia.graph.persistence."""
    from mia.graph.integrations.store import MiaStore
    from mia.graph.persistence import resolve_checkpointer, resolve_store

    store = resolve_store(store)
    if models:
        deps = (deps or default_deps()).with_models(models)
    if isinstance(store, MiaStore):
        deps = (deps or default_deps()).with_memory_store(store.memory)
    graph = build_builder(deps).compile(
        checkpointer=resolve_checkpointer(checkpointer), store=store, name=name, **compile_kwargs
    )
    graph.__class__ = MiaGraph  # compile() makes a CompiledStateGraph; MiaGraph adds no state
    # LangGraph's default of 25 steps is below what the default budgets may take (a caller's
    # explicit recursion_limit still wins)
    return cast(MiaGraph, graph).with_config(recursion_limit=recursion_limit(Context()))


def recursion_limit(context: Context) -> int:
    """A LangGraph recursion limit that the budgets in `context` can never reach (each attempt:
    execute + tools per tool call, the malformed retries, the forced turn, reflect and replan;
    one more attempt for an evidence round)."""
    per_attempt = 2 * (context.max_tool_calls + 1) + context.max_format_retries + 4
    return 20 + per_attempt * (context.max_replans + 1 + int(context.evidence_search))
