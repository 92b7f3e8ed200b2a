"""An image question with the real embedded model: a text-only local model gets the caption
(never the image), and the memory keeps the caption with its own vector for the next question."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mia.graph.builder import build_graph, recursion_limit
from mia.graph.context import Context
from mia.graph.nodes.deps import Deps

from .sample_images import CHINA

pytestmark = pytest.mark.real_model
RECORD = json.loads((Path(__file__).parent / "data" / "hotpotqa_sample.json").read_text())[0]
MODEL = "llamacpp:smollm2"


def test_real_model_answers_an_image_question_from_its_caption(tmp_path: Path) -> None:
    ctx = Context(
        planner_model=MODEL,
        executor_model=MODEL,
        manager_model=MODEL,
        judge_model=MODEL,
        judge_mode="ground_truth",
        judge_max_tokens=4,
        max_tool_calls=1,
        max_replans=0,
        planner_max_tokens=48,
        executor_max_tokens=32,
        search_top_k=2,
        namespace="images",
        data_dir=str(tmp_path),
    )
    caption = "A photograph of the cover of a women's magazine."
    deps = Deps()
    graph = build_graph(deps=deps)
    inputs = {
        "question": RECORD["question"],
        "paragraphs": RECORD["paragraphs"],
        "image": str(CHINA),
        "caption": caption,
        "gold_answers": [RECORD["answer"]],
    }
    out = graph.invoke(inputs, context=ctx, config={"recursion_limit": recursion_limit(ctx)})
    assert out["trajectory"]["caption"] == caption and isinstance(out["answer"], str) and out["memory_id"]
    assert "captioner" not in out["usage"]  # a given caption needs no vision model
    store = deps.memory_store(ctx)  # the store the graph wrote to (one process holds it)
    try:
        stored = store.get(out["memory_id"], "images")
        assert stored.caption == caption and stored.caption_vector
        again = store.retrieve(RECORD["question"], namespace="images", caption=caption, k_pos=2, k_neg=2)
        scored = (again.positives + again.negatives)[0]
        other = store.retrieve(
            RECORD["question"], namespace="images", caption="A red flower in a garden.", k_pos=2, k_neg=2
        )
        # identical question and caption: both cosines are 1; another caption pulls the mix below 1
        # by 0.2 x (1 - its cosine to the stored caption)
        assert scored.similarity == pytest.approx(1.0, abs=1e-2)
        assert (other.positives + other.negatives)[0].similarity < 0.95
    finally:
        store.close()
