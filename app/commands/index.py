"""CLI command: `mia index PATH` indexes a user's own documents for the agent's `search` tool."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import NoReturn

import typer

HELP = """Index your own documents so the agent can search them.

PATH is a file or a folder. Supported: .txt and .md (split into paragraphs at blank lines and
headings, long ones cut at sentence ends; a markdown heading becomes the title) and .jsonl
(one {"title": ..., "text": ...} object per line). The index (BM25 + MiniLM embeddings) is
cached under $MIA_DATA_DIR/index/NAME-<hash>/; re-running on unchanged files reuses it.

In a folder, a file that cannot be read (not UTF-8, bad JSON, larger than --max-file-mb) is
skipped with its reason and the others are indexed; NUL and other control characters are
dropped. The target folder's writability is checked before anything is read.
"""


def index(
    path: Path = typer.Argument(
        ..., help="A .txt/.md/.jsonl file or a folder of them.", exists=True, resolve_path=True
    ),
    name: str = typer.Option(None, "--name", "-n", help="Corpus name (default: the file or folder name)."),
    data_dir: Path = typer.Option(None, "--data-dir", help="Override $MIA_DATA_DIR.", envvar="MIA_DATA_DIR"),
    max_chars: int = typer.Option(1500, "--max-chars", min=200, help="Longest paragraph, in characters."),
    max_file_mb: float = typer.Option(20, "--max-file-mb", min=0.001, help="Skip files larger than this (MB)."),
) -> None:
    from mia.graph.tools.corpus import Corpus
    from mia.graph.tools.documents import DocumentError, read_documents
    from mia.graph.tools.index_cache import index_root, safe_name

    def fail(err: BaseException) -> NoReturn:
        """One line on stderr (the file and line when the reader knows them), exit status 2."""
        text = " ".join(str(err).split()) or type(err).__name__
        prefix = "" if isinstance(err, DocumentError) else f"{type(err).__name__}: "
        typer.secho(f"Error: {prefix}{text}", fg=typer.colors.RED, err=True)
        raise typer.Exit(code=2) from None

    corpus_name = safe_name(name or path.stem)
    try:  # before any reading or embedding: a read-only target would throw that work away
        check_writable(index_root(data_dir))
    except OSError as err:
        fail(err)
    skipped: list[tuple[str, str]] = []
    try:
        paragraphs = read_documents(
            path,
            max_chars=max_chars,
            max_file_bytes=int(max_file_mb * 2**20),
            on_skip=lambda rel, why: skipped.append((rel, why)),
        )
    except (DocumentError, OSError, UnicodeError) as err:
        fail(err)
    for rel, why in skipped:
        typer.secho(f"skipped {ascii(rel)[1:-1]}: {' '.join(why.split())}", fg=typer.colors.YELLOW, err=True)
    more = f" ({len(skipped)} file(s) skipped, listed above)" if skipped else ""
    typer.echo(f"Read {len(paragraphs)} paragraphs from {ascii(str(path))[1:-1]}{more}")
    started = time.perf_counter()
    try:
        corpus = Corpus.build(paragraphs, name=corpus_name, data_dir=data_dir, progress=True)
    except (ValueError, OSError, UnicodeError) as err:  # e.g. a read-only data folder
        fail(err)
    seconds = time.perf_counter() - started
    verb = "Reused the cached index" if corpus.index_source == "cache" else "Indexed"
    typer.echo(f"{verb} for corpus {corpus_name!r} ({len(corpus)} paragraphs, {seconds:.1f} s): {corpus.index_path}")
    typer.echo("Use it:")
    typer.echo(f'  mia ask --corpus {corpus_name} "your question"')
    typer.echo(f"  in Python:   Context(corpus={corpus_name!r})   or   mia.graph.tools.load_corpus({corpus_name!r})")
    typer.echo(f"  or by path:  Context(corpus={str(path)!r})   (re-indexes only when the files change)")


def check_writable(folder: Path) -> None:
    """Raise OSError (one line, naming --data-dir) unless a file can be made in `folder`, or in the
    nearest folder above it that exists, where the index's folders will be made. Tried with a
    temporary file, removed at once: os.access answers yes to root on a folder no one can write
    (a read-only bind mount, /sys), and the embedding would be thrown away at the end."""
    probe = folder
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir():
        raise NotADirectoryError(f"{probe} is not a folder (the index goes under {folder}; choose another --data-dir)")
    try:
        with tempfile.TemporaryFile(dir=probe):
            pass
    except OSError as err:
        raise PermissionError(
            f"cannot write in {probe} ({err.strerror or type(err).__name__}); "
            f"the index goes under {folder}: choose another --data-dir"
        ) from None


def register(app: typer.Typer) -> None:
    """Add `mia index` to the root app (called from mia.app.cli)."""
    app.command("index", help=HELP)(index)
