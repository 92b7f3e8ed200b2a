"""The durable episode queue and the versioned adapter registry (pure logic, files on disk)."""

from __future__ import annotations

import json

import pytest

from mia.training.online.episodes import EpisodeQueue
from mia.training.online.registry import BASE, AdapterRegistry, RollbackPolicy
from tests.online.fakes import episode, write_fake_adapter


def test_queue_appends_durably_and_resumes_at_cursor(tmp_path) -> None:
    q = EpisodeQueue(tmp_path)
    for i in range(5):
        q.append(episode(i))
    assert [e.id for e in q.pending()] == ["e0", "e1", "e2", "e3", "e4"]
    q.advance(2)
    again = EpisodeQueue(tmp_path)  # a restarted learner
    assert again.cursor() == 2
    assert [e.id for e in again.pending()] == ["e2", "e3", "e4"]


def test_torn_last_line_is_skipped_and_next_append_is_whole(tmp_path) -> None:
    q = EpisodeQueue(tmp_path)
    q.append(episode(0))
    with q.path.open("a") as fh:  # a kill in the middle of a write
        fh.write('{"id": "torn", "question": "half')
    assert [e.id for e in q.read_all()] == ["e0"]
    q.append(episode(1))
    assert [e.id for e in q.read_all()] == ["e0", "e1"]


def test_damaged_cursor_restarts_from_the_beginning_without_losing_episodes(tmp_path) -> None:
    q = EpisodeQueue(tmp_path)
    q.append(episode(0))
    q.cursor_path.write_text("{not json")
    assert q.cursor() == 0
    assert len(q.pending()) == 1


def test_registry_versions_publish_and_persist(tmp_path) -> None:
    reg = AdapterRegistry(tmp_path)
    assert reg.current == BASE and reg.current_path() is None
    v1 = reg.next_dir()
    write_fake_adapter(v1)
    assert reg.publish(v1) == "v0001"
    v2 = reg.next_dir()
    write_fake_adapter(v2)
    reg.publish(v2, {"stats": {"loss": 1.0}})
    again = AdapterRegistry(tmp_path)
    assert again.current == "v0002" and again.versions() == ["v0001", "v0002"]
    assert again.info("v0002")["parent"] == "v0001"
    assert again.current_path() == tmp_path / "v0002"
    with pytest.raises(ValueError, match="not a version folder"):
        reg.publish(tmp_path / "elsewhere")


def test_rollback_when_rolling_reward_drops(tmp_path) -> None:
    reg = AdapterRegistry(tmp_path, RollbackPolicy(window=3, tolerance=0.1))
    for _ in range(3):
        reg.record_reward(None, 0.8)  # the base planner served these
    v1 = reg.next_dir()
    write_fake_adapter(v1)
    reg.publish(v1)
    reg.record_reward("v0001", 0.0)
    reg.record_reward("v0001", 0.0)
    assert reg.check_rollback() is None  # not a full window yet
    reg.record_reward("v0001", 0.0)
    assert reg.check_rollback() == BASE
    assert reg.current == BASE and reg.info("v0001")["status"] == "rolled_back"
    assert "mean reward 0.000 over 3 answers < 0.800 over 3 of base" in reg.info("v0001")["rollback_reason"]
    assert "p = 0.050" in reg.info("v0001")["rollback_reason"]  # 1 of the 20 splits of 3 + 3 answers
    state = json.loads((tmp_path / "registry.json").read_text())
    assert state["current"] == BASE


def _served(tmp_path, policy: RollbackPolicy, base: list[float], new: list[float]) -> AdapterRegistry:
    reg = AdapterRegistry(tmp_path, policy)
    for reward in base:
        reg.record_reward(None, reward)
    v1 = reg.next_dir()
    write_fake_adapter(v1)
    reg.publish(v1)
    for reward in new:
        reg.record_reward("v0001", reward)
    return reg


# The first Qwen test-time run's first update: 1 right answer of 4 against base's 3 of 4, on
# other questions (results/ttl-2wiki/README.md). The drop-only rule rolled it back.
BASE_SERVED, V1_SERVED = [0.95, 0.95, 0.77, 0.05], [0.05, 0.275, 0.05, 0.05]


def test_a_drop_that_question_difficulty_explains_is_kept(tmp_path) -> None:
    reg = _served(tmp_path, RollbackPolicy(window=4), BASE_SERVED, V1_SERVED)
    seen = reg.compare("v0001")
    assert seen is not None and not seen.drop
    assert seen.p == pytest.approx(5 / 70)  # exact: 5 of the 70 splits of the 8 rewards are as low
    assert reg.check_rollback() is None and reg.current == "v0001"


