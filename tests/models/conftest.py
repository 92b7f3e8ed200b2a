"""Fixtures for the model-backend tests: the converted SmolLM2 folder (built once per machine,
under MIA_DATA_DIR from tests/conftest.py) and one shared LocalChatModel."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def smollm2_dir(data_dir: Path) -> Path:
    """The de-quantised SmolLM2 folder (converted on the first run only, ~30 s)."""
    from mia.graph.models.convert import ensure_converted

    return ensure_converted("smollm2", data_dir)


@pytest.fixture(scope="session")
def local_model(smollm2_dir: Path):
    """`local:smollm2` on CPU, greedy, short answers."""
    import torch

    from mia.graph.models import load_chat_model

    # On a shared 2-core machine, torch's 2 spinning threads run ~8x slower than 1 thread
    # (measured: 31.8 s vs 3.9 s for one short answer at load average 15).
    torch.set_num_threads(1)

    return load_chat_model("local:smollm2", temperature=0.0, max_tokens=24, device="cpu")


@pytest.fixture
def fresh_python(data_dir: Path) -> Callable[..., str]:
    """Run Python code in a fresh process whose only settings are the test data dir and `env`
    (MIA_* settings are read once a process); returns its last line of output, failing on an error."""

    def run(code: str, **env: str) -> str:
        full = {"MIA_DATA_DIR": str(data_dir), "PATH": "/usr/bin:/bin", "HOME": str(Path.home()), **env}
        done = subprocess.run([sys.executable, "-c", code], env=full, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""

    return run
