"""Scripted stand-ins for the graph's outside world (chat models, memory store, tools, judge)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import StructuredTool
from pydantic import Field

from mia.graph.context import Context
from mia.graph.judge.verdict import JudgeMethod, Verdict
from mia.graph.nodes.deps import Deps
from mia.memory import MemoryRecord, Outcome, Retrieved, ScoredMemory, ScoredTrajectory, Trajectory


class ScriptedChatModel(BaseChatModel):
    """Replies from a script, in order (a str, an AIMessage, or a callable(messages) -> str).
    Records every prompt. bind_tools returns itself (langchain-core's fakes do not have it)."""

    script: list[Any] = Field(default_factory=list)
    prompts: list[list[BaseMessage]] = Field(default_factory=list)
    bound_tools: list[Any] = Field(default_factory=list)
    fallback: str = "<answer>fallback</answer>"
    call_kwargs: list[dict[str, Any]] = Field(default_factory=list)
    bind_kwargs: list[dict[str, Any]] = Field(default_factory=list)
    supports_prefill: bool = False  # like the local backends: continue a prefilled assistant turn
    supports_grammar: bool = False  # like llama.cpp: constrain decoding to a grammar (recorded, not applied)
    delay_s: float = 0.0  # seconds each reply takes (the usage counter times model calls)

    @property
    def _llm_type(self) -> str:
        return "scripted-fake"

    def _generate(
        self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        self.prompts.append(list(messages))
        self.call_kwargs.append({"stop": stop, **kwargs})
        item = self.script.pop(0) if self.script else self.fallback
        if callable(item):
            item = item(messages)
        message = item if isinstance(item, AIMessage) else AIMessage(content=str(item))
        message.usage_metadata = {
            "input_tokens": 10,
            "output_tokens": 5,
            "total_tokens": 15,
            "input_token_details": {"cache_read": 4},
        }  # as llama.cpp and OpenAI report it
        if self.delay_s:
            time.sleep(self.delay_s)
        return ChatResult(generations=[ChatGeneration(message=message)])

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:
        self.bound_tools = list(tools)
        self.bind_kwargs.append(dict(kwargs))
        return self


class FakeStore:
    """A scripted MemoryStore: retrieve returns the memories it was given (as the real store's
    `Retrieved`), memorise records the call and returns a real `MemoryRecord`."""

    def __init__(
        self, positives: list[ScoredMemory] | None = None, negatives: list[ScoredMemory] | None = None
    ) -> None:
        self.positives = positives or []
        self.negatives = negatives or []
        self.memorised: list[Any] = []
        self.logged: list[Trajectory] = []
        self.stats: list[tuple[list[str], bool]] = []
        self.retrieve_calls: list[tuple] = []

    def retrieve(
        self,
        question: str,
        namespace: str = "default",
        k_pos: int = 2,
        k_neg: int = 2,
        *,
        caption: str = "",
        caption_weight: float = 0.2,
        min_similarity: float | None = None,
    ) -> Retrieved:
        self.retrieve_calls.append((question, namespace, k_pos, k_neg))
        shown = [m for m in self.positives + self.negatives if min_similarity is None or m.similarity >= min_similarity]
        pos = [m for m in self.positives if m in shown][:k_pos]
        neg = [m for m in self.negatives if m in shown][:k_neg]
        return Retrieved(positives=pos, negatives=neg, candidate_ids=[m.record.id for m in pos + neg])

    def memorise(self, trajectory: Trajectory, compressor: Any = None) -> MemoryRecord:
        self.memorised.append((trajectory, compressor))
        return MemoryRecord(
            id=f"mem-{len(self.memorised)}",
            namespace=trajectory.namespace,
            question=trajectory.question,
            workflow="1. Fake workflow (question -> answer)",
            outcome=trajectory.outcome,
            trajectory_id=trajectory.id,
        )

    def log_trajectory(self, trajectory: Trajectory) -> None:
        self.logged.append(trajectory)

    def search_trajectories(
        self, question: str, namespace: str, k: int, min_similarity: float | None = None
    ) -> list[ScoredTrajectory]:
        found = [ScoredTrajectory(trajectory=t, similarity=1.0) for t in self.logged[:k]]
        return found if min_similarity is None else [t for t in found if t.similarity >= min_similarity]

    def update_stats(self, ids: list[str], success: bool) -> None:
        self.stats.append((list(ids), success))


def memory(id_: str, question: str, workflow: str, outcome: Outcome) -> ScoredMemory:
    return ScoredMemory(
        record=MemoryRecord(id=id_, question=question, workflow=workflow, outcome=outcome),
        score=0.5,
        similarity=0.8,
        normalised_similarity=1.0,
        win_rate=0.5,
    )


def search_tool(results: dict[str, str] | None = None, fail: bool = False) -> StructuredTool:
    calls: list[list[str]] = []

    def search(query_list: list[str]) -> str:
        """Search the corpus."""
        calls.append(query_list)
        if fail:
            raise RuntimeError("index is on fire")
        return "\n".join((results or {}).get(q, f"Doc 1 about {q}") for q in query_list)

    tool = StructuredTool.from_function(search, name="search", description="Search the corpus with queries.")
    tool.metadata = {"calls": calls}
    return tool


class FakeVerdict(Verdict):
    """A real `Verdict`, with the fields a fake judge does not decide defaulted."""

    method: JudgeMethod = "llm"
    prediction: str = ""


def fake_context(**overrides: Any) -> Context:
    """A Context whose every role is the fake model of its name (`fake:planner`, ...), in the text
    protocol, with `overrides` on top: the one such context the graph-logic tests build."""
    roles = {f"{role}_model": f"fake:{role}" for role in ("planner", "executor", "manager", "judge")}
    return Context(**{**roles, "tool_protocol": "text", **overrides})


def make_deps(
    models: dict[str, ScriptedChatModel],
    store: FakeStore | None = None,
    tools: list[Any] | None = None,
    judge_outcome: str = "correct",
    compressor_factory: Any = None,
    store_factory: Any = None,
) -> tuple[Deps, dict[str, Any]]:
    """Deps over fakes; `seen` records judge and compressor calls. `compressor_factory` (e.g.
    mia.memory.Compressor) replaces the stand-in compressor, and `store_factory(data_dir)` the
    fake store, for a real store's memorise."""
    seen: dict[str, Any] = {"judge": [], "compressor": []}
    store = store or FakeStore()
    tools = tools if tools is not None else [search_tool()]

    def model_factory(spec: str, temperature: float, max_tokens: int) -> BaseChatModel:
        return models[spec]

    def judge_fn(**kwargs: Any) -> Any:
        seen["judge"].append(kwargs)
        kwargs["model"].invoke("grade this")  # counted as judge usage
        return FakeVerdict(
            outcome=judge_outcome,
            score=1.0 if judge_outcome == "correct" else 0.0,
            feedback="fake judge",
            mode=kwargs["mode"],
        )

    def compressor(model: BaseChatModel) -> Any:
        seen["compressor"].append(model)
        return compressor_factory(model) if compressor_factory is not None else SimpleNamespace(model=model)

    deps = Deps(
        model_factory=model_factory,
        store_factory=store_factory or (lambda path: store),
        tools_factory=lambda ctx, paragraphs: tools,
        judge_fn=judge_fn,
        compressor_factory=compressor,
    )
    seen["store"] = store
    return deps, seen
