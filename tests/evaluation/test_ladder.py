"""scripts/ladder.py and results/ladder/ladder.toml: every rung is a `mia eval` command line the CLI
accepts, on the split's positions, the memory rungs from the set's warm-up memory."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

ROOT = Path(__file__).resolve().parents[2]


def ladder() -> Any:
    spec = importlib.util.spec_from_file_location("ladder", ROOT / "scripts" / "ladder.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_rung_is_a_command_line_mia_eval_accepts(monkeypatch: pytest.MonkeyPatch) -> None:
    import mia.app.evaluation.harness as harness
    from mia.app.cli import app

    module = ladder()
    spec = module.load()
    seen: list[Any] = []

    async def fake_run(cfg: Any, out: Any, progress: bool = True) -> Any:
        seen.append((cfg, out))
        raise SystemExit(0)

    monkeypatch.setattr(harness, "run_evaluation", fake_run)
    runner = CliRunner()
    for split in spec["splits"]:
        for set_name in spec["sets"]:
            for rung in spec["rungs"]:
                res = runner.invoke(app, module.eval_args(spec, split, set_name, rung))
                assert res.exit_code == 0, (rung["name"], res.output)
                cfg, out = seen[-1]
                assert (cfg.start, cfg.n) == (spec["splits"][split]["start"], spec["splits"][split]["n"])
                assert str(out).endswith(f"{set_name}/{rung['name']}")
                assert (cfg.memory_from == spec["sets"][set_name]["memory_from"]) == bool(rung.get("memory"))
    names = [r["name"] for r in spec["rungs"]]
    assert names[0] == "none" and "default" in names  # the check reads results/ladder/<set>/{none,default}
    default = next(cfg for cfg, out in seen if str(out).endswith("default"))
    assert default.context_overrides == {}  # the default rung is the graph's defaults
