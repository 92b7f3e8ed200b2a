"""Turn a user's files (txt, md, jsonl) into paragraphs for `mia index` and `corpus="<path>"`.

Why split by blank lines and headings with a size cap: search returns whole paragraphs into the
agent's context, so a paragraph should be one idea (a few hundred words at most); markdown headings
become titles because they are what a question usually names.

In a folder, a file that cannot be read (not UTF-8, bad JSON, over the size limit) is skipped with
its reason and the rest are indexed: one bad file in a thousand must not cost the other 999. NUL and
other control characters are stripped from titles and texts (mia.memory.text.clean_text).
"""

from __future__ import annotations

import gzip
import json
import re
import logging
from collections.abc import Callable, Iterator
from pathlib import Path

from mia.graph.tools.paragraphs import Paragraph
from mia.memory.text import clean_text

log = logging.getLogger(__name__)

TEXT_SUFFIXES = (".txt", ".md", ".markdown")
JSONL_SUFFIXES = (".jsonl", ".jsonl.gz")
MAX_CHARS = 1500  # longer blocks are split at sentence ends
#: Largest file read (`mia index --max-file-mb`). 20 MB of text is ~14,000 paragraphs, a few minutes
#: of embedding on 2 cores; a bigger file is more likely a dump or a mistake than notes to search.
MAX_FILE_BYTES = 20 * 1024 * 1024
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.+?)\s*#*\s*$")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


class DocumentError(ValueError):
    """A file that cannot be read as documents: the file, the line of a .jsonl when one is at fault,
    and why (the message is `file:line: reason`, or `file: reason`)."""

    def __init__(self, path: Path, reason: str, line: int | None = None) -> None:
        self.path, self.reason, self.line = path, reason, line
        super().__init__(f"{path}:{line}: {reason}" if line else f"{path}: {reason}")

    def in_file(self) -> str:
        """What is wrong, without the file's name (a skipped file's reason)."""
        return f"line {self.line}: {self.reason}" if self.line else self.reason


def supported(path: Path) -> bool:
    name = path.name.lower()
    return name.endswith(TEXT_SUFFIXES) or name.endswith(JSONL_SUFFIXES)


def list_files(path: Path) -> list[Path]:
    """The supported files under `path` (or `path` itself), sorted for a stable corpus order."""
    if path.is_file():
        if not supported(path):
            raise DocumentError(path, "unsupported file type (use .txt, .md or .jsonl)")
        return [path]
    if not path.is_dir():
        raise DocumentError(path, "no such file or folder")
    return sorted(p for p in path.rglob("*") if p.is_file() and supported(p) and not p.name.startswith("."))


def split_text(text: str, max_chars: int = MAX_CHARS) -> list[str]:
    """Split a block at sentence ends (or hard, for run-on text) so no piece exceeds max_chars."""
    text = " ".join(text.split())
    if len(text) <= max_chars:
        return [text] if text else []
    pieces, current = [], ""
    for sentence in _SENTENCE_END.split(text):
        while len(sentence) > max_chars:  # a "sentence" longer than the cap: cut at a space
            cut = sentence.rfind(" ", 0, max_chars)
            cut = cut if cut > max_chars // 2 else max_chars
            if current:
                pieces.append(current)
                current = ""
            pieces.append(sentence[:cut].strip())
            sentence = sentence[cut:].strip()
        if current and len(current) + 1 + len(sentence) > max_chars:
            pieces.append(current)
            current = sentence
        else:
            current = f"{current} {sentence}".strip()
    if current:
        pieces.append(current)
    return [p for p in pieces if p]


def text_paragraphs(text: str, default_title: str, max_chars: int = MAX_CHARS) -> Iterator[tuple[str, str]]:
    """(title, text) pairs: blocks separated by blank lines; markdown headings set the title
    ("Mars > Moons" under "# Mars" / "## Moons", so a paragraph keeps its document's subject)."""
    headings: list[tuple[int, str]] = []
    block: list[str] = []

    def title() -> str:
        return " > ".join(h for _, h in headings) or default_title

    def flush() -> Iterator[tuple[str, str]]:
        if block:
            for piece in split_text("\n".join(block), max_chars):
                yield title(), piece
            block.clear()

    for line in text.splitlines():
        heading = _HEADING.match(line)
        if heading:
            yield from flush()
            level = len(heading.group(1))
            headings = [h for h in headings if h[0] < level] + [(level, heading.group(2).strip())]
        elif not line.strip():
            yield from flush()
        else:
            block.append(line)
    yield from flush()


