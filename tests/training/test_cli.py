"""`mia train`: help texts and clear errors for bad configs (no model is loaded)."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from mia.app.commands.train import app

runner = CliRunner()


def test_help_lists_the_stages() -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for command in ("planner", "executor", "executor-sft", "alternate", "eval", "plot"):
        assert command in result.output


def test_a_typo_in_the_config_is_a_clear_error(tmp_path: Path) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text("name: x\ngrpo: {max_steps: 1}\nbudgte: {max_tool_calls: 1}\n")
    result = runner.invoke(app, ["planner", "--config", str(config)])
    assert result.exit_code != 0
    assert "budgte" in result.output


def test_a_bad_set_override_is_a_clear_error(tmp_path: Path) -> None:
    config = tmp_path / "ok.yaml"
    config.write_text("name: x\n")
    result = runner.invoke(app, ["planner", "--config", str(config), "--set", "grpo.max_steps"])
    assert result.exit_code != 0 and "--set expects KEY=VALUE" in " ".join(result.output.split())


def test_plot_redraws_a_curve_and_refuses_an_empty_run(tmp_path: Path) -> None:
    (tmp_path / "metrics.jsonl").write_text(
        '{"stage": "planner", "step": 1, "reward": 0.1}\n{"stage": "planner", "step": 2, "reward": 0.2}\n'
    )
    result = runner.invoke(app, ["plot", str(tmp_path)])
    assert result.exit_code == 0 and (tmp_path / "reward_curve.png").is_file()
    empty = tmp_path / "empty"
    empty.mkdir()
    assert runner.invoke(app, ["plot", str(empty)]).exit_code != 0


def test_missing_data_file_is_reported_not_a_traceback(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(f"name: x\ndata: {{path: {tmp_path / 'nope.jsonl'}}}\n")
    result = runner.invoke(app, ["planner", "--config", str(config)])
    assert result.exit_code == 1 and "QA file not found" in result.output


def test_executor_sft_without_episodes_or_with_a_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    config = tmp_path / "sft.yaml"
    config.write_text("name: x\n")
    result = runner.invoke(app, ["executor-sft", "--config", str(config)])
    assert result.exit_code == 1 and "sft.episodes names no episode files" in result.output
    config.write_text(f"name: x\nsft: {{episodes: ['{tmp_path}/none/*.jsonl']}}\n")
    result = runner.invoke(app, ["executor-sft", "--config", str(config)])
    assert result.exit_code == 1 and "no episode file matches" in result.output
