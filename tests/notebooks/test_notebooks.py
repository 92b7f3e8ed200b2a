"""notebooks/02 and 03 run top to bottom, offline, with the real embedded SmolLM2 (tiny budgets),
and are committed executed (with their outputs). 01 is run by tests/graph/test_notebook.py."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = [pytest.mark.real_model, pytest.mark.slow]
NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


def _execute(name: str, tmp_path: Path) -> str:
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    NotebookClient(nb, timeout=1800, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    return "\n".join(out.get("text", "") for cell in nb.cells if cell.cell_type == "code"
                     for out in cell.get("outputs", []))


@pytest.mark.parametrize("name", ["01_quickstart.ipynb", "02_swapping_backends.ipynb",
                                  "03_training_a_planner_adapter.ipynb"])
def test_notebooks_are_committed_with_outputs(name: str) -> None:
    import nbformat

    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(c.get("outputs") for c in code), f"{name}: commit it executed (every code cell has output)"
    assert not [o for c in code for o in c["outputs"] if o.get("output_type") == "error"]


def test_swapping_backends_notebook_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MIA_POSTGRES_URL", raising=False)
    text = _execute("02_swapping_backends.ipynb", tmp_path)
    assert "llama.cpp answer:" in text and "served answer:" in text
    assert "checkpointer: sqlite | resumed thread: question = \"Which magazine" in text and "finished: True" in text
    assert "openai:gpt-4o-mini -> " in text and "OPENAI_API_KEY" in text


def test_training_notebook_runs(tmp_path: Path) -> None:
    text = _execute("03_training_a_planner_adapter.ipynb", tmp_path)
    assert "test-tiny | base: local:smollm2" in text
    assert "steps: 2" in text and "adapter_model.safetensors" in text
    assert text.count("reward ") >= 4  # 2 steps x 2 plans, each carried out by the frozen executor
    assert "trained planner says:" in text
