"""`mia memory ...`: inspect and maintain the workflow memory (list, show, search, stats,
export, import, prune, reset). Options default to the MIA_* environment variables; the memory
layer is imported inside the commands so `mia --help` stays instant."""

from __future__ import annotations

import datetime as dt
import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn, Optional, TypeVar

import typer

app = typer.Typer(help="Inspect and maintain MIA's workflow memory.", no_args_is_help=True)


def _state(ctx: typer.Context) -> dict[str, Any]:
    return ctx.ensure_object(dict)


@app.callback()
def _options(
    ctx: typer.Context,
    data_dir: Optional[Path] = typer.Option(
        None,
        "--data-dir",
        envvar="MIA_DATA_DIR",
        help="Data folder; the store is DATA_DIR/memory [default: ~/.local/share/mia].",
    ),
    namespace: Optional[str] = typer.Option(
        None,
        "--namespace",
        "-n",
        envvar="MIA_MEMORY_NAMESPACE",
        help="Namespace (a user, tenant or project) [default: default].",
    ),
    chroma_mode: str = typer.Option(
        "persistent",
        "--chroma-mode",
        envvar="MIA_CHROMA_MODE",
        help="persistent (embedded store in DATA_DIR) or http (a Chroma server).",
    ),
    chroma_host: Optional[str] = typer.Option(
        None, "--chroma-host", envvar="MIA_CHROMA_HOST", help="Chroma server host (http mode) [default: localhost]."
    ),
    chroma_port: Optional[int] = typer.Option(
        None, "--chroma-port", envvar="MIA_CHROMA_PORT", help="Chroma server port (http mode) [default: 8000]."
    ),
) -> None:
    from mia.memory import InvalidNamespaceError, check_namespace, config  # config: the one definition of defaults

    namespace = config.namespace() if namespace is None else namespace
    try:
        check_namespace(namespace)
    except InvalidNamespaceError as err:
        _fail(str(err))
    _state(ctx).update(
        data_dir=data_dir,
        namespace=namespace,
        mode=chroma_mode,
        host=chroma_host or config.chroma_host(),
        port=chroma_port or config.chroma_port(),
    )


def _open(ctx: typer.Context, read_only: bool = False) -> Any:
    """Open the store or exit with the store's own message (no stack trace). Read-only
    commands also work on a data folder that cannot be written."""
    from mia.memory import MemoryStore, MemoryStoreError, config

    opts = _state(ctx)
    folder = config.memory_dir(opts["data_dir"])  # --data-dir, else MIA_DATA_DIR (environment or .env)
    try:
        if opts["mode"] == "http":
            return MemoryStore.open_http(opts["host"], opts["port"], log_dir=folder)
        if opts["mode"] != "persistent":
            raise MemoryStoreError(f"--chroma-mode must be 'persistent' or 'http', not {opts['mode']!r}")
        return MemoryStore.open(folder, read_only=read_only)
    except MemoryStoreError as err:
        _fail(str(err))


def _fail(message: str) -> NoReturn:
    """One line on stderr, exit status 1."""
    line = " ".join(str(message).split()) or "failed"
    typer.secho(f"error: {line}", fg=typer.colors.RED, err=True)
    raise typer.Exit(1)


F = TypeVar("F", bound=Callable[..., Any])


