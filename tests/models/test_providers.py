"""Any init_chat_model provider: a missing integration package is a one-line "pip install" error,
and a provider package that is installed works end to end through the graph."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mia.graph.models import BackendNotInstalledError, check_model_spec, load_chat_model, parse_model_spec

FAKE_PACKAGE = '''
from typing import Any
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult


class ChatFakeprov(BaseChatModel):
    """A provider package as LangChain's integrations are: one chat model class."""

    model: str
    temperature: float | None = None
    max_tokens: int | None = None

    @property
    def _llm_type(self) -> str:
        return "fakeprov"

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        words = str(messages[-1].content).split()
        reply = f"<answer>{self.model} read {len(words)} words</answer>"
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=reply))])
'''


@pytest.mark.parametrize(
    ("spec", "package"), [("ollama:llama3", "langchain-ollama"), ("groq:llama-3.1-8b-instant", "langchain-groq")]
)
def test_missing_provider_package_says_what_to_install(spec: str, package: str) -> None:
    assert parse_model_spec(spec).backend == spec.split(":")[0]
    with pytest.raises(BackendNotInstalledError, match=f"pip install {package}"):
        check_model_spec(spec)
    with pytest.raises(BackendNotInstalledError, match=f"pip install {package}"):
        load_chat_model(spec)


def test_missing_provider_package_is_a_one_line_cli_error(tmp_path: Path) -> None:
    from mia.app.cli import app

    res = CliRunner().invoke(app, ["ask", "Q?", "--executor-model", "ollama:llama3", "--data-dir", str(tmp_path)])
    lines = [x for x in res.output.splitlines() if x.strip()]
    assert res.exit_code == 2 and len(lines) == 1 and "pip install langchain-ollama" in lines[0], res.output


def test_unknown_provider_is_still_rejected() -> None:
    from mia.graph.models import UnknownBackendError

    with pytest.raises(UnknownBackendError, match="any init_chat_model provider"):
        parse_model_spec("fakeprov:tiny")


@pytest.fixture()
def fake_provider(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A real package on sys.path, registered in LangChain's provider table the way its built-in
    providers are (module, class, constructor)."""
    from langchain.chat_models import base

    (tmp_path / "langchain_fakeprov").mkdir()
    (tmp_path / "langchain_fakeprov" / "__init__.py").write_text(textwrap.dedent(FAKE_PACKAGE))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(
        base._BUILTIN_PROVIDERS, "fakeprov", ("langchain_fakeprov", "ChatFakeprov", lambda cls, **kw: cls(**kw))
    )
    return "fakeprov:tiny-1b"


def test_fake_provider_package_runs_the_graph(fake_provider: str) -> None:
    from mia import Deps, build_graph
    from mia.graph import Context

    model = load_chat_model(fake_provider, max_tokens=7)
    assert type(model).__name__ == "ChatFakeprov" and model.model == "tiny-1b" and model.max_tokens == 7
    assert check_model_spec(fake_provider).backend == "fakeprov"

    deps = Deps(tools_factory=lambda ctx, paragraphs: [])  # the real model factory: load_chat_model
    context = Context(
        executor_model=fake_provider,
        memory_mode="none",
        judge_mode="off",
        memorise=False,
        min_tool_calls=0,
        tool_protocol="text",
    )
    out = build_graph(deps=deps).invoke({"question": "How many words?"}, context=context)
    assert out["answer"].startswith("tiny-1b read ") and out["answer"].endswith(" words")
    assert out["usage"]["executor"]["calls"] == 1


# langchain-ollama's chat model as far as it matters here: the limit is `num_predict`, and a keyword
# it does not have (`max_tokens`) is ignored
OLLAMA_PACKAGE = FAKE_PACKAGE.replace("ChatFakeprov", "ChatOllama").replace("max_tokens: int", "num_predict: int")


def test_a_roles_max_tokens_reaches_ollama_as_num_predict(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 39: `max_tokens` was dropped for Ollama (ChatOllama ignores a keyword it does not have)."""
    (tmp_path / "langchain_ollama").mkdir()
    (tmp_path / "langchain_ollama" / "__init__.py").write_text(textwrap.dedent(OLLAMA_PACKAGE))
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        model = load_chat_model("ollama:llama3", temperature=0.0, max_tokens=77)
        assert type(model).__name__ == "ChatOllama" and model.num_predict == 77 and model.temperature == 0.0
        assert load_chat_model("ollama:llama3").num_predict is None
    finally:  # later tests expect langchain-ollama to be missing
        import sys

        sys.modules.pop("langchain_ollama", None)


def test_the_provider_table_is_read_from_langchain_and_its_loss_is_harmless(monkeypatch: pytest.MonkeyPatch) -> None:
    """LangChain's table is private (mia.graph.models.providers says why it is read anyway): while it
    is there, a provider's package comes from it and a typo is caught when the spec is parsed; if a
    release drops it, every identifier parses as a provider, nothing is refused before loading
    (init_chat_model decides then), and a malformed name is still an error."""
    from langchain.chat_models import base

    from mia.graph.models import UnknownBackendError
    from mia.graph.models.providers import chat_providers, is_provider, requirement

    assert (chat_providers() or {}).get("openai", "").startswith("langchain_openai")
    assert requirement("anthropic") == "mia-agent[anthropic]"
    assert not is_provider("groqq")
    with pytest.raises(UnknownBackendError):
        parse_model_spec("groqq:llama")
    monkeypatch.delattr(base, "_BUILTIN_PROVIDERS", raising=False)
    assert chat_providers() is None
    assert requirement("groq") == "langchain-groq" and requirement("openai") == "langchain-openai"
    assert parse_model_spec("groqq:llama").backend == "groqq"  # init_chat_model judges it at load
    assert check_model_spec("groq:llama-3.1-8b-instant").backend == "groq"  # no pre-check without the table
    for bad in ("Groq:llama", "my-provider:x"):
        with pytest.raises(UnknownBackendError):
            parse_model_spec(bad)
