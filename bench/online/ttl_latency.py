"""The test-time learner's cost on answer latency: a learning row's answer seconds against a
memory-only row's on the same questions, paired, on the same CPU only.

    python bench/online/ttl_latency.py results/ttl-2wiki/memory results/ttl-2wiki/memory-cpu2 \
        results/ttl-2wiki/ttl --exclude 21 25-28

The last folder is the learning row; the others are memory-only rows, and each answer is paired
with the first of them that answered its question on the CPU the answer ran on.

Why paired by CPU: a resumable row may go on on another machine (this project's CPU model changes
between sessions), and llama.cpp's speed changes with it (a Zen 5 with AVX-512 answered in about half
the seconds of the EPYC without it). Each answer's CPU is the one its row was started or last resumed
on before the answer finished (`config.json`: `llamacpp.cpu` of the start, `resumed_code[].llamacpp.cpu`). The
`--exclude` answers (1-based positions in the learning row) ran beside other work. Under the
schedule `between` the learner runs between questions, so an answer's seconds hold the served
version's own cost (a LoRA on the served planner) and no learning; the wall time of the row holds
the learning. Writes <learning row>/latency.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
from datetime import datetime
from pathlib import Path

from scipy.stats import wilcoxon

from mia.app.evaluation.runlog import read_rows


def positions(spec: list[str]) -> set[int]:
    """{21, 25, 26, 27, 28} from ["21", "25-28"]."""
    out: set[int] = set()
    for item in spec:
        low, _, high = item.partition("-")
        out.update(range(int(low), int(high or low) + 1))
    return out


def cpus(run: Path) -> list[tuple[float, str]]:
    """(from when, CPU) of the run's start (`llamacpp`) and of each resume (`resumed_code`), in order."""
    config = json.loads((run / "config.json").read_text(encoding="utf-8"))
    spans = [(datetime.fromisoformat(config["started_at"]).timestamp(), str(config["llamacpp"]["cpu"]))]
    spans += [
        (datetime.fromisoformat(r["at"]).timestamp(), str(r["llamacpp"]["cpu"]))
        for r in config.get("resumed_code") or []
    ]
    return spans


def cpu_at(spans: list[tuple[float, str]], when: float) -> str:
    """The CPU of the last start or resume before `when`."""
    return ([cpu for start, cpu in spans if start <= when] or [spans[0][1]])[-1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("rows", nargs="+", type=Path, help="memory-only row folders, then the learning row's")
    ap.add_argument(
        "--exclude", nargs="*", default=[], help="positions (1-based, a-b ranges) that ran beside other work"
    )
    args = ap.parse_args()
    if len(args.rows) < 2:
        ap.error("give at least one memory-only row and the learning row")
    *memories, learning = args.rows
    skip = positions(args.exclude)
    learning_spans = cpus(learning)
    # (CPU, question id) -> that memory row's answer, the first row named winning
    memory: dict[tuple[str, str], dict] = {}
    for folder in memories:
        spans = cpus(folder)
        for other in read_rows(folder):
            memory.setdefault((cpu_at(spans, float(other["finished_at"])), other["id"]), other)
    rows = read_rows(learning)
    paired: list[tuple[int, dict, dict]] = []
    elsewhere: dict[str, list[float]] = {}
    for pos, row in enumerate(rows, 1):
        mine = cpu_at(learning_spans, float(row["finished_at"]))
        if pos in skip:
            continue
        other = memory.get((mine, row["id"]))
        if other is not None:
            paired.append((pos, row, other))
        else:
            elsewhere.setdefault(mine, []).append(float(row["wall_s"]))
    lines = [
        f"# Answer seconds: {learning} against {', '.join(map(str, memories))}, paired on the same CPU",
        "",
        f"Command: `python bench/online/ttl_latency.py {' '.join(map(str, args.rows))}"
        + (f" --exclude {' '.join(args.exclude)}`" if args.exclude else "`")
        + f". {len(rows)} answers in the learning row; left out as run beside other work: "
        + (", ".join(map(str, sorted(skip))) or "none")
        + ".",
        "",
        "| answers | n | s/q: memory only | s/q: learning | ratio of means | median per-question ratio | Wilcoxon p |",
        "|---|---|---|---|---|---|---|",
    ]

    def line(name: str, group: list[tuple[int, dict, dict]]) -> None:
        if not group:
            return
        mine = [float(r["wall_s"]) for _, r, _ in group]
        theirs = [float(o["wall_s"]) for _, _, o in group]
        ratio = statistics.mean(mine) / statistics.mean(theirs)
        per = statistics.median(a / b for a, b in zip(mine, theirs, strict=True))
        p = wilcoxon(mine, theirs).pvalue if len(group) >= 6 else float("nan")
        lines.append(
            f"| {name} | {len(group)} | {statistics.mean(theirs):.1f} | {statistics.mean(mine):.1f} "
            f"| {ratio:.2f}x | {per:.2f}x | {p:.3f} |"
        )

    cpu_names = sorted({cpu_at(learning_spans, float(r["finished_at"])) for _, r, _ in paired})
    for cpu in cpu_names:
        group = [g for g in paired if cpu_at(learning_spans, float(g[1]["finished_at"])) == cpu]
        line(f"all, {cpu}", group)
        line(f"served by the base planner, {cpu}", [g for g in group if g[1].get("served_version") == "base"])
        line(
            f"served by a learned version, {cpu}",
            [g for g in group if g[1].get("served_version") not in (None, "base")],
        )
    lines.append("")
    for cpu, seconds in sorted(elsewhere.items()):
        lines.append(
            f"Not paired: {len(seconds)} answers on {cpu}, where no memory-only row answered them "
            f"({statistics.mean(seconds):.1f} s/q)."
        )
    (learning / "latency.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
