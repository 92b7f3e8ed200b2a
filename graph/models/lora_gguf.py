"""Convert a PEFT LoRA adapter folder into the GGUF LoRA file llama.cpp (xllamacpp) loads.

Training writes PEFT folders (transformers + PEFT on the model de-quantised from an embedded GGUF),
but llama.cpp only reads LoRA adapters as GGUF. Because the adapter was trained on the same weights,
each adapted module maps one to one onto a tensor of the base GGUF: we rename it with gguf's
TensorNameMap and write `<tensor>.lora_a` ([r, in], as PEFT's lora_A) and `<tensor>.lora_b`
([out, r], as PEFT's lora_B) in F32, the shapes llama.cpp checks against the base tensor. llama.cpp
scales by adapter.lora.alpha / r, PEFT by lora_alpha / r, so lora_alpha is written as is. Llama-
architecture GGUFs store the q/k rows permuted for RoPE (transformers undoes it when de-quantising),
so lora_b of q/k gets the same permutation. Adapters this cannot express faithfully (DoRA, rsLoRA,
modules_to_save, ...) are refused with a one-line message rather than converted into something else.

The result is cached in the adapter folder as adapter.<stamp>.gguf; the stamp follows the weights
file (mtime, size) and the base GGUF path, so a re-saved adapter is converted again. It is written
to a temp file and renamed into place under a file lock: no process ever sees a half file.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from filelock import FileLock

from mia.graph.models.errors import BackendError, ModelFileNotFoundError

#: Bump when the written file changes for the same inputs (old caches are then rebuilt).
FORMAT_VERSION = 1
WEIGHTS_FILE = "adapter_model.safetensors"
CONFIG_FILE = "adapter_config.json"
_CACHE_NAME = re.compile(r"adapter\.[0-9a-f]{16}\.gguf")
_PEFT_KEY = re.compile(r"base_model\.model\.(?P<module>.+)\.lora_(?P<ab>[AB])\.weight")

#: GGUF architectures we know how to convert, and whether their q/k rows are RoPE-permuted.
PERMUTES_QK = {"llama": True, "qwen2": False, "qwen3": False}
#: transformers model_type -> the GGUF architecture its weights are stored under.
GGUF_ARCH_OF = {"llama": "llama", "mistral": "llama", "qwen2": "qwen2", "qwen3": "qwen3"}
#: adapter_config.json settings llama.cpp's plain LoRA cannot express: key -> why (refused when the key is set).
_UNSUPPORTED = {
    "use_dora": "DoRA adapters are not supported by llama.cpp",
    "use_rslora": "rsLoRA scales by alpha/sqrt(r), llama.cpp by alpha/r",
    "modules_to_save": "modules_to_save (fully trained modules) cannot be expressed as LoRA",
    "alpha_pattern": "per-module lora_alpha (alpha_pattern) is not supported: llama.cpp has one alpha",
    "fan_in_fan_out": "fan_in_fan_out (Conv1D) layers are not supported",
    "lora_bias": "LoRA bias terms are not supported by llama.cpp",
    "target_parameters": "LoRA on raw parameters (target_parameters) is not supported",
    "trainable_token_indices": "trainable token embeddings are not supported",
}


class LoraConversionError(BackendError):
    """A PEFT adapter cannot be converted into a llama.cpp GGUF LoRA."""


@dataclass(frozen=True)
class BaseGGUF:
    """What the conversion needs from the base GGUF: architecture, heads and tensor shapes (ne order)."""

    arch: str
    n_blocks: int
    n_head: int
    n_head_kv: int
    shapes: dict[str, tuple[int, ...]]


def ensure_lora_gguf(adapter_dir: Path, base_gguf: Path) -> Path:
    """The GGUF LoRA file of the PEFT adapter in `adapter_dir` for `base_gguf`, converting it first
    if needed (safe across processes). Raises LoraConversionError for adapters llama.cpp cannot run
    and ModelFileNotFoundError for missing files."""
    adapter_dir, base_gguf = Path(adapter_dir).expanduser().resolve(), Path(base_gguf).expanduser().resolve()
    weights = _adapter_files(adapter_dir)
    target = adapter_dir / f"adapter.{_stamp(weights, base_gguf)}.gguf"
    if target.is_file():
        return target
    with FileLock(str(adapter_dir / ".adapter.gguf.lock")):
        if target.is_file():  # another process converted it while we waited
            return target
        _convert(adapter_dir, weights, base_gguf, target)
        _remove_stale(adapter_dir, keep=target)
    return target


def _adapter_files(adapter_dir: Path) -> Path:
    """The adapter's safetensors weights (its config must be there too)."""
    if not (adapter_dir / CONFIG_FILE).is_file() or not (adapter_dir / WEIGHTS_FILE).is_file():
        raise ModelFileNotFoundError(
            f"No PEFT adapter at {adapter_dir}: {CONFIG_FILE} and {WEIGHTS_FILE} expected "
            f"(PeftModel.save_pretrained writes both)."
        )
    return adapter_dir / WEIGHTS_FILE


