"""Generated hostile inputs for the memory layer and `mia index` (issue 16, "Must show"):
hostile namespaces, corrupt import files, corrupt index folders. Each asserts: no uncaught
exception, a one-line error on the CLI, and no acknowledged record lost."""

from __future__ import annotations

import itertools
import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from mia.memory import InvalidNamespaceError, MemoryRecord, MemoryStore, check_namespace

SETTINGS = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
_counter = itertools.count()

# --------------------------------------------------------------------------- strategies
HOSTILE_TEXT = st.one_of(
    st.text(max_size=80),
    st.text(alphabet=st.characters(codec="utf-8"), max_size=20),
    st.sampled_from(
        [
            "",
            " ",
            "default ",
            "../..",
            "a/b",
            "a\\b",
            "\x00",
            "ns\n",
            "\ud800",
            "\udcff",
            "..",
            "-",
            ".x",
            "x" * 65,
            "x" * 64,
            "caf\u00e9",
            "\u202eevil",
            "default\u200b",
            "CON",
            "a b",
        ]
    ),
    st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._:@+-]{0,70}", fullmatch=True),
)

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=10,
)

FIELDS = [
    "id",
    "namespace",
    "question",
    "workflow",
    "outcome",
    "usage_count",
    "success_count",
    "created_at",
    "last_used_at",
    "caption",
    "plan",
]


@st.composite
def bad_line(draw) -> bytes:
    """A line that may or may not be a valid record: garbage bytes, any JSON value, or a good
    record with one field replaced by a hostile value."""
    kind = draw(st.sampled_from(["bytes", "json", "mutated", "nested", "nan", "surrogate"]))
    if kind == "bytes":
        return draw(st.binary(min_size=1, max_size=60)).replace(b"\n", b" ").replace(b"\r", b" ")
    if kind == "json":
        return json.dumps(draw(JSON_VALUES)).encode()
    if kind == "nested":
        depth = draw(st.integers(500, 50_000))
        return b"[" * depth + b"]" * depth
    base = {"id": f"bad-{next(_counter)}", "question": "a hostile record?", "workflow": "1. w", "outcome": "correct"}
    if kind == "nan":
        return json.dumps(
            {**base, draw(st.sampled_from(["created_at", "last_used_at", "usage_count"])): float("nan")}
        ).encode()
    if kind == "surrogate":
        field = draw(st.sampled_from(["question", "workflow", "id", "caption"]))
        return json.dumps({**base, field: "x\ud800y"}).encode()
    field = draw(st.sampled_from(FIELDS))
    return json.dumps({**base, field: draw(JSON_VALUES | HOSTILE_TEXT)}).encode("utf-8", "surrogatepass")


def one_line(output: str) -> bool:
    return len([line for line in output.splitlines() if line.strip()]) == 1


# --------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def embedder():
    from mia.memory.embeddings import default_embedder

    return default_embedder()


@pytest.fixture(scope="module")
def data_dir(embedder):
    with tempfile.TemporaryDirectory() as tmp:
        with MemoryStore.open(Path(tmp) / "memory", embedder=embedder) as store:
            store.add_many(
                [MemoryRecord(id="anchor", question="Who wrote the novel Dracula?", workflow="1. w", outcome="correct")]
            )
        yield Path(tmp)


def cli(data_dir: Path, *args: str):
    from mia.app.commands.memory import app

    return CliRunner().invoke(
        app, ["--data-dir", str(data_dir), *args], env={"MIA_CHROMA_MODE": "persistent", "COLUMNS": "200"}
    )


# --------------------------------------------------------------------------- namespaces
@SETTINGS
@given(namespace=HOSTILE_TEXT)
def test_hostile_namespaces_are_valid_or_one_clear_error(data_dir, embedder, namespace):
    try:
        check_namespace(namespace)
        valid = True
    except InvalidNamespaceError as err:
        valid = False
        assert "\n" not in str(err)
    with MemoryStore.open(data_dir / "memory", embedder=embedder) as store:
        if not valid:
            for call in (
                lambda: store.count(namespace),
                lambda: store.list(namespace),
                lambda: store.retrieve("Dracula", namespace, query_embedding=embedder.embed_query("Dracula")),
                lambda: store.add_many([MemoryRecord(namespace=namespace, question="q", workflow="1. w")]),
            ):
                # InvalidNamespaceError from the store, or the record's own ValueError (a lone surrogate)
                with pytest.raises(ValueError, match="namespace"):
                    call()
        else:
            rec = MemoryRecord(namespace=namespace, question=f"q {next(_counter)}", workflow="1. w", outcome="correct")
            store.add_many([rec])
            assert store.get(rec.id, namespace) is not None and store.get(rec.id, "default") is None
            store.reset(namespace)
        assert store.get("anchor", "default") is not None  # nothing else was touched
    out = cli(data_dir, "--namespace", namespace, "list", "--json")
    if valid:
        assert out.exit_code == 0, out.output
    else:
        assert out.exit_code == 1 and one_line(out.output) and "namespace" in out.output


