"""CLI commands about model backends: `mia doctor` and `mia serve-model`."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add this module's commands to the root app."""
    app.command("doctor")(doctor)
    app.command("serve-model")(serve_model)


def doctor(
    no_device: bool = typer.Option(False, "--no-device", help="Skip the CUDA probe (avoids importing torch)."),
) -> None:
    """Show installed versions, which model backends are usable, and where the data lives.

    Exits with code 1 when a configured role (MIA_PLANNER_MODEL, ...) cannot run.
    """
    from mia.app.doctor import collect, render
    from mia.app.settings import get_settings

    settings = get_settings()
    settings.apply_to_environ()
    report = collect(settings, probe_device=not no_device)
    render(report)
    raise typer.Exit(0 if report.ok else 1)


def serve_model(
    model: str | None = typer.Option(None, "--model", "-m", help="Model spec to serve, e.g. local:smollm2, hf:DIR+ADAPTER, llamacpp:smollm2, openai:gpt-4o-mini. Default: MIA_EXECUTOR_MODEL."),
    host: str = typer.Option("127.0.0.1", help="Interface to listen on (0.0.0.0 exposes it to the network)."),
    port: int = typer.Option(8000, help="TCP port; 0 picks a free port (the URL is printed)."),
    log_level: str = typer.Option("warning", help="uvicorn log level."),
) -> None:
    """Serve a model over an OpenAI-compatible HTTP API (/v1/chat/completions, /v1/models, /health).

    Use it from mia (or any OpenAI client) as `openai-compatible:<name>@http://HOST:PORT/v1`.
    """
    from mia.app.model_server import serve
    from mia.app.settings import get_settings
    from mia.graph.models import BackendError

    settings = get_settings()
    settings.apply_to_environ()
    try:
        serve(model or settings.executor_model, host=host, port=port, log_level=log_level)
    except BackendError as err:
        typer.secho(f"error: {err}", fg=typer.colors.RED, err=True)
        raise typer.Exit(2) from err
    except OSError as err:
        typer.secho(f"error: cannot listen on {host}:{port}: {err}", fg=typer.colors.RED, err=True)
        raise typer.Exit(2) from err