def _jsonl_paragraphs(path: Path, rel: str) -> Iterator[Paragraph]:
    opener = gzip.open if path.name.endswith(".gz") else open
    number = 0
    try:
        with opener(path, "rt", encoding="utf-8") as fh:
            for number, line in enumerate(fh, start=1):
                if line.strip():
                    yield _jsonl_paragraph(path, rel, number, line)
    except (UnicodeDecodeError, EOFError, gzip.BadGzipFile) as err:
        raise DocumentError(path, f"not UTF-8 JSON lines ({type(err).__name__})", number + 1) from err


def _jsonl_paragraph(path: Path, rel: str, number: int, line: str) -> Paragraph:
    """One line of a .jsonl file as a paragraph; DocumentError names the file and line."""
    try:
        record = json.loads(line)
    except RecursionError as err:
        raise DocumentError(path, "JSON nested too deeply", number) from err
    except json.JSONDecodeError as err:
        raise DocumentError(path, f"not valid JSON ({err.msg})", number) from err
    if not isinstance(record, dict):
        raise DocumentError(path, "expected a JSON object with 'title' and 'text'", number)
    text = record.get("text", record.get("contents"))
    if not isinstance(text, str) or not text.strip():
        raise DocumentError(path, f"no 'text' string (keys: {sorted(record)[:8]})", number)
    text = clean_text(text).strip()
    if not text:
        raise DocumentError(path, "no 'text' string (only control characters)", number)
    para: Paragraph = {
        "id": clean_text(record.get("id") or f"{rel}:{number}"),
        "title": clean_text(record.get("title") or "").strip(),
        "text": text,
    }
    for key in ("source", "license"):
        if record.get(key):
            para[key] = clean_text(record[key])
    return para


def read_documents(
    path: str | Path,
    max_chars: int = MAX_CHARS,
    *,
    max_file_bytes: int = MAX_FILE_BYTES,
    on_skip: Callable[[str, str], None] | None = None,
) -> list[Paragraph]:
    """All paragraphs of a file or folder. A file given alone that cannot be read raises
    DocumentError; in a folder it is skipped, `on_skip(relative path, reason)` told (default: a
    logged warning), and the others are read. Raises DocumentError when nothing is left."""
    root = Path(path).expanduser()
    files = list_files(root)
    if not files:
        raise DocumentError(root, "no .txt, .md or .jsonl files found")
    skip = on_skip or (lambda rel, why: log.warning("skipped %s: %s", rel, why))
    out: list[Paragraph] = []
    skipped = 0
    for file in files:
        rel = file.name if root.is_file() else file.relative_to(root).as_posix()
        try:
            out.extend(_file_paragraphs(file, rel, max_chars, max_file_bytes))
        except DocumentError as err:
            if root.is_file():
                raise
            skipped += 1
            skip(rel, err.in_file())
    if not out:
        why = f"{skipped} skipped" if skipped else "all empty"
        raise DocumentError(root, f"the files hold no text ({len(files)} file(s), {why})")
    return out


def _file_paragraphs(file: Path, rel: str, max_chars: int, max_file_bytes: int) -> list[Paragraph]:
    """One file's paragraphs; DocumentError (naming the file) when it cannot be read."""
    try:
        return _read_file(file, rel, max_chars, max_file_bytes)
    except OSError as err:  # unreadable (permissions, a vanished file): a reason like any other
        raise DocumentError(file, str(err.strerror or err)) from err


def _read_file(file: Path, rel: str, max_chars: int, max_file_bytes: int) -> list[Paragraph]:
    size = file.stat().st_size
    if size > max_file_bytes:
        raise DocumentError(
            file,
            f"{size / 2**20:.1f} MB is over the {max_file_bytes / 2**20:.0f} MB limit "
            "(split it, or raise the limit with --max-file-mb)",
        )
    if file.name.lower().endswith(JSONL_SUFFIXES):
        return list(_jsonl_paragraphs(file, rel))
    try:
        text = file.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise DocumentError(file, f"not UTF-8 text ({err.reason} at byte {err.start})") from err
    pieces = [
        (clean_text(title).strip(), clean_text(piece).strip())
        for title, piece in text_paragraphs(text, file.stem, max_chars)
    ]
    return [
        {"id": f"{rel}#{n}", "title": title, "text": piece, "source": rel}
        for n, (title, piece) in enumerate(p for p in pieces if p[1])
    ]
