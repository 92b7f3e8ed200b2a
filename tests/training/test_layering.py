"""The layers point one way (memory <- graph <- training <- app): no module imports a higher layer,
and every package's lazy names resolve through the one mechanism (lazy_loader.attach)."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RANK = {"memory": 0, "graph": 1, "training": 2, "app": 3}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


@pytest.mark.parametrize("layer", ["memory", "graph", "training"])
def test_no_module_imports_a_higher_layer(layer: str) -> None:
    bad = []
    for path in sorted((ROOT / layer).rglob("*.py")):
        for name in _imports(path):
            parts = name.split(".")
            if parts[0] == "mia" and len(parts) > 1 and RANK.get(parts[1], -1) > RANK[layer]:
                bad.append(f"{path.relative_to(ROOT)} -> {name}")
    assert not bad, bad


def test_training_data_and_trajectory_data_do_not_import_each_other_both_ways() -> None:
    data = _imports(ROOT / "training" / "data.py")
    traj = _imports(ROOT / "training" / "trajectory_data.py")
    assert not ("mia.training.trajectory_data" in data and "mia.training.data" in traj)


@pytest.mark.parametrize(
    "package",
    [
        "mia",
        "mia.graph",
        "mia.graph.models",
        "mia.graph.tools",
        "mia.graph.judge",
        "mia.memory",
        "mia.training",
        "mia.training.online",
        "mia.app.evaluation",
    ],
)
def test_every_lazy_name_resolves(package: str) -> None:
    module = importlib.import_module(package)
    for name in module.__all__:
        assert getattr(module, name) is not None, f"{package}.{name}"
    with pytest.raises(AttributeError):
        module.no_such_name  # noqa: B018


def test_no_hand_written_module_getattr_left() -> None:
    inits = [p for folder in ("mia", *RANK) for p in (ROOT / folder).rglob("__init__.py")]
    assert not [str(p) for p in inits if "def __getattr__" in p.read_text(encoding="utf-8")]
