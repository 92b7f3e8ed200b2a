"""notebooks/01_quickstart.ipynb runs top to bottom, offline, with the real embedded model."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytestmark = pytest.mark.real_model
NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "01_quickstart.ipynb"


def test_quickstart_notebook_runs(tmp_path: Path) -> None:
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    text = "\n".join(
        out.get("text", "") for cell in nb.cells if cell.cell_type == "code" for out in cell.get("outputs", [])
    )
    assert "ANSWER:" in text and "JUDGED:" in text
    assert "memories used: ['" in text  # the second question retrieved the first episode
    assert "plain ReAct answer:" in text and "planner calls: 0" in text
    assert os.environ.get("HF_HUB_OFFLINE") == "1"