def test_without_a_test_the_drop_alone_rolls_back(tmp_path) -> None:
    reg = _served(tmp_path, RollbackPolicy(window=4, alpha=None), BASE_SERVED, V1_SERVED)
    assert reg.check_rollback() == BASE
    assert "p =" not in reg.info("v0001")["rollback_reason"]


def test_a_broken_update_is_rolled_back_after_one_window(tmp_path) -> None:
    """Every answer of the new version fails where the parent's mostly did not: p = 1/70."""
    reg = _served(tmp_path, RollbackPolicy(window=4), [0.95, 0.95, 0.77, 0.5], [0.05] * 4)
    seen = reg.compare("v0001")
    assert seen is not None and seen.drop and seen.p == pytest.approx(1 / 70)
    assert reg.check_rollback() == BASE


def test_the_parents_whole_record_is_the_baseline(tmp_path) -> None:
    """The parent's answers beyond one window count too: 4 failures against its last 4 answers (3
    right) are p = 0.071, against its 20 (15 right) p = 0.011 (a fixed-seed Monte Carlo)."""
    base = [0.05] * 5 + [0.95] * 15
    reg = _served(tmp_path, RollbackPolicy(window=4), base, [0.05] * 4)
    seen = reg.compare("v0001")
    assert seen is not None and seen.parent_answers == 20 and seen.parent_mean == pytest.approx(0.725)
    assert seen.drop and seen.p is not None and seen.p < 0.02
    assert reg.compare("v0001") == seen  # repeatable: the same p every time


def test_no_rollback_within_tolerance(tmp_path) -> None:
    reg = AdapterRegistry(tmp_path, RollbackPolicy(window=2, tolerance=0.1))
    reg.record_reward(None, 0.5)
    reg.record_reward(None, 0.5)
    v1 = reg.next_dir()
    write_fake_adapter(v1)
    reg.publish(v1)
    reg.record_reward("v0001", 0.45)
    reg.record_reward("v0001", 0.45)
    assert reg.check_rollback() is None and reg.current == "v0001"


def test_bad_policy_and_damaged_registry_are_clear_errors(tmp_path) -> None:
    with pytest.raises(ValueError, match="window"):
        RollbackPolicy(window=0)
    with pytest.raises(ValueError, match="alpha"):
        RollbackPolicy(alpha=0.0)
    (tmp_path / "registry.json").write_text("[]")
    with pytest.raises(ValueError, match="damaged"):
        AdapterRegistry(tmp_path)


def test_a_version_whose_files_are_gone_is_marked_missing_and_its_ancestor_served(tmp_path) -> None:
    """A machine recycled with only the registry kept: v0002 and v0003 lost their folders. The
    registry serves v0001 (the newest intact ancestor), keeps the lost versions' history, and the
    next version is v0004, not a second v0002."""
    import shutil

    reg = AdapterRegistry(tmp_path)
    for _ in range(3):
        folder = reg.next_dir()
        write_fake_adapter(folder)
        reg.publish(folder)
        reg.record_reward(folder.name, 0.5)
    shutil.rmtree(tmp_path / "v0002")
    shutil.rmtree(tmp_path / "v0003")
    again = AdapterRegistry(tmp_path)
    assert again.recovered == ["v0002", "v0003"]
    assert again.current == "v0001" and again.current_path() == tmp_path / "v0001"
    assert again.info("v0003")["status"] == "missing" and again.info("v0003")["rewards"] == [0.5]
    assert "v0003" in again.info("v0003")["missing_reason"]
    assert again.next_dir().name == "v0004"
    assert AdapterRegistry(tmp_path).recovered == []  # said once; the state on disk carries it


def test_every_version_missing_falls_back_to_the_base_planner(tmp_path) -> None:
    reg = AdapterRegistry(tmp_path)
    folder = reg.next_dir()
    (folder / "adapter_config.json").write_text("{}")  # cut before the weights were written
    reg.publish(folder)
    again = AdapterRegistry(tmp_path)
    assert again.recovered == ["v0001"] and again.current == BASE and again.current_path() is None


def test_a_rollback_skips_a_parent_whose_files_are_gone(tmp_path) -> None:
    """v0001 lost its folder after v0002 was published on it: rolling v0002 back serves base."""
    import shutil

    reg = AdapterRegistry(tmp_path, RollbackPolicy(window=1, tolerance=0.0, alpha=None))
    for _ in range(2):
        folder = reg.next_dir()
        write_fake_adapter(folder)
        reg.publish(folder)
    shutil.rmtree(tmp_path / "v0001")
    again = AdapterRegistry(tmp_path, RollbackPolicy(window=1, tolerance=0.0, alpha=None))
    assert again.recovered == ["v0001"] and again.current == "v0002"
    again.record_reward("v0001", 0.9)
    again.record_reward("v0002", 0.1)
    assert again.check_rollback() == BASE and again.current == BASE
    assert again.info("v0002")["status"] == "rolled_back"
