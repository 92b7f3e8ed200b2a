"""Device choice for local models: MIA_DEVICE (auto|cpu|cuda|cuda:N), auto = cuda when present."""

from __future__ import annotations

from mia.graph.models.errors import BackendError
from mia.graph.models.settings import read_settings


def resolve_device(device: str | None = None) -> str:
    """Resolve 'auto' to a concrete torch device string; reject a cuda request without cuda."""
    choice = (device or read_settings().device or "auto").strip().lower()
    if choice not in ("auto", "cpu") and not choice.startswith("cuda"):
        raise BackendError(f"MIA_DEVICE={choice!r} is not one of auto, cpu, cuda, cuda:N.")
    if choice == "cpu":
        return "cpu"
    import torch

    if choice == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if not torch.cuda.is_available():
        raise BackendError(f"MIA_DEVICE={choice!r} but torch sees no CUDA device; use MIA_DEVICE=cpu or auto.")
    return choice
