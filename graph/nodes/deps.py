"""The seams between the graph and the outside world: chat models, the memory store, tools and
the judge. Nodes never import backends directly; they ask a `Deps`, so tests inject fakes and the
process shares one loaded model, one store and one index per corpus.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from langchain_core.language_models import BaseChatModel
    from langchain_core.tools import BaseTool

    from mia.graph.context import Context
    from mia.memory import Compressor, MemoryStore, Verdict

log = logging.getLogger(__name__)

ModelFactory = Callable[[str, float, int], "BaseChatModel"]
StoreFactory = Callable[[Path], "MemoryStore"]
ToolsFactory = Callable[["Context", "Sequence[dict] | None"], "list[BaseTool]"]
JudgeFn = Callable[..., "Verdict"]
CompressorFactory = Callable[["BaseChatModel | None"], "Compressor"]


def check_role_models(models: Mapping[str, Any]) -> dict[str, Any]:
    """Role -> chat model objects, checked: a known role, an object that can be invoked."""
    from mia.graph.models.defaults import OPTIONAL_ROLES, ROLES

    roles = (*ROLES, *OPTIONAL_ROLES)
    for role, model in models.items():
        if role not in roles:
            raise ValueError(f"models: unknown role {role!r}; the roles are {', '.join(roles)}")
        if isinstance(model, str) or not callable(getattr(model, "invoke", None)):
            raise TypeError(
                f"models[{role!r}] must be a chat model object (a spec string goes in the Context: "
                f"{role}_model), not {type(model).__name__}"
            )
    return dict(models)


def _default_model(spec: str, temperature: float, max_tokens: int) -> BaseChatModel:
    from mia.graph.models import load_chat_model

    return load_chat_model(spec, temperature=temperature, max_tokens=max_tokens)


def _default_store(data_dir: Path) -> MemoryStore:
    from mia.graph.prompts import all_templates
    from mia.memory import MemoryStore
    from mia.memory.screening import WorkflowScreen

    # embedded Chroma, or a server when MIA_CHROMA_MODE=http; workflows that copy the graph's own
    # prompt examples are flagged (never shown to the planner)
    return MemoryStore.from_env(data_dir, screen=WorkflowScreen(prompt_templates=all_templates()))


def _default_compressor(model: BaseChatModel | None) -> Compressor:
    from mia.graph.protocol import strip_think
    from mia.memory import Compressor

    return Compressor(model, visible_text=strip_think)


def _default_judge(**kwargs: Any) -> Verdict:
    from mia.graph.judge import judge

    return judge(**kwargs)


class _DefaultTools:
    """Corpus search (the sandbox paragraphs, the demo corpus or a corpus path), plus web search
    when asked for; corpora are indexed once and kept (a few sandboxes, LRU)."""

    def __init__(self, max_sandboxes: int = 8) -> None:
        self._corpora: OrderedDict[str, Any] = OrderedDict()
        self._max = max_sandboxes
        self._lock = threading.Lock()

    def corpus(self, context: Context, paragraphs: Sequence[dict] | None) -> Any:
        from mia.graph import tools as t

        if paragraphs:
            blob = json.dumps([[p.get("title", ""), p.get("text", "")] for p in paragraphs], ensure_ascii=False)
            key = "sandbox:" + hashlib.sha1(blob.encode()).hexdigest()
            make: Callable[[], Any] = lambda: t.corpus_from_paragraphs(list(paragraphs))  # noqa: E731
        elif context.corpus in ("", "demo"):
            key, make = "demo", lambda: t.load_demo_corpus(context.resolved_data_dir())
        else:
            key, make = "path:" + context.corpus, lambda: t.load_corpus(context.corpus, context.resolved_data_dir())
        with self._lock:
            if key in self._corpora:
                self._corpora.move_to_end(key)
                return self._corpora[key]
        corpus = make()
        with self._lock:
            self._corpora[key] = corpus
            while len(self._corpora) > self._max:
                self._corpora.popitem(last=False)
        return corpus

    def __call__(self, context: Context, paragraphs: Sequence[dict] | None) -> list[BaseTool]:
        from mia.graph import tools as t

        corpus = self.corpus(context, paragraphs)
        try:
            build = t.build_tools
        except (AttributeError, ImportError):
            build = None
        if build is not None:
            return list(build(corpus, top_k=context.search_top_k, web_search=context.web_search))
        return [t.SearchTool(corpus=corpus, top_k=context.search_top_k)]


class Deps:
    """Factories for everything a node needs from outside; each result is cached per process.
    `role_models` hands a role a chat model object instead of a spec (`build_graph(models=...)`)."""

    def __init__(
        self,
        *,
        model_factory: ModelFactory | None = None,
        store_factory: StoreFactory | None = None,
        tools_factory: ToolsFactory | None = None,
        judge_fn: JudgeFn | None = None,
        compressor_factory: CompressorFactory | None = None,
        owns_stores: bool = True,
        role_models: Mapping[str, BaseChatModel] | None = None,
    ) -> None:
        self._model_factory = model_factory or _default_model
        self._store_factory = store_factory or _default_store
        self._tools_factory = tools_factory or _DefaultTools()
        self._judge = judge_fn or _default_judge
        self._compressor = compressor_factory or _default_compressor
        self._role_models = check_role_models(role_models or {})
        self._models: dict[tuple[str, float, int], BaseChatModel] = {}
        self._stores: dict[Path, MemoryStore] = {}
        self._owns_stores = owns_stores  # False: a store handed in (build_graph(store=...)), never closed here
        self._lock = threading.Lock()

    def _copy(self, **changes: Any) -> Deps:
        """These Deps with some factories changed (the same models, tools and judge otherwise)."""
        given = dict(
            model_factory=self._model_factory,
            store_factory=self._store_factory,
            tools_factory=self._tools_factory,
            judge_fn=self._judge,
            compressor_factory=self._compressor,
            owns_stores=self._owns_stores,
            role_models=self._role_models,
        )
        return Deps(**{**given, **changes})

    def with_memory_store(self, store: MemoryStore) -> Deps:
        """A copy of these Deps whose memory is `store` for every data directory: how
        `build_graph(store=MiaStore(...))` makes the graph use that memory."""
        return self._copy(store_factory=lambda _path: store, owns_stores=False)

    def with_models(self, models: Mapping[str, BaseChatModel]) -> Deps:
        """A copy of these Deps whose roles in `models` use those chat model objects, whatever the
        context's spec for the role says: how `build_graph(models={"executor": ChatOpenAI(...)})` works."""
        return self._copy(role_models={**self._role_models, **models})

    def given_model(self, role: str) -> BaseChatModel | None:
        """The chat model object handed to this role, if any."""
        return self._role_models.get(role)

    def chat_model(self, context: Context, role: str) -> BaseChatModel:
        """The chat model of one role: the object handed to it, else the context's spec (with its
        temperature and max tokens) loaded once."""
        if role in self._role_models:
            return self._role_models[role]
        key = context.model_for(role)
        with self._lock:
            if key not in self._models:
                self._models[key] = self._model_factory(*key)
            return self._models[key]

    def memory_store(self, context: Context) -> MemoryStore:
        """The memory store under the context's data directory (opened once per process)."""
        path = context.resolved_data_dir()
        with self._lock:
            if path not in self._stores:
                self._stores[path] = self._store_factory(path)
            return self._stores[path]

    def usable_memory_store(self, context: Context) -> tuple[MemoryStore, str | None]:
        """The memory store, and a warning when its folder had been removed under this process:
        then a store these Deps opened is closed and a new, empty one opened there, so this and every
        later episode is stored again (before, each later write failed and its memory was lost). A
        store handed in is its owner's to reopen: only the warning is given."""
        store = self.memory_store(context)
        if not getattr(store, "folder_missing", lambda: False)():
            return store, None
        path = context.resolved_data_dir()
        if not self._owns_stores:
            return store, (
                "the memory folder of the store given to build_graph was removed while mia ran: "
                "its writes fail until its owner opens it again"
            )
        log.error("the memory folder under %s was removed while mia ran; opening a new store there", path)
        with self._lock:
            if self._stores.get(path) is store:
                del self._stores[path]
        try:
            store.close()
        except Exception as err:  # noqa: BLE001 - its files are gone: nothing left to release
            log.debug("closing the lost store failed: %s", err)
        return self.memory_store(context), (
            f"the memory folder under {path} was removed while mia ran: a new, empty store was made there "
            "(earlier memories and their log went with the old folder)"
        )

    def tools(self, context: Context, paragraphs: Sequence[dict] | None) -> list[BaseTool]:
        """The executor's tools for this question (the sandbox paragraphs when given)."""
        return self._tools_factory(context, paragraphs)

    def judge(self, **kwargs: Any) -> Verdict:
        """mia.graph.judge.judge(model=, question=, answer=, trace_text=, gold_answers=, mode=)."""
        return self._judge(**kwargs)

    def compressor(self, model: BaseChatModel | None) -> Compressor:
        """A memory Compressor over the manager model (None: extractive workflows, no model call)."""
        return self._compressor(model)


_DEFAULT: Deps | None = None
_DEFAULT_LOCK = threading.Lock()


def default_deps() -> Deps:
    """The process-wide Deps (real backends), created on first use."""
    global _DEFAULT
    with _DEFAULT_LOCK:
        if _DEFAULT is None:
            _DEFAULT = Deps()
        return _DEFAULT
