"""MIA_LLAMACPP_REPACK (issue 41): llama.cpp's weight repacking is off on this CPU's native build
(measured faster there, bench/models/results.md), on for the prebuilt wheel, and on/off force it;
a bad value is one line; the real backend starts and answers with repacking off. Which build a run
used and its repacking are checked through `mia doctor` in tests/models/test_native_build.py."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from mia.graph.models.errors import BackendError
from mia.graph.models.native import NativeBuildError
from mia.graph.models.servers import refuse_amx_repack, repack_weights
from mia.graph.models.settings import read_settings


@pytest.mark.parametrize(
    ("mode", "native", "expected"),
    [
        ("auto", False, True),  # prebuilt wheel: llama.cpp's default
        ("auto", True, False),  # this CPU's native build: the plain kernels
        ("on", True, True),
        ("off", False, False),
    ],
)
def test_which_build_repacks(mode: str, native: bool, expected: bool) -> None:
    assert repack_weights(mode, native) is expected


def test_repacking_on_a_native_amx_build_is_refused_in_one_line() -> None:
    """On an AMX Xeon the native build's AMX kernels, which repacking turns on, segfaulted."""
    amx = frozenset({"avx512f", "amx_tile", "amx_int8"})
    with pytest.raises(NativeBuildError, match="MIA_LLAMACPP_REPACK=auto or off") as err:
        refuse_amx_repack(True, True, amx)
    assert "\n" not in str(err.value)
    refuse_amx_repack(False, True, amx)  # auto on the native build: no repacking, no AMX kernels
    refuse_amx_repack(True, False, amx)  # the prebuilt wheel has no AMX kernels
    refuse_amx_repack(True, True, frozenset({"avx512f", "avx512_vnni"}))


@pytest.mark.parametrize(("raw", "mode"), [("", "auto"), (" OFF ", "off"), ("on", "on")])
def test_the_setting_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch, raw: str, mode: str) -> None:
    monkeypatch.setenv("MIA_LLAMACPP_REPACK", raw)
    assert read_settings().llamacpp_repack == mode


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
def test_the_real_backend_answers_with_repacking_off(fresh_python: Callable[..., str]) -> None:
    assert fresh_python(REPLY, MIA_LLAMACPP_REPACK="off") not in ("", "''")


def test_doctor_fails_the_setting_a_load_would_refuse(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """`mia doctor` on an AMX CPU with a native build and MIA_LLAMACPP_REPACK=on: a failed check
    with the load's own message, not "weight repacking on" and a crash at the first question."""
    from types import SimpleNamespace

    from mia.app import doctor
    from mia.app.settings import Settings
    from mia.graph.models import native

    monkeypatch.setattr(native, "selected_build", lambda *a: SimpleNamespace(folder=tmp_path))
    monkeypatch.setattr(native, "cpu_flags", lambda: frozenset({"avx512f", "amx_tile", "amx_int8"}))
    refused = doctor._llamacpp_build(Settings(data_dir=tmp_path, llamacpp_repack="on"))
    assert not refused.ok and "MIA_LLAMACPP_REPACK=auto or off" in refused.detail
    fine = doctor._llamacpp_build(Settings(data_dir=tmp_path, llamacpp_repack="auto"))
    assert fine.ok and "weight repacking off" in fine.detail
