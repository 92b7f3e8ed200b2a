"""The llama.cpp backend on the embedded GGUF (skipped when llama-cpp-python is not installed)."""

from __future__ import annotations

import pytest
from langchain_core.tools import tool
from pydantic import BaseModel

pytest.importorskip("llama_cpp")
pytestmark = pytest.mark.real_model


@tool
def search(query: str) -> str:
    """Search the encyclopedia for a query."""
    return ""


class Person(BaseModel):
    name: str
    age: int


@pytest.fixture(scope="module")
def cpp():
    from mia.graph.models import load_chat_model

    return load_chat_model("llamacpp:smollm2", max_tokens=24, n_threads=1)


def test_generates_with_usage(cpp) -> None:
    msg = cpp.invoke("What is the capital of France? Answer in one sentence.")
    assert "Paris" in msg.content
    assert msg.usage_metadata["input_tokens"] > 10 and 0 < msg.usage_metadata["output_tokens"] <= 24
    assert cpp.invoke("What is the capital of France? Answer in one sentence.").content == msg.content  # greedy


def test_stop_and_stream(cpp) -> None:
    full = cpp.invoke("What is the capital of France? Answer in one sentence.").content
    cut = cpp.invoke("What is the capital of France? Answer in one sentence.", stop=[" of"]).content
    assert " of" not in cut and full.startswith(cut)
    chunks = list(cpp.stream("What is the capital of France? Answer in one sentence."))
    assert "".join(c.content for c in chunks) == full
    assert chunks[-1].usage_metadata["output_tokens"] > 0


def test_tools_and_json(cpp) -> None:
    msg = cpp.bind_tools([search], tool_choice="search").invoke("Find who wrote Dracula.")
    assert [c["name"] for c in msg.tool_calls] == ["search"] and msg.tool_calls[0]["args"]["query"]
    assert cpp.with_structured_output(Person).invoke("Alice is 30 years old. Extract her name and age.") == Person(
        name="Alice", age=30
    )


def test_weights_shared(cpp) -> None:
    from mia.graph.models import load_chat_model

    assert load_chat_model("llamacpp:smollm2").backend is cpp.backend
