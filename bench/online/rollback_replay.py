"""Would the rollback rule have fired in a test-time-learning run, judged when each batch ended?

    .venv/bin/python bench/online/rollback_replay.py results/2wiki-qwen-planners/mia-ttl   # writes bench/online/rollback-replay.md

Why: until the learner judged the served version before publishing its successor, a learner
lagging behind the answers judged each version only between batches, when the newest version had
served nothing yet, so the rule never fired. This replays a run's own timeline (its episodes with
their rewards and versions, its learner log, its registry) through `AdapterRegistry.check_rollback`,
the rule itself: at the end of every batch that published a version, the registry holds the versions
published and the rewards credited until then, and the rule judges the version being served.
Only the first firing is exact: after a rollback the real run would have served other versions.
No model is called.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

from mia.training.data import open_text
from mia.training.online.layout import ADAPTERS_DIR, BASE, LEARNER_LOG, ONLINE_DIR, REGISTRY_FILE
from mia.training.online.registry import ADAPTER_FILES, AdapterRegistry, RollbackPolicy

HERE = Path(__file__).resolve().parent


def _jsonl(path: Path) -> list[dict[str, Any]]:
    rows = []
    with open_text(path) as handle:  # a committed run's logs may be gzipped
        lines = handle.read().splitlines()
    for line in lines:
        try:
            rows.append(json.loads(line))
        except ValueError:  # a torn last line
            continue
    return rows


def _one(run: Path, pattern: str) -> Path:
    found = sorted((run / "store").glob(pattern))
    if len(found) != 1:
        raise SystemExit(f"{run}: expected one {pattern}, found {len(found)}")
    return found[0]


def judge_at(
    t: float, history: dict[str, Any], episodes: list[dict[str, Any]], policy: RollbackPolicy
) -> dict[str, Any]:
    """The rule's verdict at time t on a registry rebuilt as it stood then."""
    with tempfile.TemporaryDirectory() as tmp:
        reg = AdapterRegistry(tmp, policy)
        published = sorted(
            (info["created_at"], v) for v, info in history.items() if v != BASE and info.get("created_at", t + 1) <= t
        )
        for _, version in published:
            folder = reg.next_dir()
            for name in ADAPTER_FILES:  # a folder the registry counts as intact
                (folder / name).write_text("{}")
            assert folder.name == version, (folder.name, version)
            while reg.current != history[version]["parent"]:  # a recovery served an older version
                reg.rollback()
            reg.publish(folder)
        for e in episodes:
            if e.get("reward") is not None and e["created_at"] <= t:
                reg.record_reward(e.get("adapter_version") or BASE, e["reward"])
        served = reg.current
        seen = reg.compare(served)
        row = {
            "served": served,
            "answers": len(reg.info(served).get("rewards", [])),
            "mine": seen.mean if seen else None,
            "parent": reg.info(served).get("parent"),
            "before": seen.parent_mean if seen else None,
            "p": seen.p if seen else None,
        }
        row["back_to"] = reg.check_rollback()
        return row


def replay(run: Path, policy: RollbackPolicy) -> list[dict[str, Any]]:
    episodes = _jsonl(_one(run, f"{ONLINE_DIR}/*/episodes.jsonl*"))
    batches = [  # the batches that published a version (a rollback's line names the version served again)
        b
        for b in _jsonl(_one(run, f"{ONLINE_DIR}/*/{LEARNER_LOG}"))
        if b.get("version") and b["version"] != BASE and not b.get("error") and not b.get("stats", {}).get("rollback")
    ]
    history = json.loads(_one(run, "/".join(ADAPTERS_DIR) + f"/*/{REGISTRY_FILE}").read_text(encoding="utf-8"))[
        "versions"
    ]
    rows = []
    for b in batches:
        # judged just before the batch's own version was published, as the learner does now
        t = history[b["version"]]["created_at"] - 1e-3
        rows.append({"version": b["version"], **judge_at(t, history, episodes, policy)})
    return rows


def render(run: Path, rows: list[dict[str, Any]], policy: RollbackPolicy) -> str:
    fmt = lambda x: "n/a" if x is None else f"{x:.3f}"  # noqa: E731
    fired = [r for r in rows if r["back_to"]]
    lines = [
        f"# Rollback replay: {run}",
        "",
        f"`python bench/online/rollback_replay.py {run}` (window {policy.window}, tolerance {policy.tolerance}, "
        f"alpha {policy.alpha}: the defaults). Each row: the moment before a batch's version was published; the "
        "version then served, its answers so far, its mean reward and its parent's (over all each served), the "
        "permutation test's p where the mean is lower by more than the tolerance; the rule's verdict.",
        "",
        f"**{len(fired)} of {len(rows)} publications would have been preceded by a rollback**"
        + (
            f"; the first (exact) before {fired[0]['version']}: {fired[0]['served']} back to "
            f"{fired[0]['back_to']} ({fmt(fired[0]['mine'])} against {fmt(fired[0]['before'])})."
            if fired
            else "."
        ),
        "",
        "| published | served then | its answers | its mean reward | parent | parent's | p | rule |",
        "|---|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r['version']} | {r['served']} | {r['answers']} | {fmt(r['mine'])} | {r['parent'] or '-'} | "
        f"{fmt(r['before'])} | {fmt(r['p'])} | {'roll back to ' + r['back_to'] if r['back_to'] else 'keep'} |"
        for r in rows
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run", type=Path, help="a test-time-learning run folder (mia eval --test-time-learning)")
    parser.add_argument("--out", type=Path, default=HERE / "rollback-replay.md")
    args = parser.parse_args()
    from mia.training.online.config import OnlineConfig

    policy = OnlineConfig().rollback_policy()
    text = render(args.run, replay(args.run, policy), policy)
    args.out.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
