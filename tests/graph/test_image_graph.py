"""An image question through the whole graph: a real photo, a real memory store on disk (MiniLM,
Chroma) and scripted vision models. The caption reaches the retrieval query vector, the planner
and the executor; the image reaches a multimodal executor as a content block."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from langchain_core.messages import HumanMessage

from mia.graph.builder import build_graph, recursion_limit
from mia.graph.context import Context
from mia.graph.nodes.deps import Deps
from mia.graph.nodes.prepare import ImageQuestionError
from mia.memory import MemoryStore

from .fakes import ScriptedChatModel, search_tool
from .sample_images import CHINA

CAPTION = "A temple with a curved red roof among green trees."
CALL = '<tool_call>{"name": "search", "arguments": {"query_list": ["temple red roof"]}}</tool_call>'


class SpyEmbedder:
    """The real MiniLM embedder, recording every query text."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.queries = inner, []

    def embed_query(self, text: str) -> Any:
        self.queries.append(text)
        return self.inner.embed_query(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@pytest.fixture(scope="module")
def minilm():
    from mia.memory.embeddings import default_embedder

    return default_embedder()


@pytest.fixture()
def store(tmp_path, minilm):
    """A real memory store on disk over the real MiniLM."""
    st = MemoryStore.open(tmp_path / "memory", embedder=minilm)
    yield st
    st.close()


def models(vision_executor: bool) -> dict[str, ScriptedChatModel]:
    vision = {"image_inputs": True}
    return {
        "fake:captioner": ScriptedChatModel(script=[CAPTION] * 3, profile=vision),
        "fake:planner": ScriptedChatModel(script=["1. Search the temple in the image.", "no"] * 3),
        "fake:executor": ScriptedChatModel(
            script=[CALL, "<answer>Jiangxi</answer>"] * 3, profile=vision if vision_executor else None
        ),
        "fake:manager": ScriptedChatModel(),
        "fake:judge": ScriptedChatModel(fallback="A"),
    }


def deps_for(m: dict[str, ScriptedChatModel], store: Any) -> Deps:
    return Deps(
        model_factory=lambda spec, t, n: m[spec],
        store_factory=lambda path: store,
        tools_factory=lambda ctx, paragraphs: [search_tool()],
        compressor_factory=lambda model: None,
    )


def ctx(tmp_path, **kw: Any) -> Context:
    return Context(
        planner_model="fake:planner",
        executor_model="fake:executor",
        manager_model="fake:manager",
        judge_model="fake:judge",
        captioner_model=kw.pop("captioner_model", "fake:captioner"),
        tool_protocol="text",
        min_tool_calls=0,
        namespace="images",
        data_dir=str(tmp_path),
        **kw,
    )


def run(m, store, context, **inputs) -> dict[str, Any]:
    graph = build_graph(deps=deps_for(m, store))
    return graph.invoke(
        {"question": "In which province is this temple?", "gold_answers": ["Jiangxi"], **inputs},
        context=context,
        config={"recursion_limit": recursion_limit(context)},
    )


def human_text(message: Any) -> str:
    content = message.content
    return (
        content if isinstance(content, str) else " ".join(b.get("text", "") for b in content if b.get("type") == "text")
    )


def test_image_question_end_to_end(tmp_path, minilm) -> None:
    spy = SpyEmbedder(minilm)
    store = MemoryStore.open(tmp_path / "memory", embedder=spy)
    m = models(vision_executor=True)
    try:
        first = run(m, store, ctx(tmp_path), image=str(CHINA))
        assert first["trajectory"]["caption"] == CAPTION and first["answer"] == "Jiangxi"
        assert first["usage"]["captioner"]["calls"] == 1
        # the captioner was shown the photo itself, as a LangChain image block
        blocks = m["fake:captioner"].prompts[0][-1].content
        image = next(b for b in blocks if b.get("type") == "image")
        assert base64.b64decode(image["base64"]) == CHINA.read_bytes() and image["mime_type"] == "image/jpeg"
        # planner and executor prompts show the caption; the multimodal executor also gets the image
        assert CAPTION in m["fake:planner"].prompts[0][-1].content
        executor_question = next(x for x in m["fake:executor"].prompts[0] if isinstance(x, HumanMessage))
        assert CAPTION in human_text(executor_question)
        assert any(b.get("type") == "image" for b in executor_question.content)
        # the memory keeps the caption and its vector
        stored = store.get(first["memory_id"], "images")
        assert stored.caption == CAPTION and stored.caption_vector

        spy.queries.clear()
        second = run(m, store, ctx(tmp_path), image=str(CHINA))
        assert CAPTION in spy.queries  # the caption went into retrieval as a query vector of its own
        assert second["used_memory_ids"] == [first["memory_id"]]
        planner_prompt = m["fake:planner"].prompts[-2][-1].content  # the plan call of question 2
        assert f"Image caption: {CAPTION}" in planner_prompt  # the remembered image-text memory, shown
    finally:
        store.close()


def test_given_caption_skips_the_captioner_and_text_executor_gets_no_image(tmp_path, store) -> None:
    m = models(vision_executor=False)
    out = run(m, store, ctx(tmp_path), image=str(CHINA), caption="A given caption of a temple.")
    assert out["trajectory"]["caption"] == "A given caption of a temple." and not m["fake:captioner"].prompts
    question = next(x for x in m["fake:executor"].prompts[0] if isinstance(x, HumanMessage))
    assert isinstance(question.content, str) and "A given caption of a temple." in question.content


def test_no_vision_model_means_no_blind_answer(tmp_path, store) -> None:
    m = models(vision_executor=False)
    with pytest.raises(ImageQuestionError, match="no vision model is configured"):
        run(m, store, ctx(tmp_path, captioner_model=""), image=str(CHINA))
    assert not any(model.prompts for model in m.values())  # no model was asked anything
    assert store.count("images") == 0  # and nothing was memorised
    with pytest.raises(ImageQuestionError, match="does not accept images"):
        m["fake:captioner"].profile = {"image_inputs": False}
        run(m, store, ctx(tmp_path), image=str(CHINA))


def test_bad_image_is_a_clear_error_before_any_model(tmp_path, store) -> None:
    from mia.graph.images import ImageError

    m = models(vision_executor=False)
    bad = tmp_path / "broken.png"
    bad.write_bytes(b"\x89PNG\r\n\x1a\n not really")
    with pytest.raises(ImageError, match="not a readable image"):
        run(m, store, ctx(tmp_path), image=str(bad))
    assert not any(model.prompts for model in m.values())


def test_text_question_is_unaffected(tmp_path, minilm) -> None:
    spy = SpyEmbedder(minilm)
    store = MemoryStore.open(tmp_path / "memory", embedder=spy)
    m = models(vision_executor=True)
    try:
        out = run(m, store, ctx(tmp_path))
        assert out["trajectory"]["caption"] == "" and not m["fake:captioner"].prompts
        assert "caption" not in m["fake:planner"].prompts[0][-1].content.lower()
        assert set(spy.queries) == {"In which province is this temple?"}  # no caption vector asked for
        question = next(x for x in m["fake:executor"].prompts[0] if isinstance(x, HumanMessage))
        assert isinstance(question.content, str)  # no image block without an image
    finally:
        store.close()


def test_image_does_not_leak_to_the_next_question_of_a_thread(tmp_path, store) -> None:
    from langgraph.checkpoint.memory import InMemorySaver

    m = models(vision_executor=True)
    context = ctx(tmp_path, memory_mode="none")
    graph = build_graph(checkpointer=InMemorySaver(), deps=deps_for(m, store))
    config = {"configurable": {"thread_id": "t"}, "recursion_limit": recursion_limit(context)}
    first = graph.invoke(
        {"question": "In which province is this temple?", "image": str(CHINA)}, context=context, config=config
    )
    second = graph.invoke({"question": "Who wrote Hamlet?"}, context=context, config=config)
    assert first["trajectory"]["caption"] == CAPTION and second["trajectory"]["caption"] == ""
    assert len(m["fake:captioner"].prompts) == 1  # the second question was not captioned again
    second_turn = [x for x in m["fake:executor"].prompts[-1] if isinstance(x, HumanMessage)][0]
    assert isinstance(second_turn.content, str) and "Image caption" not in second_turn.content


def test_an_image_question_that_raised_does_not_fail_the_next_question_of_the_thread(tmp_path, store) -> None:
    """Issue 38: after an image question failed in `prepare`, every later text question of the
    thread raised ImageQuestionError: the image stayed in the checkpoint."""
    from langgraph.checkpoint.memory import InMemorySaver

    m = models(vision_executor=False)
    context = ctx(tmp_path, memory_mode="none", captioner_model="")
    graph = build_graph(checkpointer=InMemorySaver(), deps=deps_for(m, store))
    config = {"configurable": {"thread_id": "t"}, "recursion_limit": recursion_limit(context)}
    with pytest.raises(ImageQuestionError, match="no vision model is configured"):
        graph.invoke(
            {"question": "In which province is this temple?", "image": str(CHINA)}, context=context, config=config
        )
    second = graph.invoke({"question": "Who wrote Hamlet?"}, context=context, config=config)
    assert second["answer"] and second["trajectory"]["caption"] == ""
    question = next(x for x in m["fake:executor"].prompts[-1] if isinstance(x, HumanMessage))
    assert isinstance(question.content, str) and "Image caption" not in question.content


def test_a_captioner_object_captions_without_a_captioner_spec(tmp_path, store) -> None:
    """`build_graph(models={"captioner": model})`: no captioner_model spec needed."""
    m = models(vision_executor=False)
    context = ctx(tmp_path, captioner_model="", memory_mode="none")
    graph = build_graph(deps=deps_for(m, store), models={"captioner": m["fake:captioner"]})
    out = graph.invoke(
        {"question": "In which province is this temple?", "image": str(CHINA)},
        context=context,
        config={"recursion_limit": recursion_limit(context)},
    )
    assert out["trajectory"]["caption"] == CAPTION and len(m["fake:captioner"].prompts) == 1
