"""LoRA adapters on the local model: `hf:<dir>+<adapter>` changes the logits, the base stays the
base (weights shared), and `set_adapter` swaps adapters on a live model."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.real_model

PROMPT = "The capital of France is"


def _make_adapter(base_dir: Path, out: Path, seed: int) -> Path:
    """A random LoRA (init_lora_weights=False makes B nonzero, so it really changes the model)."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    torch.manual_seed(seed)
    base = AutoModelForCausalLM.from_pretrained(base_dir, dtype=torch.float32)
    cfg = LoraConfig(
        r=4, lora_alpha=16, target_modules=["q_proj", "v_proj"], init_lora_weights=False, task_type="CAUSAL_LM"
    )
    model = get_peft_model(base, cfg)
    b_norm = sum(p.abs().sum().item() for n, p in model.named_parameters() if "lora_B" in n)
    assert b_norm > 0
    model.save_pretrained(out)
    return out


@pytest.fixture(scope="module")
def adapters(smollm2_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("lora")
    return _make_adapter(smollm2_dir, root / "a", 1), _make_adapter(smollm2_dir, root / "b", 2)


def _logits(model):
    import torch

    weights = model.backend
    ids = weights.tokenizer(PROMPT, return_tensors="pt")["input_ids"]
    with weights.lock, weights.activate(model.adapter_path) as m, torch.inference_mode():
        return m(input_ids=ids).logits[0, -1].clone()


def test_adapter_changes_logits_and_base_is_unchanged(local_model, smollm2_dir: Path, adapters) -> None:
    from mia.graph.models import load_chat_model

    before = _logits(local_model)
    tuned = load_chat_model(f"hf:{smollm2_dir}+{adapters[0]}", max_tokens=4, device="cpu")
    assert tuned.backend is local_model.backend  # base weights shared, adapter loaded into them
    with_adapter = _logits(tuned)
    assert (with_adapter - before).abs().max().item() > 1e-2
    assert (_logits(local_model) - before).abs().max().item() == 0.0  # the base role still sees the base
    msg = tuned.invoke("Hi")
    assert msg.usage_metadata["output_tokens"] > 0


def test_set_adapter_swaps_atomically(smollm2_dir: Path, adapters) -> None:
    from mia.graph.models import ModelFileNotFoundError, load_chat_model

    model = load_chat_model(f"hf:{smollm2_dir}", max_tokens=4, device="cpu")
    base = _logits(model)
    model.set_adapter(adapters[0])
    a = _logits(model)
    model.set_adapter(adapters[1])
    b = _logits(model)
    assert (a - base).abs().max().item() > 1e-2 and (b - a).abs().max().item() > 1e-2
    with pytest.raises(ModelFileNotFoundError):
        model.set_adapter(adapters[0].parent / "missing")
    assert (_logits(model) - b).abs().max().item() == 0.0  # a failed swap keeps the current adapter
    model.set_adapter(None)
    assert (_logits(model) - base).abs().max().item() == 0.0


def test_resaved_adapter_is_reloaded(smollm2_dir: Path, adapters, tmp_path: Path) -> None:
    """Test-time learning re-saves an adapter in place: the next generation must use the new weights."""
    import os
    import shutil

    from mia.graph.models import load_chat_model

    live = tmp_path / "live"
    shutil.copytree(adapters[0], live)
    model = load_chat_model(f"hf:{smollm2_dir}+{live}", device="cpu")
    a = _logits(model)
    shutil.copytree(adapters[1], live, dirs_exist_ok=True)
    weights = live / "adapter_model.safetensors"
    os.utime(weights, ns=(weights.stat().st_atime_ns, weights.stat().st_mtime_ns + 1_000_000))
    b = _logits(model)
    assert (b - a).abs().max().item() > 1e-2
    assert len([n for n in model.backend.model.peft_config if n.startswith("a")]) >= 1
