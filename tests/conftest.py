"""Shared test set-up: offline everywhere, one persistent cache for the converted embedded model."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Offline before anything imports transformers, huggingface_hub or chromadb.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("LANGSMITH_TRACING", "false")
# The converted SmolLM2 folder is built once and reused by every test run on this machine.
os.environ.setdefault("MIA_DATA_DIR", str(ROOT / ".cache" / "mia-test"))
for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GOOGLE_API_KEY", "TAVILY_API_KEY"):
    os.environ.pop(key, None)  # tests never reach a paid API by accident

SHARED_DATA = ROOT.parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The read-only public QA sets beside the checkout (present on dev machines and in CI)."""
    if not SHARED_DATA.is_dir():
        pytest.skip("../shared/data is not present")
    return SHARED_DATA


def _link_embedded_models(data: Path) -> None:
    """Make the GGUFs that set-up assembled in the user's data directory visible in the test one
    (links, not copies: 1.7 GB). Tests that need a model that is absent fail with the fetch hint."""
    from mia.graph.models.embedded import is_assembled, registry

    source = Path("~/.local/share/mia").expanduser()
    (data / "models").mkdir(parents=True, exist_ok=True)
    for model in registry().values():
        target = model.path(data)
        if not is_assembled(model, data) and is_assembled(model, source):
            target.unlink(missing_ok=True)
            target.symlink_to(model.path(source))


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """MIA_DATA_DIR for the test session (persistent cache of converted models)."""
    path = Path(os.environ["MIA_DATA_DIR"])
    path.mkdir(parents=True, exist_ok=True)
    return path


_link_embedded_models(Path(os.environ["MIA_DATA_DIR"]))


@pytest.fixture(autouse=True)
def _fresh_settings() -> Iterator[None]:
    """`get_settings()` is cached per process; a Settings read while a test had set an API key
    must not be re-exported into a later test's environment."""
    from mia.app.settings import get_settings

    get_settings.cache_clear()
    yield
    get_settings.cache_clear()
