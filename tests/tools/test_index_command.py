"""`mia index PATH` on a temp folder of txt/md/jsonl files, through typer's CliRunner."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from mia.app.commands import index as index_command
from mia.graph.tools import load_corpus, read_documents
from mia.graph.tools.documents import DocumentError, split_text


@pytest.fixture()
def app() -> typer.Typer:
    app = typer.Typer()
    index_command.register(app)

    @app.callback()
    def root() -> None:  # a group, as in mia.app.cli
        pass

    return app


@pytest.fixture()
def docs(tmp_path):
    folder = tmp_path / "docs"
    (folder / "sub").mkdir(parents=True)
    (folder / "notes.txt").write_text(
        "Field notes.\n\nThe quokka lives on Rottnest Island near Perth.\n\n\nRottnest has no foxes.\n",
        encoding="utf-8",
    )
    (folder / "sub" / "mars.md").write_text(
        "# Mars\n\nMars is the fourth planet from the Sun.\n\n## Moons\nPhobos and Deimos are the two moons of Mars.\n",
        encoding="utf-8",
    )
    (folder / "letters.jsonl").write_text(
        json.dumps({"title": "Zeta", "text": "Zeta is the sixth letter of the Greek alphabet."})
        + "\n\n"
        + json.dumps({"id": "y1", "title": "Upsilon", "text": "Upsilon is the twentieth Greek letter."})
        + "\n",
        encoding="utf-8",
    )
    (folder / "image.png").write_bytes(b"\x89PNG")  # ignored
    return folder


def test_read_documents(docs):
    paragraphs = read_documents(docs)
    by_text = {p["text"]: p for p in paragraphs}
    assert len(paragraphs) == 7
    assert by_text["Phobos and Deimos are the two moons of Mars."]["title"] == "Mars > Moons"
    assert by_text["The quokka lives on Rottnest Island near Perth."]["title"] == "notes"
    assert by_text["Upsilon is the twentieth Greek letter."]["id"] == "y1"
    assert by_text["Zeta is the sixth letter of the Greek alphabet."]["id"] == "letters.jsonl:1"


def test_long_blocks_are_split_at_sentences():
    text = " ".join(f"Sentence number {i} is here." for i in range(200))
    pieces = split_text(text, max_chars=300)
    assert len(pieces) > 10 and all(len(p) <= 300 for p in pieces)
    assert pieces[0].startswith("Sentence number 0 is here.") and pieces[0].endswith(".")
    assert " ".join(pieces) == text
    assert all(len(p) <= 300 for p in split_text("x" * 1000, max_chars=300))


def test_index_command_builds_then_reuses(app, docs, tmp_path):
    runner = CliRunner()
    data = tmp_path / "data"
    result = runner.invoke(app, ["index", str(docs), "--name", "my notes", "--data-dir", str(data)])
    assert result.exit_code == 0, result.output
    assert "Read 7 paragraphs" in result.output
    assert "Indexed for corpus 'my-notes' (7 paragraphs" in result.output
    assert "Context(corpus='my-notes')" in result.output
    again = runner.invoke(app, ["index", str(docs), "--name", "my notes", "--data-dir", str(data)])
    assert again.exit_code == 0 and "Reused the cached index" in again.output

    corpus = load_corpus("my-notes", data_dir=data)
    assert corpus.index_source == "cache" and len(corpus) == 7
    assert corpus.search(["Which moons orbit Mars?"], k=1)[0][0].title == "Mars > Moons"
    assert corpus.search(["where do quokkas live"], k=1)[0][0].text.startswith("The quokka")


def test_index_command_reports_bad_files(app, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"title": "ok", "text": "fine"}\n{"title": "broken", "text": \n', encoding="utf-8")
    result = CliRunner().invoke(app, ["index", str(bad), "--data-dir", str(tmp_path / "data")])
    assert result.exit_code == 2
    assert "bad.jsonl:2: not valid JSON" in result.output
    assert not (tmp_path / "data" / "index").exists()
    missing = CliRunner().invoke(app, ["index", str(tmp_path / "nope")])
    assert missing.exit_code != 0


def test_bad_files_in_a_folder_are_skipped_with_reasons_and_the_rest_indexed(app, docs, tmp_path):
    (docs / "latin1.txt").write_bytes("Caf\xe9 au lait.\n".encode("latin-1"))
    (docs / "broken.jsonl").write_text('{"title": "ok", "text": "fine"}\n{"title": \n', encoding="utf-8")
    (docs / "huge.txt").write_text("word " * 300_000, encoding="utf-8")  # 1.4 MB
    (docs / "nul.md").write_text("# Ti\x00tle\x07\n\nThe wombat\x00 digs burrows.\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["index", str(docs), "--data-dir", str(tmp_path / "data"), "--max-file-mb", "1"])
    assert result.exit_code == 0, result.output
    for name, why in (
        ("latin1.txt", "not UTF-8 text"),
        ("broken.jsonl", "line 2: not valid JSON"),
        ("huge.txt", "over the 1 MB limit"),
    ):
        assert f"skipped {name}: " in result.output and why in result.output, (name, result.output)
    assert "Read 8 paragraphs" in result.output and "3 file(s) skipped" in result.output
    wombat = [p for p in read_documents(docs) if "wombat" in p["text"]]
    assert wombat == [{"id": "nul.md#0", "title": "Title", "text": "The wombat digs burrows.", "source": "nul.md"}]
    seen: list[tuple[str, str]] = []
    read_documents(docs, max_file_bytes=2**20, on_skip=lambda rel, why: seen.append((rel, why)))
    assert [rel for rel, _ in seen] == ["broken.jsonl", "huge.txt", "latin1.txt"]
    with pytest.raises(DocumentError, match="over the 1 MB limit"):  # a file given alone is an error
        read_documents(docs / "huge.txt", max_file_bytes=2**20)


def test_unknown_corpus_names_say_what_to_do(tmp_path):
    with pytest.raises(ValueError, match="mia index PATH --name nothing"):
        load_corpus("nothing", data_dir=tmp_path)
    (tmp_path / "x.jsonl").write_text('{"title": "t"}\n', encoding="utf-8")
    with pytest.raises(DocumentError, match="x.jsonl:1: no 'text' string"):
        read_documents(tmp_path / "x.jsonl")


def test_a_corrupt_named_index_says_to_reindex(app, docs, tmp_path):
    data = tmp_path / "data"
    assert CliRunner().invoke(app, ["index", str(docs / "notes.txt"), "--data-dir", str(data)]).exit_code == 0
    folder = next((data / "index").iterdir())
    (folder / "paragraphs.json").write_text('[{"id": "x"', encoding="utf-8")
    with pytest.raises(
        ValueError, match=r"index of corpus 'notes' .* is corrupt .* re-run `mia index PATH --name notes`"
    ):
        load_corpus("notes", data_dir=data)


@pytest.mark.skipif(not Path("/sys/kernel").is_dir(), reason="needs Linux's /sys, where no user can make a file")
@pytest.mark.parametrize("target", ["sysfs", "a file"])
def test_an_unwritable_target_is_refused_before_anything_is_read(app, docs, tmp_path, target):
    """Before: os.access answered yes to root for /sys, so all the files were read and embedded and
    the index could not be saved at the end; a file given as --data-dir was reported as a
    permission problem. Now a temporary file is tried first (issue 42.5)."""
    from mia.graph.tools.embedder import EMBED_COUNTER

    data = Path("/sys") if target == "sysfs" else tmp_path / "plain.txt"
    if target == "a file":
        data.write_text("not a folder\n")
    embedded = EMBED_COUNTER["texts"]
    result = CliRunner().invoke(app, ["index", str(docs), "--data-dir", str(data)])
    assert result.exit_code == 2, result.output
    assert "choose another --data-dir" in result.output and "Read " not in result.output
    assert ("cannot write in /sys" if target == "sysfs" else "is not a folder") in result.output
    assert EMBED_COUNTER["texts"] == embedded and len(result.output.strip().splitlines()) == 1


def test_indexing_shows_a_progress_bar_with_an_estimate(app, docs, tmp_path):
    result = CliRunner().invoke(app, ["index", str(docs), "--data-dir", str(tmp_path / "data")])
    assert result.exit_code == 0, result.output
    assert re.search(r"indexing docs: 100%.*\d\d:\d\d<\d\d:\d\d", result.output), result.output  # elapsed<left