def _stamp(weights: Path, base_gguf: Path) -> str:
    """16 hex digits that change when the weights are re-saved or the base GGUF path changes."""
    stat = weights.stat()
    key = f"{FORMAT_VERSION}|{stat.st_mtime_ns}|{stat.st_size}|{base_gguf}"
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def _convert(adapter_dir: Path, weights: Path, base_gguf: Path, target: Path) -> None:
    """Check, convert and atomically write one adapter."""
    if not base_gguf.is_file():
        raise ModelFileNotFoundError(f"No base GGUF at {base_gguf} for the LoRA adapter {adapter_dir}.")
    config = _read_config(adapter_dir)
    _check_config(config, adapter_dir)
    base = read_base_gguf(base_gguf)
    _check_base_model(config, base, adapter_dir)
    tensors = gguf_tensors(load_lora_pairs(weights, adapter_dir), base, adapter_dir)
    tmp = adapter_dir / f".{target.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp"
    try:
        write_lora_gguf(tmp, base.arch, float(config["lora_alpha"]), tensors)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def _remove_stale(adapter_dir: Path, keep: Path) -> None:
    """Delete earlier conversions (of older weights), so re-saving an adapter does not pile up files.
    (One adapter used with two base GGUF paths would be converted again on each switch: cheap.)"""
    for old in adapter_dir.iterdir():
        if old != keep and _CACHE_NAME.fullmatch(old.name):
            old.unlink(missing_ok=True)


def _refuse(adapter_dir: Path, why: str) -> LoraConversionError:
    return LoraConversionError(f"Cannot convert the LoRA adapter {adapter_dir} for llama.cpp: {why}.")


