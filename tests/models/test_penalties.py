"""Anti-repetition over generated tokens (presence penalty, no-repeat n-grams): pure logic, no model."""

from __future__ import annotations

import numpy as np

from mia.graph.models.llamacpp import LlamaCppChatModel
from mia.graph.models.local import LocalChatModel
from mia.graph.models.penalties import banned_next_tokens, penalise
from mia.graph.models.text_model import TextChatModel


def test_banned_next_tokens() -> None:
    # "1 . 1 . 2 . 2 ." pattern as ids: after [5, 6] the 3-gram (5, 6, 7) was seen -> 7 banned
    assert banned_next_tokens([5, 6, 7, 8, 5, 6], 3) == {7}
    assert banned_next_tokens([5, 6, 7], 3) == set()
    assert banned_next_tokens([1, 2, 3], 0) == set()
    assert banned_next_tokens([4, 4, 9], 1) == {4, 9}


def test_penalise_numpy_row_only_touches_generated_tokens() -> None:
    scores = np.zeros(10, dtype=np.float32)
    penalise(scores, [2, 3, 2], presence=1.1, no_repeat_ngram=0)
    assert scores[2] == np.float32(-1.1) and scores[3] == np.float32(-1.1) and scores[4] == 0.0
    scores = np.zeros(10, dtype=np.float32)
    penalise(scores, [1, 2, 1], presence=0.0, no_repeat_ngram=2)
    assert np.isneginf(scores[2]) and scores[1] == 0.0


def test_penalise_torch_row() -> None:
    import torch

    from mia.graph.models.penalties import hf_logits_processor

    scores = torch.zeros(2, 8)
    ids = torch.tensor([[7, 7, 1, 2, 1], [7, 7, 3, 3, 3]])  # prompt = first 2 tokens (7 is never penalised)
    out = hf_logits_processor(2, 0.5, 2)(ids, scores)
    assert out[0, 7] == 0 and out[0, 1] == -0.5 and torch.isneginf(out[0, 2])
    assert torch.isneginf(out[1, 3])


def test_defaults_local_on_api_off() -> None:
    assert LocalChatModel.model_fields["presence_penalty"].default == 1.1
    assert LocalChatModel.model_fields["no_repeat_ngram_size"].default == 4
    assert LlamaCppChatModel.model_fields["presence_penalty"].default == 1.1
    assert LlamaCppChatModel.model_fields["no_repeat_ngram_size"].default == 0  # llama.cpp's server has no n-gram ban
    assert TextChatModel.model_fields["presence_penalty"].default == 0.0


def test_call_kwargs_override_instance_values() -> None:
    model = LocalChatModel(model_path="unused")  # nothing loads until a call
    params = model._params(None, {"presence_penalty": 0.0, "no_repeat_ngram_size": 0})
    assert (params.presence_penalty, params.no_repeat_ngram_size) == (0.0, 0)
    params = model._params(None, {})
    assert (params.presence_penalty, params.no_repeat_ngram_size) == (1.1, 4)
