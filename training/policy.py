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


#: CPU flags that run a half-precision dtype natively; without one torch emulates it on a CPU
HALF_PRECISION_FLAGS = {"bfloat16": ("avx512_bf16", "amx_bf16"), "float16": ("avx512_fp16", "amx_fp16")}


def torch_dtype(name: str, device: str = "cpu") -> Any:
    """'float32' | 'bfloat16' | 'float16' | 'auto' -> a torch dtype (or 'auto'). Half precision on a
    CPU that lacks it is refused: torch emulates it, and on a 2-core AMD EPYC without AVX-512 a
    bfloat16 test-time learner had not finished its first batch after 20 minutes (issue 37), while
    on CPUs with AVX-512 BF16 the same dtype trained 2.3x faster than float32."""
    import torch

    if name == "auto":
        return "auto"
    try:
        dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[name]
    except KeyError:
        raise ValueError(f"unknown dtype {name!r}; use float32, bfloat16, float16 or auto") from None
    if device == "cpu" and name in HALF_PRECISION_FLAGS:
        from mia.graph.models.native import cpu_flags

        needs = HALF_PRECISION_FLAGS[name]
        if not set(needs) & cpu_flags():
            raise ValueError(
                f"dtype {name} on this CPU: it has neither {' nor '.join(needs)}, so torch would emulate {name} "
                "and train many times slower than float32; use dtype float32 (or auto)"
            )
    return dtype


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

    # Any: a PeftModel may take its place, and transformers' stubs type `.to` as unbound
    model: Any = AutoModelForCausalLM.from_pretrained(str(base), dtype=torch_dtype(dtype, device))
    if adapter is not None:
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, str(adapter), is_trainable=trainable_adapter)
    model.to(device)
    if not trainable_adapter:
        model.eval()
        for param in model.parameters():
            param.requires_grad_(False)
    return model