def _read_config(adapter_dir: Path) -> dict[str, Any]:
    try:
        return json.loads((adapter_dir / CONFIG_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise _refuse(adapter_dir, f"{CONFIG_FILE} is unreadable ({err})") from err


def _check_config(config: dict[str, Any], adapter_dir: Path) -> None:
    """Refuse the PEFT settings whose effect a plain llama.cpp LoRA cannot reproduce."""
    if config.get("peft_type", "LORA") != "LORA":
        raise _refuse(adapter_dir, f"it is a {config.get('peft_type')} adapter, only LORA converts")
    for key, why in _UNSUPPORTED.items():
        if config.get(key):
            raise _refuse(adapter_dir, why)
    if config.get("bias", "none") != "none":
        raise _refuse(adapter_dir, f"bias={config['bias']!r} trains biases, which llama.cpp LoRA cannot carry")
    alpha = config.get("lora_alpha")
    if not isinstance(alpha, int | float) or alpha <= 0:
        raise _refuse(adapter_dir, f"lora_alpha must be a positive number, got {alpha!r}")


def read_base_gguf(path: Path) -> BaseGGUF:
    """Architecture, block/head counts and tensor shapes of the base GGUF (metadata only)."""
    from gguf import GGUFReader

    reader = GGUFReader(path)

    def field(key: str) -> Any:
        found = reader.fields.get(key)
        return None if found is None else found.contents()

    arch = str(field("general.architecture"))
    n_head = int(field(f"{arch}.attention.head_count") or 0)
    return BaseGGUF(
        arch=arch,
        n_blocks=int(field(f"{arch}.block_count") or 0),
        n_head=n_head,
        n_head_kv=int(field(f"{arch}.attention.head_count_kv") or n_head),
        shapes={t.name: tuple(int(n) for n in t.shape) for t in reader.tensors},
    )


def _check_base_model(config: dict[str, Any], base: BaseGGUF, adapter_dir: Path) -> None:
    """The base GGUF's architecture is one we convert for, and (when the training base folder is
    still there) the adapter was trained on a model of that architecture."""
    if base.arch not in PERMUTES_QK:
        raise _refuse(
            adapter_dir,
            f"the base GGUF's architecture {base.arch!r} has no conversion rule (known: {', '.join(PERMUTES_QK)})",
        )
    model_type = _trained_model_type(config)
    if model_type is not None and GGUF_ARCH_OF.get(model_type) != base.arch:
        raise _refuse(adapter_dir, f"it was trained on a {model_type!r} model, the base GGUF is {base.arch!r}")


def _trained_model_type(config: dict[str, Any]) -> str | None:
    """model_type of the folder the adapter was trained on, when that folder is on this machine."""
    folder = config.get("base_model_name_or_path")
    if not folder:
        return None
    try:
        return json.loads((Path(folder).expanduser() / "config.json").read_text(encoding="utf-8")).get("model_type")
    except (OSError, ValueError):
        return None


def load_lora_pairs(weights: Path, adapter_dir: Path) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """HF module name -> (lora_A [r, in], lora_B [out, r]) as float32; any other tensor is refused."""
    from safetensors.torch import load_file

    parts: dict[str, dict[str, np.ndarray]] = {}
    for key, tensor in load_file(str(weights)).items():
        match = _PEFT_KEY.fullmatch(key)
        if match is None:
            raise _refuse(adapter_dir, f"tensor {key!r} is not a Linear LoRA A/B weight")
        parts.setdefault(match["module"], {})[match["ab"]] = tensor.float().numpy()
    pairs = {}
    for module, ab in parts.items():
        if set(ab) != {"A", "B"}:
            raise _refuse(adapter_dir, f"module {module!r} lacks its lora_A or lora_B weight")
        pairs[module] = (ab["A"], ab["B"])
    if not pairs:
        raise _refuse(adapter_dir, f"{weights.name} holds no LoRA weights")
    return pairs


def gguf_tensors(
    pairs: dict[str, tuple[np.ndarray, np.ndarray]], base: BaseGGUF, adapter_dir: Path
) -> dict[str, np.ndarray]:
    """GGUF LoRA tensors (`<base tensor>.lora_a` / `.lora_b`), checked against the base shapes."""
    import gguf

    arch_id = {name: arch for arch, name in gguf.MODEL_ARCH_NAMES.items()}[base.arch]
    names = gguf.get_tensor_name_map(arch_id, base.n_blocks)
    out: dict[str, np.ndarray] = {}
    for module, (a, b) in sorted(pairs.items()):
        name = names.get_name(f"{module}.weight", try_suffixes=(".weight",))
        if name is None:
            raise _refuse(adapter_dir, f"target module {module!r} has no GGUF tensor name for {base.arch!r}")
        _check_shape(name, a, b, base, adapter_dir)
        out[f"{name}.lora_a"] = np.ascontiguousarray(a, dtype=np.float32)
        out[f"{name}.lora_b"] = np.ascontiguousarray(_to_gguf_rows(name, b, base), dtype=np.float32)
    return out


def _check_shape(name: str, a: np.ndarray, b: np.ndarray, base: BaseGGUF, adapter_dir: Path) -> None:
    """llama.cpp wants a.ne = [in, r] and b.ne = [r, out] for a base tensor with ne = [in, out]."""
    shape = base.shapes.get(name)
    if shape is None:
        raise _refuse(adapter_dir, f"the base GGUF has no tensor {name!r} (adapter trained on another model?)")
    if name.startswith("token_embd") or len(shape) != 2:
        raise _refuse(adapter_dir, f"LoRA on {name!r} is not supported")
    fits = a.ndim == b.ndim == 2 and a.shape[1] == shape[0] and b.shape[0] == shape[1] and a.shape[0] == b.shape[1]
    if not fits:
        raise _refuse(
            adapter_dir,
            f"lora_A {tuple(a.shape)} / lora_B {tuple(b.shape)} do not fit the base "
            f"tensor {name!r} [out={shape[1]}, in={shape[0]}] (adapter trained on another model?)",
        )


def _to_gguf_rows(name: str, b: np.ndarray, base: BaseGGUF) -> np.ndarray:
    """lora_B with its output rows in the GGUF's order (q/k of llama are RoPE-permuted)."""
    if not PERMUTES_QK[base.arch]:
        return b
    if ".attn_q." in name:
        return permute_rows(b, base.n_head)
    if ".attn_k." in name:
        return permute_rows(b, base.n_head_kv)
    return b


def permute_rows(w: np.ndarray, n_head: int) -> np.ndarray:
    """The row order llama GGUFs use for q/k: each head's two rotary halves are interleaved."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def write_lora_gguf(path: Path, arch: str, alpha: float, tensors: dict[str, np.ndarray]) -> None:
    """Write a GGUF LoRA adapter file (general.architecture is set by GGUFWriter from `arch`)."""
    import gguf

    writer = gguf.GGUFWriter(path, arch)
    writer.add_type(gguf.GGUFType.ADAPTER)
    writer.add_string(gguf.Keys.Adapter.TYPE, "lora")
    writer.add_float32(gguf.Keys.Adapter.LORA_ALPHA, alpha)
    for name, array in tensors.items():
        writer.add_tensor(name, array)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    with open(path, "rb") as done:
        os.fsync(done.fileno())
