"""Process-wide cache of loaded transformers weights, shared by every role that names them.

One entry per (resolved model folder, device). LoRA adapters are loaded into the same entry as
named peft adapters, keyed by the adapter folder and its file time, so `hf:base` and
`hf:base+adapter` share one copy of the base weights and a re-saved adapter is picked up. Every
use of an entry (generation, adapter swap) holds its `lock`, which makes a swap atomic for
readers: a generation sees either the old adapter or the new one, never a half-loaded state.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mia.graph.models.errors import ModelFileNotFoundError

_CACHE: dict[tuple[str, str], LoadedWeights] = {}
_CACHE_LOCK = threading.Lock()
ADAPTER_FILES = ("adapter_model.safetensors", "adapter_model.bin")


def check_model_dir(path: str | Path) -> Path:
    """A transformers model folder must exist and hold config.json."""
    folder = Path(path).expanduser().resolve()
    if not (folder / "config.json").is_file():
        raise ModelFileNotFoundError(
            f"No model folder at {folder} (config.json missing). Pass a folder written by "
            f"save_pretrained(), or use 'local:smollm2' for the embedded model."
        )
    return folder


def check_adapter_dir(path: str | Path) -> Path:
    """A peft LoRA adapter folder must hold adapter_config.json and its weights."""
    folder = Path(path).expanduser().resolve()
    if not (folder / "adapter_config.json").is_file() or not any((folder / f).is_file() for f in ADAPTER_FILES):
        raise ModelFileNotFoundError(
            f"No LoRA adapter at {folder} (adapter_config.json and adapter_model.safetensors expected). "
            f"Save one with PeftModel.save_pretrained() or `mia train`."
        )
    return folder


def _adapter_stamp(folder: Path) -> str:
    weights = next(folder / f for f in ADAPTER_FILES if (folder / f).is_file())
    stat = weights.stat()
    return hashlib.sha1(f"{folder}|{stat.st_mtime_ns}|{stat.st_size}".encode()).hexdigest()[:12]


@dataclass
class LoadedWeights:
    """A loaded causal LM + tokenizer; `model` becomes a peft PeftModel once an adapter is loaded.

    Training code may use `model` and `tokenizer` directly, holding `lock` while it does.
    """

    path: str
    device: str
    model: Any
    tokenizer: Any
    lock: threading.Lock = field(default_factory=threading.Lock)
    adapters: dict[str, str] = field(default_factory=dict)  # adapter folder -> peft adapter name

    @property
    def is_peft(self) -> bool:
        return hasattr(self.model, "peft_config")

    def ensure_adapter(self, adapter: str | Path) -> str:
        """Load (or reload, if re-saved) an adapter; return its peft name. Caller holds `lock`."""
        folder = check_adapter_dir(adapter)
        name = "a" + _adapter_stamp(folder)
        key = str(folder)
        if self.adapters.get(key) == name:
            return name
        if self.is_peft:
            self.model.load_adapter(key, adapter_name=name)
        else:
            from peft import PeftModel

            self.model = PeftModel.from_pretrained(self.model, key, adapter_name=name)
        self.model.eval()
        stale = self.adapters.get(key)
        self.adapters[key] = name
        if stale and stale in self.model.peft_config:
            self.model.set_adapter(name)  # never delete the active adapter (peft warns and picks one)
            self.model.delete_adapter(stale)
        return name

    @contextlib.contextmanager
    def activate(self, adapter: str | Path | None) -> Iterator[Any]:
        """Yield the model with exactly `adapter` active (None = the base). Caller holds `lock`."""
        if adapter is None:
            if self.is_peft:
                with self.model.disable_adapter():
                    yield self.model
            else:
                yield self.model
            return
        name = self.ensure_adapter(adapter)
        self.model.set_adapter(name)
        yield self.model


def dtype_for(device: str) -> Any:
    """The dtype local weights are served in on a device (bf16/fp16 on CUDA, fp32 on CPU); the
    test-time learner trains its copy in the same one."""
    import torch

    if device.startswith("cuda"):
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    return torch.float32


def load_weights(path: str | Path, device: str) -> LoadedWeights:
    """Load a model folder once per process and device; later calls return the same object."""
    folder = check_model_dir(path)
    key = (str(folder), device)
    with _CACHE_LOCK:
        if key in _CACHE:
            return _CACHE[key]
        from transformers import AutoModelForCausalLM, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(folder)
        model = AutoModelForCausalLM.from_pretrained(folder, dtype=dtype_for(device)).to(device)  # type: ignore[arg-type]  # transformers stubs type .to as unbound
        model.eval()
        loaded = LoadedWeights(str(folder), device, model, tokenizer)
        _CACHE[key] = loaded
        return loaded


def clear_cache() -> None:
    """Forget every loaded model (tests; frees memory once no chat model refers to them)."""
    with _CACHE_LOCK:
        _CACHE.clear()
