"""The `mia` command line. Each command group lives in its own module under mia.app.commands;
heavy imports (torch, chromadb, langgraph) happen inside the commands so `mia --help` is instant."""

from __future__ import annotations

import typer

from mia.app.commands import agent, evaluate, index, memory, models, train

app = typer.Typer(
    name="mia",
    help="MIA, the Memory Intelligence Agent: a deep-research agent with designed memory.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
    # click's plain help: rich's option table cuts long option names to fit 80 columns
    # (`--test-time-lear…`); click wraps the help text and always prints the names whole.
    rich_markup_mode=None,
)
models.register(app)
agent.register(app)
index.register(app)
evaluate.register(app)
app.add_typer(memory.app, name="memory")
app.add_typer(train.app, name="train")


@app.callback()
def _root(ctx: typer.Context) -> None:
    """MIA, the Memory Intelligence Agent: a deep-research agent with designed memory."""
    from mia.app.tracing import langsmith_tracing

    ctx.with_resource(langsmith_tracing())  # LANGSMITH_* from the environment or .env, for every command


def main() -> None:
    """Console-script entry point. A module that an extra provides, when missing, is one line
    naming the extra (the base install has no torch, trl, Studio or PostgreSQL packages)."""
    try:
        app()
    except ModuleNotFoundError as err:
        from mia.app.extras import missing_extra_message

        hint = missing_extra_message(err)
        if hint is None:
            raise
        import sys

        print(f"Error: {hint}", file=sys.stderr)
        raise SystemExit(2) from None


if __name__ == "__main__":  # pragma: no cover
    main()
