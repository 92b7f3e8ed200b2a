"""Process-wide llama.cpp servers (xllamacpp), one per (GGUF, LoRA adapter, slot layout).

Every role and chat-model instance that names the same GGUF shares one server, so its parallel
slots batch their requests and its prompt cache serves them all. A server with a LoRA adapter is a
second server over the same memory-mapped GGUF (the weights' pages are shared by the OS); only the
most recent adapters are kept, so test-time learning can publish versions without growing memory.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any, NamedTuple

from mia.graph.models.errors import BackendNotInstalledError, ModelFileNotFoundError
from mia.graph.models.native import NativeBuildError, cpu_flags, loaded_build, use_native
from mia.graph.models.settings import read_settings

#: Adapter servers kept alive besides the base servers (the newest ones).
MAX_ADAPTER_SERVERS = 2


class ServerKey(NamedTuple):
    """What makes two servers different."""

    gguf: str
    adapter: str | None
    n_ctx: int  # per slot
    n_parallel: int
    n_threads: int | None


_SERVERS: OrderedDict[ServerKey, Any] = OrderedDict()
_LOCK = threading.Lock()


def import_xllamacpp() -> Any:
    """The xllamacpp module (this CPU's native build when there is one and MIA_LLAMACPP_BUILD allows:
    mia.graph.models.native), or a clear error naming the package."""
    settings = read_settings()
    use_native(settings.data_dir, settings.llamacpp_build)
    try:
        import xllamacpp
    except ImportError as err:
        raise BackendNotInstalledError(
            "The 'llamacpp' backend needs xllamacpp (a prebuilt llama.cpp wheel): pip install xllamacpp"
        ) from err
    return xllamacpp


def repack_weights(mode: str, native: bool) -> bool:
    """Whether llama.cpp repacks the weights, for MIA_LLAMACPP_REPACK `mode` and the build in use.
    auto: not on this CPU's native build, where its plain kernels processed prompts faster and a
    question took less time; yes on the prebuilt wheel (llama.cpp's default), where the trade was
    closer and is unmeasured end to end (figures: bench/models/results.md)."""
    return mode == "on" if mode != "auto" else not native


def refuse_amx_repack(repack: bool, native: bool, flags: frozenset[str]) -> None:
    """Refuse repacking on a native build for a CPU with AMX: the native build compiles llama.cpp's
    AMX kernels, which repacking turns on, and on an AMX Xeon (under a Firecracker hypervisor) they
    killed the process with a general protection fault at `ldtilecfg` before the first token
    (bench/models/results.md). A one-line error loses nothing; a segfault loses the run."""
    if repack and native and "amx_int8" in flags:
        raise NativeBuildError(
            "MIA_LLAMACPP_REPACK=on with this CPU's native llama.cpp build would run llama.cpp's AMX kernels, which "
            "crashed the process on an AMX CPU (bench/models/results.md); use MIA_LLAMACPP_REPACK=auto or off, or "
            "MIA_LLAMACPP_BUILD=prebuilt to repack on the prebuilt wheel"
        )


def speculative_types(xlc: Any, mode: str) -> list[Any]:
    """llama.cpp's speculative types for MIA_LLAMACPP_SPEC `mode`: none for "off", else the one
    draftless n-gram type it names (drafts are looked up in the request's own tokens, so a reply that
    copies from its prompt, as a search query, a plan or an answer read from passages does, is
    verified several tokens per forward pass; the sampled tokens are the model's own)."""
    if mode == "off":
        return []
    return [getattr(xlc.common_speculative_type, "COMMON_SPECULATIVE_TYPE_" + mode.upper().replace("-", "_"))]


def set_speculative(spec: Any, types: list[Any], settings: Any) -> None:
    """Turn on `types` in xllamacpp's speculative params with the settings' n-gram lengths (the lookup
    n-gram and the longest draft; ngram-mod calls them n_match and n_max)."""
    if not types:
        return
    spec.types = types
    n, m = settings.llamacpp_spec_n, settings.llamacpp_spec_m
    for ngram in (spec.ngram_simple, spec.ngram_map_k, spec.ngram_map_k4v):
        ngram.size_n = n or ngram.size_n
        ngram.size_m = m or ngram.size_m
    spec.ngram_mod.n_match = n or spec.ngram_mod.n_match
    spec.ngram_mod.n_max = m or spec.ngram_mod.n_max
    spec.ngram_mod.n_min = min(spec.ngram_mod.n_min, spec.ngram_mod.n_max)


def _start(key: ServerKey) -> Any:
    xlc = import_xllamacpp()
    for path in (key.gguf, key.adapter):
        if path is not None and not Path(path).is_file():
            raise ModelFileNotFoundError(f"No GGUF file at {path}.")
    params = xlc.CommonParams()
    params.model.path = key.gguf
    params.n_parallel = key.n_parallel
    params.n_ctx = key.n_ctx * key.n_parallel  # llama.cpp splits the context between the slots
    # all cores by default (fastest on an idle machine); MIA_LLAMACPP_THREADS=1 when other work shares
    # the CPU: llama.cpp's threads spin-wait, and one thread then generates faster than two (measured).
    settings = read_settings()
    threads = key.n_threads or settings.llamacpp_threads or os.cpu_count() or 1
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.warmup = False
    native = loaded_build(xlc) == "native"
    repack = repack_weights(settings.llamacpp_repack, native)
    refuse_amx_repack(repack, native, cpu_flags())
    params.no_extra_bufts = not repack
    set_speculative(params.speculative, speculative_types(xlc, settings.llamacpp_spec), settings)
    params.verbosity = -1  # llama.cpp logs nothing unless asked (MIA_LLAMACPP_VERBOSE=1)
    if settings.llamacpp_verbose:
        params.verbosity = 1
    if key.adapter is not None:
        params.lora_adapters = [xlc.CommonAdapterLoraInfo(key.adapter, 1.0)]
    return xlc.Server(params)


def get_server(key: ServerKey) -> Any:
    """The server for `key`, started on first use (seconds: the GGUF is memory-mapped)."""
    with _LOCK:
        server = _SERVERS.get(key)
        if server is not None:
            _SERVERS.move_to_end(key)
            return server
        server = _start(key)
        _SERVERS[key] = server
        adapters = [k for k in _SERVERS if k.adapter is not None]
        for old in adapters[:-MAX_ADAPTER_SERVERS]:
            del _SERVERS[old]  # freed once the requests that hold it finish
        return server


def clear_servers() -> None:
    """Forget every server (tests; each is freed once no request holds it)."""
    with _LOCK:
        _SERVERS.clear()
