"""MIA_LLAMACPP_REPACK (issue 41): llama.cpp's weight repacking is off on this CPU's native build
(measured faster there, bench/models/results.md), on for the prebuilt wheel, and on/off force it;
a bad value is one line; the real backend answers with repacking off, and gives the same greedy
reply as with it on."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mia.graph.models.errors import BackendError
from mia.graph.models.servers import repack_weights
from mia.graph.models.settings import read_settings
from tests.models.test_native_build import VERSION, make_build


@pytest.mark.parametrize(
    ("mode", "build", "with_native", "expected"),
    [
        ("auto", "auto", False, True),  # prebuilt wheel: llama.cpp's default
        ("auto", "auto", True, False),  # this CPU's native build: the plain kernels
        ("auto", "prebuilt", True, True),  # a native build the switch does not load
        ("on", "auto", True, True),
        ("off", "auto", False, False),
        (" OFF ", "auto", False, False),
    ],
)
def test_which_build_repacks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str, build: str, with_native: bool, expected: bool
) -> None:
    if with_native:
        if VERSION is None:
            pytest.skip("xllamacpp is not installed")
        make_build(tmp_path)
    monkeypatch.setenv("MIA_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("MIA_LLAMACPP_BUILD", build)
    monkeypatch.setenv("MIA_LLAMACPP_REPACK", mode)
    assert repack_weights(read_settings()) is expected


def test_a_bad_value_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MIA_LLAMACPP_REPACK", "sometimes")
    with pytest.raises(BackendError, match="MIA_LLAMACPP_REPACK: Input should be") as err:
        read_settings()
    assert "\n" not in str(err.value)


REPLY = (
    "from mia.graph.models import load_chat_model; "
    "m = load_chat_model('llamacpp:smollm2', max_tokens=12, temperature=0, n_threads=1); "
    "print(repr(m.invoke('The capital of France is').content))"
)


@pytest.mark.real_model
def test_the_real_backend_answers_the_same_with_repacking_off(data_dir: Path) -> None:
    replies = {}
    for mode in ("on", "off"):
        env = {
            "MIA_LLAMACPP_REPACK": mode,
            "MIA_DATA_DIR": str(data_dir),
            "PATH": "/usr/bin:/bin",
            "HOME": str(Path.home()),
        }
        done = subprocess.run([sys.executable, "-c", REPLY], env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        replies[mode] = done.stdout.strip().splitlines()[-1]
    assert replies["off"] and replies["off"] != "''"
    assert replies["on"] == replies["off"], replies
