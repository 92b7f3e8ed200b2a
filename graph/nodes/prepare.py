"""prepare: the first node of every run. It clears the per-question channels (a thread may hold
several questions), checks the question's image, and captions it when no caption was given, so
that retrieval, the planner and a text-only executor all see the image as text.

An image question with no caption and no captioner model stops here with `ImageQuestionError`:
answering it blind would store a confident, wrong workflow in memory.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.runtime import Runtime
from langgraph.types import Overwrite

from mia.graph.context import Context
from mia.graph.images import ImageError, load_image
from mia.graph.nodes.calls import invoke, text_of
from mia.graph.nodes.deps import Deps
from mia.graph.nodes.retrieve import fresh_question_state
from mia.graph.prompts import render
from mia.graph.protocol import clean_value, strip_think, truncate_words
from mia.graph.state import State

CAPTION_WORDS = 120


class ImageQuestionError(ImageError):
    """An image question that cannot be answered as asked (no caption and no vision model)."""


def accepts_images(model: Any) -> bool | None:
    """What the model's LangChain profile says about image inputs (None: it does not say)."""
    profile = getattr(model, "profile", None) or {}
    value = profile.get("image_inputs") if isinstance(profile, dict) else None
    return None if value is None else bool(value)


def make_prepare(deps: Deps):
    def prepare(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
        ctx = Context.coerce(runtime.context)
        update = fresh_question_state(state)
        inputs = update["inputs"]  # this run's input only (see InputState)
        if clean_value(state["question"]) != state["question"]:  # caller text enters the graph here
            update["question"] = clean_value(state["question"])
        for key in ("gold_answers", "caption"):
            if inputs[key] is not None:
                inputs[key] = clean_value(inputs[key])
        question = update.get("question", state["question"])
        caption = inputs["caption"] = (inputs["caption"] or "").strip()
        image = inputs["image"]
        if image is None or image == "" or image == b"":
            return update
        img = load_image(image)  # ImageError: unreadable, not an image, too large
        if caption:
            return update
        if not ctx.captioner_model and deps.given_model("captioner") is None:
            raise ImageQuestionError(
                "this question has an image but no caption, and no vision model is configured: set "
                "captioner_model (MIA_CAPTIONER_MODEL, or --captioner-model) or give a caption"
            )
        model = deps.chat_model(ctx, "captioner")
        if accepts_images(model) is False:
            raise ImageQuestionError(
                f"the captioner model {ctx.captioner_model or type(model).__name__} does not accept images "
                "(its LangChain profile says image_inputs: false)"
            )
        prompt = render("captioner", "user", question=question, max_words=CAPTION_WORDS)
        messages = [
            SystemMessage(content=render("captioner", "system")),
            HumanMessage(content=[{"type": "text", "text": prompt}, img.content_block()]),
        ]
        reply, usage = invoke(model, messages, "captioner")
        raw = text_of(reply)
        text = truncate_words((strip_think(raw) or raw).strip(), CAPTION_WORDS)
        if not text:
            raise ImageQuestionError(
                f"the captioner model {ctx.captioner_model or type(model).__name__} returned no caption"
            )
        inputs["caption"] = text
        update["usage"] = Overwrite({**update["usage"].value, "captioner": usage["captioner"]})
        return update

    return prepare
