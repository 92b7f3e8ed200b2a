"""CLI commands: mia memory ... (placeholder until its issue lands)."""

from __future__ import annotations

import typer

app = typer.Typer(help="memory commands", no_args_is_help=True)