def _one_line_errors(command: F) -> F:
    """Every expected failure of a command (a bad store, bad input, an unwritable or unreadable
    file, text that is not valid UTF-8) ends as one line on stderr, not a stack trace."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from pydantic import ValidationError

        from mia.memory import MemoryStoreError

        try:
            return command(*args, **kwargs)
        except (MemoryStoreError, OSError, ValueError, ValidationError, UnicodeError) as err:
            _fail(f"{type(err).__name__}: {err}" if not isinstance(err, MemoryStoreError) else str(err))

    return wrapper  # type: ignore[return-value]


def _when(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts, dt.timezone.utc).strftime("%Y-%m-%d %H:%M")


def _console() -> Any:
    from rich.console import Console

    return Console()


def _short(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "\u2026"


@app.command("list")
@_one_line_errors
def list_(
    ctx: typer.Context,
    outcome: Optional[str] = typer.Option(None, help="Only correct, incorrect or unknown."),
    limit: int = typer.Option(20, min=1, help="How many, newest first."),
    all_namespaces: bool = typer.Option(False, "--all-namespaces", "-A", help="Every namespace."),
    as_json: bool = typer.Option(False, "--json", help="JSON lines instead of a table."),
) -> None:
    """List memories, newest first."""
    from typing import get_args

    from rich.table import Table

    from mia.memory.trajectory import Outcome

    if outcome is not None and outcome not in get_args(Outcome):
        _fail(f"--outcome must be {', '.join(get_args(Outcome))}, not {outcome!r}")
    store = _open(ctx, read_only=True)
    ns = None if all_namespaces else _state(ctx)["namespace"]
    records = store.list(ns, outcome=outcome, limit=limit)
    if as_json:
        for rec in records:
            typer.echo(rec.model_dump_json())
        return
    table = Table(title=f"memories in {ns or 'all namespaces'} ({store.count(ns)} in all)")
    for column in ("id", "namespace", "outcome", "win rate", "used", "created", "question"):
        table.add_column(column)
    for rec in records:
        table.add_row(
            rec.id[:12],
            rec.namespace,
            rec.outcome,
            f"{rec.win_rate(store.weights.prior_success, store.weights.prior_failure):.2f}",
            str(rec.usage_count),
            _when(rec.created_at),
            _short(rec.question, 60),
        )
    _console().print(table)


@app.command()
@_one_line_errors
def show(
    ctx: typer.Context,
    memory_id: str = typer.Argument(..., help="The id, or a unique prefix of it."),
    all_namespaces: bool = typer.Option(False, "--all-namespaces", "-A", help="Look in every namespace."),
) -> None:
    """Show one memory of --namespace in full."""
    store = _open(ctx, read_only=True)
    ns = None if all_namespaces else _state(ctx)["namespace"]
    rec = store.get(memory_id, ns)
    if rec is None:
        matches = [r for r in store.list(ns) if r.id.startswith(memory_id)]
        if len(matches) != 1:
            where = "" if ns is None else f" in namespace {ns!r}"
            _fail(
                f"no memory with id {memory_id!r}{where}"
                if not matches
                else f"{len(matches)} memories start with {memory_id!r}{where}"
            )
        rec = matches[0]
    console = _console()
    console.print(
        f"[bold]{rec.id}[/bold]  namespace={rec.namespace}  outcome={rec.outcome}  "
        f"used={rec.usage_count}  succeeded={rec.success_count}  "
        f"win rate={rec.win_rate(store.weights.prior_success, store.weights.prior_failure):.2f}"
    )
    console.print(
        f"created {_when(rec.created_at)}  last used {_when(rec.last_used_at)}  source={rec.source or '-'}  "
        f"dataset={rec.dataset or '-'}  trajectory={rec.trajectory_id or '-'}"
    )
    console.print(
        f"tokens: trace {rec.trace_tokens} -> workflow {rec.workflow_tokens} ({rec.compression}"
        f"{', by ' + rec.manager if rec.manager else ''})",
        markup=False,
        highlight=False,
    )
    if rec.flags:
        console.print(f"FLAGGED (never retrieved): {'; '.join(rec.flags)}", markup=False, highlight=False)
    console.print(f"\n[bold]Question[/bold]\n{rec.question}")
    if rec.caption:
        console.print(f"\n[bold]Image caption[/bold]\n{rec.caption}")
    console.print(f"\n[bold]Workflow[/bold]\n{rec.workflow}", markup=False, highlight=False)
    if rec.plan:
        console.print(f"\n[bold]Plan[/bold]\n{rec.plan}", markup=False, highlight=False)
    if rec.judge_feedback:
        console.print(f"\n[bold]Judge feedback[/bold]\n{rec.judge_feedback}", markup=False, highlight=False)


@app.command()
@_one_line_errors
def search(
    ctx: typer.Context,
    question: str = typer.Argument(..., help="The question to retrieve memories for."),
    k_pos: int = typer.Option(2, help="Positive memories (judged correct)."),
    k_neg: int = typer.Option(2, help="Negative memories (judged incorrect)."),
    as_json: bool = typer.Option(False, "--json", help="JSON instead of a table."),
    prompt: bool = typer.Option(False, "--prompt", help="Print the block the planner would see."),
) -> None:
    """Retrieve memories for a question, as the planner would (score = 0.7 similarity + 0.3 win rate)."""
    from rich.table import Table

    store = _open(ctx, read_only=True)
    got = store.retrieve(question, _state(ctx)["namespace"], k_pos=k_pos, k_neg=k_neg)
    if as_json:
        typer.echo(got.model_dump_json(indent=2))
        return
    if prompt:
        typer.echo(got.to_prompt_text())
        return
    table = Table(title=f"{len(got)} memories from {len(got.candidate_ids)} candidates")
    for column in ("kind", "id", "score", "similarity", "win rate", "question"):
        table.add_column(column)
    for kind, items in (("positive", got.positives), ("negative", got.negatives)):
        for item in items:
            table.add_row(
                kind,
                item.record.id[:12],
                f"{item.score:.3f}",
                f"{item.similarity:.3f}",
                f"{item.win_rate:.2f}",
                _short(item.record.question, 60),
            )
    _console().print(table)


@app.command()
@_one_line_errors
def stats(
    ctx: typer.Context,
    all_namespaces: bool = typer.Option(False, "--all-namespaces", "-A", help="Every namespace."),
    as_json: bool = typer.Option(False, "--json", help="JSON instead of a table."),
) -> None:
    """Counts, usage, win rates, sizes and compression ratio per namespace."""
    from rich.table import Table

    store = _open(ctx, read_only=True)
    data = store.stats(None if all_namespaces else _state(ctx)["namespace"])
    logged = store.trajectory_log.count()
    if as_json:
        typer.echo(
            json.dumps({"namespaces": data, "logged_trajectories": logged, "location": store.location}, indent=2)
        )
        return
    table = Table(title=f"memory at {store.location} ({logged} raw trajectories logged)")
    for column in (
        "namespace",
        "memories",
        "correct",
        "incorrect",
        "unknown",
        "used",
        "mean win rate",
        "trace -> workflow tokens",
        "ratio",
    ):
        table.add_column(column)
    for ns, row in data.items():
        ratio = f"{row['compression_ratio']:.1f}x" if row["compression_ratio"] else "-"
        sizes = f"{row['mean_trace_tokens']:.0f} -> {row['mean_workflow_tokens']:.0f}" if row["memories"] else "-"
        table.add_row(
            ns,
            str(row["memories"]),
            str(row["correct"]),
            str(row["incorrect"]),
            str(row["unknown"]),
            str(row["used"]),
            f"{row['mean_win_rate']:.2f}" if row["mean_win_rate"] is not None else "-",
            sizes,
            ratio,
        )
    _console().print(table)


@app.command()
@_one_line_errors
def export(
    ctx: typer.Context,
    path: Path = typer.Argument(..., help="JSONL file to write (its folder must exist)."),
    all_namespaces: bool = typer.Option(False, "--all-namespaces", "-A", help="Every namespace."),
    force: bool = typer.Option(
        False, "--force", help="Replace an existing regular file (never a link, folder or device)."
    ),
) -> None:
    """Export memories as JSONL (a header line, then one record per line; no vectors), with the other
    items an app put in the same store (MiaStore)."""
    from mia.graph.integrations import MiaStore
    from mia.memory.transfer import check_export_target

    check_export_target(path, force)  # before the store is opened: a refused path costs nothing
    store = _open(ctx, read_only=True)
    namespace = None if all_namespaces else _state(ctx)["namespace"]
    items = MiaStore(store).export_items(namespace)
    n = store.export_jsonl(path, namespace, overwrite=force, items=items)
    typer.echo(f"exported {n} memories" + (f" and {len(items)} other items" if items else "") + f" to {path}")


@app.command("import")
@_one_line_errors
def import_(
    ctx: typer.Context,
    path: Path = typer.Argument(..., exists=True, dir_okay=False, help="A file from `mia memory export`."),
    keep_namespaces: bool = typer.Option(
        False, "--keep-namespaces", help="Keep each record's namespace instead of --namespace."
    ),
    dedup: bool = typer.Option(
        True, "--dedup/--no-dedup", help="Resolve near-duplicates (the better memory survives)."
    ),
) -> None:
    """Import memories from JSONL (re-embedded; each bad line is reported and skipped, the good ones land)."""
    from mia.graph.integrations import MiaStore

    store = _open(ctx)
    skipped: list[str] = []
    counts = store.import_jsonl(
        path,
        None if keep_namespaces else _state(ctx)["namespace"],
        dedup=dedup,
        on_skip=skipped.append,
        put_items=MiaStore(store).import_items,
    )
    for line in skipped[:10]:
        typer.secho(f"skipped {_short(line, 160)}", fg=typer.colors.YELLOW, err=True)
    if len(skipped) > 10:
        typer.secho(f"skipped {len(skipped) - 10} more lines", fg=typer.colors.YELLOW, err=True)
    typer.echo(", ".join(f"{key.replace('_', ' ')} {value}" for key, value in counts.items()))


@app.command()
@_one_line_errors
def suspicious(
    ctx: typer.Context,
    remove: bool = typer.Option(False, "--remove", help="Delete them (asks first unless --yes)."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation."),
    all_namespaces: bool = typer.Option(False, "--all-namespaces", "-A", help="Every namespace."),
    as_json: bool = typer.Option(False, "--json", help="JSON lines instead of a table."),
) -> None:
    """List (and --remove) memories that give the model orders or copy a prompt's example.

    Flagged memories are never shown to the planner; this lists them with the reasons."""
    from rich.table import Table

    store = _open(ctx, read_only=not remove)
    ns = None if all_namespaces else _state(ctx)["namespace"]
    found = store.suspicious(ns)
    if as_json:
        for rec, reasons in found:
            typer.echo(
                json.dumps(
                    {
                        "id": rec.id,
                        "namespace": rec.namespace,
                        "reasons": reasons,
                        "manager": rec.manager,
                        "source": rec.source,
                        "workflow": rec.workflow,
                    }
                )
            )
    else:
        table = Table(title=f"{len(found)} suspicious memories in {ns or 'all namespaces'}")
        for column in ("id", "namespace", "source", "manager", "reasons", "workflow"):
            table.add_column(column)
        for rec, reasons in found:
            table.add_row(
                rec.id[:12],
                rec.namespace,
                rec.source or "-",
                rec.manager or "-",
                _short("; ".join(reasons), 60),
                _short(rec.workflow, 60),
            )
        _console().print(table)
    if remove and found:
        if not yes and not typer.confirm(f"Delete these {len(found)} memories?", default=False):
            typer.echo("aborted")
            raise typer.Exit(1)
        removed = store.delete([rec.id for rec, _ in found], ns)
        typer.echo(f"deleted {removed} suspicious memories")


@app.command()
@_one_line_errors
def prune(
    ctx: typer.Context,
    max_size: Optional[int] = typer.Option(
        None,
        min=1,
        help="Keep at most this many memories per namespace (evict the least valuable; at least 1: `reset` deletes them all).",
    ),
    consolidate: bool = typer.Option(True, "--consolidate/--no-consolidate", help="Merge near-duplicates first."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask before evicting."),
    all_namespaces: bool = typer.Option(False, "--all-namespaces", "-A", help="Every namespace."),
) -> None:
    """Merge near-duplicates and evict memories with a low win rate that were long unused."""
    store = _open(ctx)
    ns = None if all_namespaces else _state(ctx)["namespace"]
    if consolidate:
        for name, row in store.consolidate(ns).items():
            typer.echo(f"{name}: merged {row['merged']}, re-indexed {row['reindexed']} trajectories")
    if max_size is not None:
        doomed = store.prune(ns, max_size=max_size, dry_run=True)
        if (
            doomed
            and not yes
            and not typer.confirm(
                f"Evict {len(doomed)} of {store.count(ns)} memories, keeping at most {max_size} per namespace?",
                default=False,
            )
        ):
            typer.echo("aborted")
            raise typer.Exit(1)
        evicted = store.prune(ns, max_size=max_size)
        typer.echo(f"evicted {len(evicted)} memories")
    typer.echo(f"{store.count(ns)} memories left")


@app.command()
@_one_line_errors
def reset(
    ctx: typer.Context,
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation."),
    all_namespaces: bool = typer.Option(False, "--all-namespaces", "-A", help="Every namespace."),
    include_log: bool = typer.Option(
        False, "--include-log", help="Also move the raw trajectory log aside (all namespaces only)."
    ),
) -> None:
    """Delete the memories of a namespace (the raw trajectory log is kept unless --include-log)."""
    ns = None if all_namespaces else _state(ctx)["namespace"]
    what = "ALL namespaces" if ns is None else f"namespace {ns!r}"
    if not yes and not typer.confirm(f"Delete every memory in {what}?", default=False):
        typer.echo("aborted")
        raise typer.Exit(1)
    store = _open(ctx)
    removed = store.reset(ns, include_log=include_log and ns is None)
    typer.echo(f"deleted {removed} memories from {what}")
