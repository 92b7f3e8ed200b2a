"""The graph package's own layers: `mia.graph` keeps the graph (builder, nodes, state, context,
chat, studio), and its subpackages below it change on their own: the protocol, then prompts,
judge and model backends on the protocol, then tools on the backends; the LangGraph integrations
sit on memory alone. A subpackage that imported the graph above it (or a sibling it must not)
would tie them back together: this test fails on that import, function-local ones included."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

GRAPH = Path(__file__).resolve().parents[1] / "graph"
MAY_IMPORT: dict[str, set[str]] = {  # what of mia.graph each subpackage may import, besides itself
    "protocol": set(),
    "prompts": {"protocol"},
    "judge": {"protocol", "prompts"},
    "models": {"protocol", "images"},
    "tools": {"protocol", "models"},
    "integrations": set(),
}


def graph_imports(folder: Path) -> dict[str, set[str]]:
    """Each `mia.graph.<name>` (or bare `mia.graph`, as "") the folder's modules import, with the files."""
    found: dict[str, set[str]] = {}
    for path in folder.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level else []
            names += [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
            for name in names:
                parts = name.split(".")
                if parts[:2] == ["mia", "graph"]:
                    found.setdefault(parts[2] if len(parts) > 2 else "", set()).add(path.name)
    return found


@pytest.mark.parametrize("sub", sorted(MAY_IMPORT))
def test_a_subpackage_imports_only_the_layers_below_it(sub: str) -> None:
    imported = graph_imports(GRAPH / sub)
    imported.pop(sub, None)
    above = {name: files for name, files in imported.items() if name not in MAY_IMPORT[sub]}
    assert not above, f"mia.graph.{sub} imports {above} (allowed: {sorted(MAY_IMPORT[sub]) or 'none'})"


def test_every_subpackage_has_its_rule() -> None:
    packages = {p.parent.name for p in GRAPH.glob("*/__init__.py")}
    assert packages - {"nodes"} == set(MAY_IMPORT), "a new graph subpackage needs its line in MAY_IMPORT"


def test_the_check_sees_an_upward_import(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("def f():\n    from mia.graph.builder import build_graph\n")
    assert graph_imports(tmp_path) == {"builder": {"a.py"}}
