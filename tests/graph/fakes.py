"""Scripted stand-ins for the graph's outside world (chat models, memory store, tools, judge)."""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import StructuredTool
from pydantic import Field

from mia.graph.judge.verdict import JudgeMethod, Verdict
from mia.graph.nodes.deps import Deps


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

    @property
    def _llm_type(self) -> str:
        return "scripted-fake"

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        self.prompts.append(list(messages))
        self.call_kwargs.append({"stop": stop, **kwargs})
        item = self.script.pop(0) if self.script else self.fallback
        if callable(item):
            item = item(messages)
        message = item if isinstance(item, AIMessage) else AIMessage(content=str(item))
        message.usage_metadata = {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}
        return ChatResult(generations=[ChatGeneration(message=message)])

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:
        self.bound_tools = list(tools)
        self.bind_kwargs.append(dict(kwargs))
        return self


class FakeStore:
    """An in-memory MemoryStore with the contract's methods."""

    def __init__(self, positives: list[Any] | None = None, negatives: list[Any] | None = None) -> None:
        self.positives = positives or []
        self.negatives = negatives or []
        self.memorised: list[Any] = []
        self.logged: list[Any] = []
        self.stats: list[tuple[list[str], bool]] = []
        self.retrieve_calls: list[tuple] = []

    def retrieve(self, question: str, namespace: str = "default", k_pos: int = 2, k_neg: int = 2) -> Any:
        self.retrieve_calls.append((question, namespace, k_pos, k_neg))
        pos, neg = self.positives[:k_pos], self.negatives[:k_neg]
        return SimpleNamespace(positives=pos, negatives=neg, ids=[m.record.id for m in pos + neg])

    def memorise(self, trajectory: Any, compressor: Any = None) -> Any:
        self.memorised.append((trajectory, compressor))
        return SimpleNamespace(id=f"mem-{len(self.memorised)}")

    def log_trajectory(self, trajectory: Any) -> None:
        self.logged.append(trajectory)

    def search_trajectories(self, question: str, namespace: str, k: int) -> list[Any]:
        return self.logged[:k]

    def update_stats(self, ids: list[str], success: bool) -> None:
        self.stats.append((list(ids), success))


def memory(id_: str, question: str, workflow: str, outcome: str) -> Any:
    return SimpleNamespace(record=SimpleNamespace(id=id_, question=question, caption="", workflow=workflow,
                                                  outcome=outcome), score=0.5)


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


def make_deps(models: dict[str, ScriptedChatModel], store: FakeStore | None = None, tools: list[Any] | None = None,
              judge_outcome: str = "correct") -> tuple[Deps, dict[str, Any]]:
    """Deps over fakes; `seen` records judge and compressor calls."""
    seen: dict[str, Any] = {"judge": [], "compressor": []}
    store = store or FakeStore()
    tools = tools if tools is not None else [search_tool()]

    def model_factory(spec: str, temperature: float, max_tokens: int) -> BaseChatModel:
        return models[spec]

    def judge_fn(**kwargs: Any) -> Any:
        seen["judge"].append(kwargs)
        kwargs["model"].invoke("grade this")  # counted as judge usage
        return FakeVerdict(outcome=judge_outcome, score=1.0 if judge_outcome == "correct" else 0.0,
                           feedback="fake judge", mode=kwargs["mode"])

    def compressor_factory(model: BaseChatModel) -> Any:
        seen["compressor"].append(model)
        return SimpleNamespace(model=model)

    deps = Deps(model_factory=model_factory, store_factory=lambda path: store,
                tools_factory=lambda ctx, paragraphs: tools, judge_fn=judge_fn,
                compressor_factory=compressor_factory)
    seen["store"] = store
    return deps, seen
