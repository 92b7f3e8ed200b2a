"""MIA_LLAMACPP_SPEC: llama.cpp's draftless n-gram speculation is off by default; each value names
an xllamacpp speculative type, its lengths are set where given and llama.cpp's own kept where not; a
bad value is one line; the real backend answers with it on, and llama.cpp reports the drafts."""

from __future__ import annotations

import json
import typing
from collections.abc import Callable

import pytest

from mia.graph.models.errors import BackendError
from mia.graph.models.servers import import_xllamacpp, set_speculative, speculative_types
from mia.graph.models.settings import Settings, read_settings

MODES = typing.get_args(Settings.model_fields["llamacpp_spec"].annotation)


def test_off_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MIA_LLAMACPP_SPEC", raising=False)
    assert read_settings().llamacpp_spec == "off"
    assert speculative_types(import_xllamacpp(), "off") == []


@pytest.mark.parametrize("mode", [m for m in MODES if m != "off"])
def test_every_value_names_a_type_of_the_installed_llamacpp(mode: str) -> None:
    xlc = import_xllamacpp()
    (kind,) = speculative_types(xlc, mode)
    assert kind.name == "COMMON_SPECULATIVE_TYPE_" + mode.upper().replace("-", "_")


def test_lengths_are_set_where_given_and_llamacpps_own_kept_where_not(monkeypatch: pytest.MonkeyPatch) -> None:
    xlc = import_xllamacpp()
    own = xlc.CommonParams().speculative
    monkeypatch.setenv("MIA_LLAMACPP_SPEC", " NGRAM-Simple ")
    monkeypatch.setenv("MIA_LLAMACPP_SPEC_N", "4")
    monkeypatch.setenv("MIA_LLAMACPP_SPEC_M", "")
    settings = read_settings()
    assert (settings.llamacpp_spec, settings.llamacpp_spec_n, settings.llamacpp_spec_m) == ("ngram-simple", 4, None)
    spec = xlc.CommonParams().speculative
    set_speculative(spec, speculative_types(xlc, settings.llamacpp_spec), settings)
    assert [t.name for t in spec.types] == ["COMMON_SPECULATIVE_TYPE_NGRAM_SIMPLE"]
    assert (spec.ngram_simple.size_n, spec.ngram_simple.size_m) == (4, own.ngram_simple.size_m)
    assert spec.ngram_mod.n_match == 4 and spec.ngram_mod.n_max == own.ngram_mod.n_max
    untouched = xlc.CommonParams().speculative
    set_speculative(untouched, [], settings)  # off: nothing changes
    assert [t.name for t in untouched.types] == ["COMMON_SPECULATIVE_TYPE_NONE"]
    assert untouched.ngram_simple.size_n == own.ngram_simple.size_n


@pytest.mark.parametrize(("name", "raw"), [("MIA_LLAMACPP_SPEC", "eagle"), ("MIA_LLAMACPP_SPEC_M", "0")])
def test_a_bad_value_is_one_line(monkeypatch: pytest.MonkeyPatch, name: str, raw: str) -> None:
    monkeypatch.setenv(name, raw)
    with pytest.raises(BackendError, match=name) as err:
        read_settings()
    assert "\n" not in str(err.value)


REPLY = (
    "import json; from mia.graph.models import load_chat_model; "
    "m = load_chat_model('llamacpp:smollm2', max_tokens=40, temperature=0, n_threads=1); "
    "r = m.invoke('Repeat this sentence exactly: the quick brown fox jumps over the lazy dog, the quick brown fox.'); "
    "print(json.dumps({'text': r.content, 'timings': r.response_metadata.get('timings')}))"
)


@pytest.mark.real_model
@pytest.mark.parametrize("mode", ["off", "ngram-simple"])
def test_the_real_backend_answers_with_drafts_when_asked(fresh_python: Callable[..., str], mode: str) -> None:
    out = fresh_python(REPLY, MIA_LLAMACPP_SPEC=mode, MIA_LLAMACPP_SPEC_N="3", MIA_LLAMACPP_SPEC_M="8")
    reply = json.loads(out)
    assert reply["text"].strip()
    drafted = (reply["timings"] or {}).get("draft_n", 0)
    assert (drafted > 0) is (mode != "off")  # the copy is drafted from the prompt's own tokens
