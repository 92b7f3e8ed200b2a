"""CLI command: `mia index PATH` indexes a user's own documents for the agent's `search` tool."""

from __future__ import annotations

import time
from pathlib import Path

import typer

HELP = """Index your own documents so the agent can search them.

PATH is a file or a folder. Supported: .txt and .md (split into paragraphs at blank lines and
headings, long ones cut at sentence ends; a markdown heading becomes the title) and .jsonl
(one {"title": ..., "text": ...} object per line). The index (BM25 + MiniLM embeddings) is
cached under $MIA_DATA_DIR/index/NAME-<hash>/; re-running on unchanged files reuses it.
"""


def index(
    path: Path = typer.Argument(..., help="A .txt/.md/.jsonl file or a folder of them.", exists=True,
                                resolve_path=True),
    name: str = typer.Option(None, "--name", "-n", help="Corpus name (default: the file or folder name)."),
    data_dir: Path = typer.Option(None, "--data-dir", help="Override $MIA_DATA_DIR.", envvar="MIA_DATA_DIR"),
    max_chars: int = typer.Option(1500, "--max-chars", min=200, help="Longest paragraph, in characters."),
) -> None:
    from mia.graph.tools.corpus import Corpus
    from mia.graph.tools.documents import DocumentError, read_documents
    from mia.graph.tools.index_cache import safe_name

    corpus_name = safe_name(name or path.stem)
    try:
        paragraphs = read_documents(path, max_chars=max_chars)
    except DocumentError as err:
        typer.secho(f"Error: {err}", fg=typer.colors.RED, err=True)
        raise typer.Exit(code=2) from err
    typer.echo(f"Read {len(paragraphs)} paragraphs from {path}")
    started = time.perf_counter()
    corpus = Corpus.build(paragraphs, name=corpus_name, data_dir=data_dir, progress=True)
    seconds = time.perf_counter() - started
    verb = "Reused the cached index" if corpus.index_source == "cache" else "Indexed"
    typer.echo(f"{verb} for corpus {corpus_name!r} ({len(corpus)} paragraphs, {seconds:.1f} s): {corpus.index_path}")
    typer.echo("Use it:")
    typer.echo(f"  mia ask --corpus {corpus_name} \"your question\"")
    typer.echo(f"  in Python:   Context(corpus={corpus_name!r})   or   mia.graph.tools.load_corpus({corpus_name!r})")
    typer.echo(f"  or by path:  Context(corpus={str(path)!r})   (re-indexes only when the files change)")


def register(app: typer.Typer) -> None:
    """Add `mia index` to the root app (called from mia.app.cli)."""
    app.command("index", help=HELP)(index)
