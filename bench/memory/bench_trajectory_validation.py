"""What cleaning costs when trajectories are made from logged data (issue 42.6's cleaning, on the path
every log read takes: rebuilds, --memory-from, the trajectory index's sync).

    .venv/bin/python bench/memory/bench_trajectory_validation.py [LOG]

Validates every line of a committed trajectory log (default: the largest one under results/) as
`Trajectory.model_validate` does, three ways: as shipped (orjson finds nothing to clean, so nothing
is walked), with the per-string walk forced (how the cleaning first ran), and with no cleaning at
all. Writes bench/memory/trajectory_validation.md.
"""

from __future__ import annotations

import gzip
import platform
import subprocess
import sys
import time
from pathlib import Path

import orjson

import mia.memory.trajectory as trajectory
from mia.memory import Trajectory

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "bench" / "memory" / "trajectory_validation.md"


def per_trajectory_us(data: list[dict], rounds: int = 5) -> float:
    started = time.perf_counter()
    for _ in range(rounds):
        for item in data:
            Trajectory.model_validate(item)
    return (time.perf_counter() - started) / rounds / len(data) * 1e6


def main() -> None:
    if len(sys.argv) > 1:
        log = Path(sys.argv[1])
    else:
        tracked = subprocess.run(
            ["git", "ls-files", "results/*trajectories.jsonl*"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.split()
        log = max((ROOT / p for p in tracked), key=lambda p: p.stat().st_size)
    raw = gzip.decompress(log.read_bytes()) if log.suffix == ".gz" else log.read_bytes()
    data = [orjson.loads(line) for line in raw.splitlines() if line.strip()]
    shipped = trajectory.needs_cleaning
    rows = {"as shipped (C check first)": per_trajectory_us(data)}
    trajectory.needs_cleaning = lambda value: True  # the walk over every string, always
    rows["per-string walk every time"] = per_trajectory_us(data)
    trajectory.needs_cleaning = lambda value: False
    rows["no cleaning"] = per_trajectory_us(data)
    trajectory.needs_cleaning = shipped
    size = sum(len(orjson.dumps(d)) for d in data) / len(data)
    lines = [
        f"# Trajectory validation with cleaning ({len(data)} trajectories of {log.relative_to(ROOT)}, "
        f"{size:,.0f} bytes each on average)",
        "",
        f"`{Path(sys.executable).name} bench/memory/bench_trajectory_validation.py`, {platform.processor() or platform.machine()}, "
        "one process.",
        "",
        "| way | µs per trajectory |",
        "|---|---|",
    ]
    lines += [f"| {name} | {us:.0f} |" for name, us in rows.items()]
    OUT.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