# --------------------------------------------------------------------------- import files
@SETTINGS
@given(
    bad=st.lists(bad_line(), min_size=1, max_size=6),
    n_good=st.integers(0, 3),
    header=st.sampled_from(
        [
            b'{"mia_memory_export": 1, "schema_version": 1}',
            b'{"mia_memory_export": 1, "schema_version": null}',
            b'{"mia_memory_export": 1, "schema_version": "x"}',
            b"",
            b"\xff\xfe",
        ]
    ),
    dedup=st.booleans(),
)
def test_corrupt_import_files_lose_no_good_record(data_dir, embedder, bad, n_good, header, dedup):
    run = next(_counter)
    namespace = f"imp-{run}"
    good = [
        json.dumps(
            {
                "id": f"good-{run}-{i}",
                "question": f"Good question number {i} of import {run}?",
                "workflow": f"1. Search for item {i}",
                "outcome": "correct",
            }
        ).encode()
        for i in range(n_good)
    ]
    lines = [header, *bad]
    for i, line in enumerate(good):  # interleave the good records with the bad lines
        lines.insert(1 + 2 * i, line)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "in.jsonl"
        path.write_bytes(b"\n".join(lines) + b"\n")
        out = cli(data_dir, "--namespace", namespace, "import", str(path), *([] if dedup else ["--no-dedup"]))
    assert out.exit_code == 0, out.output
    assert "Traceback" not in out.output
    summary = out.output.strip().splitlines()[-1]
    assert summary.startswith("read ")
    with MemoryStore.open(data_dir / "memory", embedder=embedder) as store:
        stored = {r.id: r for r in store.list(namespace)}
        assert {f"good-{run}-{i}" for i in range(n_good)} <= set(stored)  # 0 acknowledged records lost
        added = int(summary.split("added ")[1].split(",")[0])
        assert len(stored) == added  # what the summary acknowledges is what is stored
        for rec in stored.values():  # and every stored record is readable
            assert MemoryRecord.model_validate_json(rec.model_dump_json()).id == rec.id
        store.reset(namespace)
    shown = cli(data_dir, "stats", "-A", "--json")
    assert shown.exit_code == 0, shown.output


# --------------------------------------------------------------------------- index folders
@st.composite
def index_folder(draw) -> list[tuple[str, bytes]]:
    files = []
    for i in range(draw(st.integers(0, 4))):
        suffix = draw(st.sampled_from([".txt", ".md", ".jsonl", ".jsonl.gz", ".bin"]))
        content = draw(
            st.one_of(
                st.just(b""),
                st.binary(max_size=200),
                st.text(max_size=200).map(lambda t: t.encode("utf-8", "surrogatepass")),
                st.lists(bad_line(), max_size=3).map(lambda ls: b"\n".join(ls)),
                st.just(b'{"title": "Mars", "text": "Mars has two moons, Phobos and Deimos."}\n'),
                st.just(b"# Mars\n\nMars has two moons.\n\n\nPhobos is the larger one.\n"),
            )
        )
        files.append((f"f{i}{suffix}", content))
    return files


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(files=index_folder())
def test_corrupt_index_folders_are_indexed_or_one_line_error(files):
    import typer

    from mia.app.commands import index as index_command

    app = typer.Typer()
    index_command.register(app)

    @app.callback()
    def root() -> None:
        pass

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "docs"
        folder.mkdir()
        for name, content in files:
            (folder / name).write_bytes(content)
        out = CliRunner().invoke(app, ["index", str(folder), "--data-dir", str(Path(tmp) / "data")])
    assert out.exit_code in (0, 2), (out.exit_code, out.output, out.exception)
    assert out.exception is None or isinstance(out.exception, SystemExit), repr(out.exception)
    if out.exit_code == 2:
        assert one_line(out.output) and out.output.startswith("Error:"), out.output
