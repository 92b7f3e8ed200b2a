"""Model specs -> transformers weights for training (policies and frozen partners).

Training needs local weights: `local:<embedded>` or `llamacpp:<embedded>` (the de-quantised
weights of the GGUF that llama.cpp serves), `hf:<dir>` or
`hf:<dir>+<adapter>` (continue training an adapter, or freeze it as a partner), or a bare folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def resolve_weights(spec: str) -> tuple[Path, Path | None]:
    """(base model folder, adapter folder or None) of a spec; converts SmolLM2 once if needed."""
    from mia.graph.models.errors import BackendError
    from mia.graph.models.weights import check_adapter_dir, check_model_dir

    text = str(spec).strip()
    if Path(text).expanduser().is_dir():
        return check_model_dir(text), None
    from mia.graph.models.spec import parse_model_spec

    parsed = parse_model_spec(text)
    if not parsed.trainable:
        raise BackendError(
            f"training needs local weights, not {text!r}: use local:<embedded> (e.g. local:qwen-coder-1.5b), "
            "llamacpp:<embedded>, hf:<model-dir> or hf:<model-dir>+<adapter-dir>"
        )
    adapter = check_adapter_dir(parsed.adapter) if parsed.adapter else None  # <base>[+<peft-adapter>]
    if parsed.embedded:
        from mia.graph.models.convert import ensure_converted

        return ensure_converted(parsed.model).resolve(), adapter
    return check_model_dir(parsed.model), adapter


def torch_dtype(name: str) -> Any:
    """'float32' | 'bfloat16' | 'float16' | 'auto' -> a torch dtype (or 'auto')."""
    import torch

    if name == "auto":
        return "auto"
    try:
        return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[name]
    except KeyError:
        raise ValueError(f"unknown dtype {name!r}; use float32, bfloat16, float16 or auto") from None


def load_tokenizer(base: Path) -> Any:
    """Left-padded tokenizer with a pad token (what GRPOTrainer requires)."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(base))
    tok.padding_side = "left"
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return tok


def load_model(
    base: Path,
    adapter: Path | None = None,
    *,
    dtype: str = "float32",
    device: str = "cpu",
    trainable_adapter: bool = False,
) -> Any:
    """A causal LM on `device`; with an adapter, a PeftModel (trainable when continuing training)."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(base), dtype=torch_dtype(dtype))
    if adapter is not None:
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, str(adapter), is_trainable=trainable_adapter)
    model.to(device)
    if not trainable_adapter:
        model.eval()
        for param in model.parameters():
            param.requires_grad_(False)
    return model
