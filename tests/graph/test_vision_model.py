"""Local vision-language models (`hf:<dir>` with a vision tower): a tiny random LLaVA built offline
reads a real photo through the model's own processor, as the captioner of an image question."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage

from mia.graph.images import ImageError, load_image
from mia.graph.models import load_chat_model
from mia.graph.models.vision import VisionChatModel, is_vision_model

from .sample_images import CHINA
from .tiny_vision import WORDS, make_tiny_llava


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    return make_tiny_llava(tmp_path_factory.mktemp("tiny-llava"))


def ask(model, *blocks) -> str:
    return model.invoke([HumanMessage(content=[{"type": "text", "text": "w1 w2 w3"}, *blocks])])


def test_hf_spec_with_a_vision_tower_loads_the_vision_backend(tiny: Path) -> None:
    assert is_vision_model(tiny) and not is_vision_model(tiny / "missing")
    model = load_chat_model(f"hf:{tiny}", max_tokens=6, device="cpu")
    assert isinstance(model, VisionChatModel) and model.profile["image_inputs"] is True
    with_image = ask(model, load_image(CHINA).content_block())
    without = ask(model)
    assert isinstance(with_image.content, str) and with_image.content.strip()
    # the image reached the model: 25 patch tokens (30 px / 6 px per patch, squared) enter the prompt
    assert with_image.usage_metadata["input_tokens"] - without.usage_metadata["input_tokens"] == 25
    assert 0 < with_image.usage_metadata["output_tokens"] <= 6
    again = ask(model, {"type": "image_url", "image_url": {"url": load_image(CHINA).data_url()}})
    assert again.content == with_image.content  # greedy, and the OpenAI block form reads the same image


def test_remote_urls_and_bad_images_are_clear_errors(tiny: Path) -> None:
    model = load_chat_model(f"hf:{tiny}", max_tokens=2, device="cpu")
    with pytest.raises(ImageError, match="needs the image itself"):
        ask(model, {"type": "image", "url": "https://example.org/cat.png"})
    with pytest.raises(ImageError, match="not a readable image"):
        ask(model, {"type": "image", "base64": "aGVsbG8=", "mime_type": "image/png"})


def test_local_vision_model_captions_an_image_question(tiny: Path, tmp_path: Path) -> None:
    from mia.graph.builder import build_graph, recursion_limit
    from mia.graph.context import Context
    from mia.graph.nodes.deps import Deps

    from .fakes import ScriptedChatModel, search_tool

    fakes = {"fake:planner": ScriptedChatModel(), "fake:executor": ScriptedChatModel(script=["<answer>x</answer>"])}

    def factory(spec: str, temperature: float, max_tokens: int):
        return fakes.get(spec) or load_chat_model(spec, temperature=temperature, max_tokens=max_tokens, device="cpu")

    ctx = Context(
        planner_model="fake:planner",
        executor_model="fake:executor",
        manager_model="fake:planner",
        judge_model="fake:planner",
        captioner_model=f"hf:{tiny}",
        captioner_max_tokens=5,
        memory_mode="none",
        judge_mode="off",
        memorise=False,
        min_tool_calls=0,
        tool_protocol="text",
        data_dir=str(tmp_path),
    )
    out = build_graph(deps=Deps(model_factory=factory, tools_factory=lambda c, p: [search_tool()])).invoke(
        {"question": "What is shown?", "image": str(CHINA)},
        context=ctx,
        config={"recursion_limit": recursion_limit(ctx)},
    )
    caption = out["trajectory"]["caption"]
    assert caption and set(caption.split()) <= set(WORDS)  # the tiny model's own words
    assert out["usage"]["captioner"]["calls"] == 1 and out["usage"]["captioner"]["input_tokens"] > 25
    executor_turn = fakes["fake:executor"].prompts[0][1]
    assert caption in (executor_turn.content if isinstance(executor_turn.content, str) else str(executor_turn.content))
