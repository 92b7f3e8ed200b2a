"""One-time de-quantisation of an embedded GGUF into a normal transformers folder.

The same weights serve (llama.cpp reads the GGUF) and train (transformers + PEFT read this folder):
loading a GGUF through transformers takes long (metadata parsing, de-quantisation), a saved
safetensors folder loads in seconds, and training refuses GGUF-"quantized" models. So we convert
once into $MIA_DATA_DIR/models/<name>-hf. Two processes may race: each writes to its own temp
folder and renames it into place (atomic on one filesystem) under a file lock.
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
import time
import uuid
from pathlib import Path

from filelock import FileLock

from mia.graph.models.embedded import embedded, ensure_gguf
from mia.graph.models.paths import is_converted  # re-exported for the CLI

log = logging.getLogger(__name__)


def convert_gguf(gguf: Path, out: Path) -> None:
    """De-quantise a GGUF through transformers and save it as a plain fp32 safetensors folder."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder, name = str(gguf.parent), gguf.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
    # The weights are already plain fp32; the GGUF "quantizer" marker only blocks saving/training.
    model.hf_quantizer = None  # type: ignore[assignment]  # nn.Module.__setattr__ types only tensors
    model.is_quantized = False  # type: ignore[assignment]  # likewise
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)


def ensure_converted(name: str, base: Path | None = None) -> Path:
    """The de-quantised folder of an embedded model, converting it first if needed (safe across
    processes). The GGUF must be assembled already (`mia models fetch NAME`)."""
    model = embedded(name)
    target = model.converted_dir(base)
    if is_converted(target):
        return target
    gguf = ensure_gguf(name, base)
    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(target.parent / f".{target.name}.lock")):
        if is_converted(target):  # another process finished while we waited
            return target
        tmp = target.parent / f".{target.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        print(f"[mia] de-quantising {model.title} into {target} (one time)...", file=sys.stderr)
        started = time.perf_counter()
        try:
            convert_gguf(gguf, tmp)
            if target.exists():  # an incomplete leftover (never produced by us): replace it
                shutil.rmtree(target, ignore_errors=True)
            os.rename(tmp, target)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        log.info("converted %s in %.1f s", name, time.perf_counter() - started)
    return target
