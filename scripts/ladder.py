#!/usr/bin/env python3
"""Run rungs of the ablation ladder (results/ladder/ladder.toml) and write its paired table.

    scripts/ladder.py --split final --set hotpotqa none default     # two rungs, one after the other
    scripts/ladder.py --split final --set hotpotqa --set 2wiki       # every rung of both sets
    scripts/ladder.py --split final --report                         # only the table (results/ladder/README.md part)
    scripts/ladder.py --split final --dry-run --set 2wiki default    # print the commands

Each rung is a `mia eval` run folder `<split out>/<set>/<rung>/`, run as every study's rows are
(scripts/study_row.sh): from a frozen copy of the commit checked out when the rung starts (edits
made meanwhile cannot reach it; config.json records the commit), committed every 30 minutes, and
resumable: running the same command again goes on where a stopped rung ended, from the commit
recorded in its config.json. Run it in the
background: `nohup scripts/ladder.py --split final --set hotpotqa none > /dev/null 2>&1 &`.

The report is `mia eval-report` over a set's rungs that have answers (paired McNemar tests and a
paired bootstrap on F1, each rung against the rung above it), and one more against `none` for each
rung (`<set>/none-vs-<rung>/`), after `mia eval-regrade` has graded every rung with the one grader.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LADDER = ROOT / "results" / "ladder" / "ladder.toml"


def load(path: Path = LADDER) -> dict:
    return tomllib.loads(path.read_text(encoding="utf-8"))


def run_dir(spec: dict, split: str, set_name: str, rung: str) -> Path:
    return Path(spec["splits"][split]["out"]) / set_name / rung


def eval_options(spec: dict, split: str, set_name: str, rung: dict) -> list[str]:
    """The `mia eval` options of one rung on one set and split (its label and folder aside)."""
    s, d = spec["splits"][split], spec["sets"][set_name]
    args = [
        "--dataset",
        d["dataset"],
        "--seed",
        str(spec["seed"]),
        "--start",
        str(s["start"]),
        "--n",
        str(s["n"]),
        "--max-tool-calls",
        str(spec["max_tool_calls"]),
    ]
    if rung.get("memory"):
        args += ["--memory-from", d["memory_from"]]
    return args + list(rung["args"])


def eval_args(spec: dict, split: str, set_name: str, rung: dict) -> list[str]:
    """The whole `mia eval` command line of one rung, as scripts/study_row.sh runs it."""
    folder = run_dir(spec, split, set_name, rung["name"])
    return ["eval", *eval_options(spec, split, set_name, rung), "--label", rung["name"], "--out", str(folder)]


def finished(folder: Path, n: int) -> bool:
    from mia.app.evaluation.runlog import read_rows  # results.jsonl, or a finished study's .gz

    return len({row["id"] for row in read_rows(ROOT / folder)}) >= n


def run_rung(spec: dict, split: str, set_name: str, rung: dict, dry_run: bool) -> None:
    """One rung through scripts/study_row.sh: a frozen copy of the commit the rung began on (its
    config.json), or of HEAD for a new rung, checkpointed every 30 minutes."""
    folder = run_dir(spec, split, set_name, rung["name"])
    command = [
        str(ROOT / "scripts" / "study_row.sh"),
        "--commit-of",
        str(folder),
        str(folder.parent),
        rung["name"],
        *eval_options(spec, split, set_name, rung),
    ]
    if dry_run:
        print(" ".join(command))
        return
    if finished(folder, spec["splits"][split]["n"]):
        print(f"[ladder] {folder}: finished")
        return
    print(f"[ladder] {folder}: running", flush=True)
    code = subprocess.call(command, cwd=ROOT)
    if code:
        print(f"[ladder] {folder}: exit {code} (see {folder}.log)", flush=True)


def report(spec: dict, split: str, sets: list[str]) -> None:
    """`mia eval-report` over each set's finished rungs, in ladder order."""
    mia = str(ROOT / ".venv" / "bin" / "mia")
    for set_name in sets:
        folders = [run_dir(spec, split, set_name, r["name"]) for r in spec["rungs"]]
        from mia.app.evaluation.runlog import read_rows

        n = spec["splits"][split]["n"]
        counts = {str(f): len(read_rows(ROOT / f)) for f in folders}
        present = [f for f, c in counts.items() if c >= n]  # a rung still running or paused is left out
        for f, c in counts.items():
            if 0 < c < n:
                print(f"[ladder] {f}: {c} of {n} answers, not in the paired tables until it finishes")
        if len(present) < 2:
            print(f"[ladder] {set_name}: fewer than two rungs have answers; no report")
            continue
        out = Path(spec["splits"][split]["out"]) / set_name
        title = f"Ladder, {set_name}, {split} split"
        # each rung against the rung above it, then each against `none`
        subprocess.check_call([mia, "eval-report", *present, "--out", str(out), "--title", title], cwd=ROOT)
        base, rest = present[0], present[1:]
        if Path(base).name == "none":
            for rung in rest[1:]:  # the first is already paired with none above
                subprocess.check_call(
                    [
                        mia,
                        "eval-report",
                        base,
                        rung,
                        "--out",
                        str(out / f"none-vs-{Path(rung).name}"),
                        "--title",
                        f"{title}: none against {Path(rung).name}",
                    ],
                    cwd=ROOT,
                )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("rungs", nargs="*", help="rung names (default: every rung, in ladder order)")
    ap.add_argument("--split", choices=["tune", "final"], default="final")
    ap.add_argument("--set", dest="sets", action="append", help="set name (repeatable; default: every set)")
    ap.add_argument("--report", action="store_true", help="only write the paired tables")
    ap.add_argument("--dry-run", action="store_true", help="print the commands")
    args = ap.parse_args()
    spec = load()
    sets = args.sets or list(spec["sets"])
    unknown = [s for s in sets if s not in spec["sets"]] + [
        r for r in args.rungs if r not in {x["name"] for x in spec["rungs"]}
    ]
    if unknown:
        ap.error(f"unknown set or rung: {', '.join(unknown)}")
    if not args.report:
        rungs = [r for r in spec["rungs"] if not args.rungs or r["name"] in args.rungs]
        order = {name: i for i, name in enumerate(args.rungs)}
        rungs.sort(key=lambda r: order.get(r["name"], 0))
        for set_name in sets:
            for rung in rungs:
                run_rung(spec, args.split, set_name, rung, args.dry_run)
    if not args.dry_run:
        report(spec, args.split, sets)
    return 0


if __name__ == "__main__":
    sys.exit(main())
