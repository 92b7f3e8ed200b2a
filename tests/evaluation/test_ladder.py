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


def test_a_rung_runs_through_study_row_from_the_commit_it_started_on(capsys: pytest.CaptureFixture[str]) -> None:
    """A rung is one study row (scripts/study_row.sh, tests/evaluation/test_study_row.py): its own
    folder names the commit a resumed rung began on, and the eval gets the rung's options."""
    module = ladder()
    spec = module.load()
    rung = next(r for r in spec["rungs"] if r["name"] == "trained")
    module.run_rung(spec, "final", "2wiki", rung, dry_run=True)
    words = capsys.readouterr().out.split()
    assert words[0].endswith("scripts/study_row.sh")
    assert words[1:5] == ["--commit-of", "results/ladder/2wiki/trained", "results/ladder/2wiki", "trained"]
    assert words[5:] == module.eval_options(spec, "final", "2wiki", rung) and "--out" not in words


def test_plots_are_written_as_palette_pngs(tmp_path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from PIL import Image

    from mia.training.artifacts import save_figure

    fig, ax = plt.subplots()
    ax.plot([0, 1, 2], [0, 1, 4], label="reward")
    ax.legend()
    path = save_figure(fig, tmp_path / "plot.png", dpi=100)
    plt.close(fig)
    with Image.open(path) as image:
        assert image.mode == "P" and image.size == (640, 480)
