"""Every command's --help, in an 80-column terminal, shows every option's full name."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from mia.app.cli import app


def commands(group: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Every command under a (typer-vendored) click group, with its path."""
    yield path, group
    if hasattr(group, "commands"):
        for name, command in group.commands.items():
            yield from commands(command, (*path, name))


ALL = list(commands(typer.main.get_command(app)))


def test_every_command_is_covered() -> None:
    names = {" ".join(path) for path, _ in ALL}
    assert {"ask", "chat", "eval", "memory", "train"} <= {n.split(" ")[0] for n in names if n}
    assert len(ALL) > 15


@pytest.mark.parametrize(("path", "command"), ALL, ids=[" ".join(p) or "mia" for p, _ in ALL])
def test_help_at_80_columns_shows_whole_option_names(path: tuple[str, ...], command: Any) -> None:
    res = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "80", "TERMINAL_WIDTH": "80"}, terminal_width=80)
    assert res.exit_code == 0, res.output
    assert "…" not in res.output
    names = [
        opt
        for param in command.params
        if param.param_type_name == "option" and not param.hidden
        for opt in (*param.opts, *param.secondary_opts)
    ]
    missing = [name for name in names if not re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", res.output)]
    assert not missing, f"{' '.join(path)} --help hides {missing}:\n{res.output}"
