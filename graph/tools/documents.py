"""Turn a user's files (txt, md, jsonl) into paragraphs for `mia index` and `corpus="<path>"`.

Why split by blank lines and headings with a size cap: search returns whole paragraphs into the
agent's context, so a paragraph should be one idea (a few hundred words at most); markdown headings
become titles because they are what a question usually names.
"""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Iterator
from pathlib import Path

from mia.graph.tools.paragraphs import Paragraph

TEXT_SUFFIXES = (".txt", ".md", ".markdown")
JSONL_SUFFIXES = (".jsonl", ".jsonl.gz")
MAX_CHARS = 1500  # longer blocks are split at sentence ends
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.+?)\s*#*\s*$")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


class DocumentError(ValueError):
    """A file that cannot be read as documents; the message names the file (and line)."""


def supported(path: Path) -> bool:
    name = path.name.lower()
    return name.endswith(TEXT_SUFFIXES) or name.endswith(JSONL_SUFFIXES)


def list_files(path: Path) -> list[Path]:
    """The supported files under `path` (or `path` itself), sorted for a stable corpus order."""
    if path.is_file():
        if not supported(path):
            raise DocumentError(f"{path}: unsupported file type (use .txt, .md or .jsonl)")
        return [path]
    if not path.is_dir():
        raise DocumentError(f"{path}: no such file or folder")
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
        raise DocumentError(f"{path}:{number + 1}: not UTF-8 JSON lines ({type(err).__name__})") from err


def _jsonl_paragraph(path: Path, rel: str, number: int, line: str) -> Paragraph:
    """One line of a .jsonl file as a paragraph; DocumentError names the file and line."""
    try:
        record = json.loads(line)
    except RecursionError as err:
        raise DocumentError(f"{path}:{number}: JSON nested too deeply") from err
    except json.JSONDecodeError as err:
        raise DocumentError(f"{path}:{number}: not valid JSON ({err.msg})") from err
    if not isinstance(record, dict):
        raise DocumentError(f"{path}:{number}: expected a JSON object with 'title' and 'text'")
    text = record.get("text", record.get("contents"))
    if not isinstance(text, str) or not text.strip():
        raise DocumentError(f"{path}:{number}: no 'text' string (keys: {sorted(record)[:8]})")
    title = record.get("title") or ""
    try:
        (text + str(title)).encode("utf-8")
    except UnicodeEncodeError as err:
        raise DocumentError(f"{path}:{number}: text is not valid Unicode ({err.reason})") from err
    para: Paragraph = {"id": str(record.get("id") or f"{rel}:{number}"), "title": str(title),
                       "text": text.strip()}
    for key in ("source", "license"):
        if record.get(key):
            para[key] = str(record[key])  # type: ignore[literal-required]
    return para


def read_documents(path: str | Path, max_chars: int = MAX_CHARS) -> list[Paragraph]:
    """All paragraphs of a file or folder. Raises DocumentError for unreadable input."""
    root = Path(path).expanduser()
    files = list_files(root)
    if not files:
        raise DocumentError(f"{root}: no .txt, .md or .jsonl files found")
    out: list[Paragraph] = []
    for file in files:
        rel = file.name if root.is_file() else file.relative_to(root).as_posix()
        if file.name.lower().endswith(JSONL_SUFFIXES):
            out.extend(_jsonl_paragraphs(file, rel))
            continue
        try:
            text = file.read_text(encoding="utf-8")
        except UnicodeDecodeError as err:
            raise DocumentError(f"{file}: not UTF-8 text ({err.reason})") from err
        for n, (title, piece) in enumerate(text_paragraphs(text, file.stem, max_chars)):
            out.append({"id": f"{rel}#{n}", "title": title, "text": piece, "source": rel})
    if not out:
        raise DocumentError(f"{root}: the files hold no text ({len(files)} file(s), all empty)")
    return out
