"""Seconds per question of two ladder rungs on the same questions, run one after the other on this
machine: the ratio the ladder's rows cannot give when they ran on different machines (the final
`none` rows ran on slower CPUs than the `default` rows).

    python bench/e2e/paired_seconds.py --set 2wiki --n 20            # none, then default, positions 100-119
    python bench/e2e/paired_seconds.py --set hotpotqa --n 20
    MIA_LLAMACPP_BUILD=native python bench/e2e/paired_seconds.py --set 2wiki --n 20 --tag native

Each rung is the ladder's own `mia eval` command (results/ladder/ladder.toml, scripts/ladder.py) with
`--n` and `--out` changed: its run folder goes under --work (not committed), its seconds are each
answer's `wall_s` (the whole graph: for `default` its judge and memorising too, as in the ladder).
Nothing else should run meanwhile; the load average is recorded. Appends its table to
bench/e2e/paired-seconds.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import ladder  # noqa: E402  (scripts/ladder.py: the rungs' commands, one definition)

OUT = Path(__file__).with_name("paired-seconds.md")


def run_rung(spec: dict, set_name: str, rung_name: str, n: int, work: Path) -> Path:
    """The ladder's command for this rung on the final split's first n questions, into work/."""
    rung = next(r for r in spec["rungs"] if r["name"] == rung_name)
    args = ladder.eval_args(spec, "final", set_name, rung)
    out = work / set_name / rung_name
    shutil.rmtree(out, ignore_errors=True)  # a fresh run: a resumed one would mix in older seconds
    args[args.index("--n") + 1] = str(n)
    args[args.index("--out") + 1] = str(out)
    subprocess.check_call([str(ROOT / ".venv" / "bin" / "mia"), *args], cwd=ROOT)
    return out


def seconds(folder: Path) -> list[float]:
    from mia.app.evaluation.runlog import read_rows

    return [float(r["wall_s"]) for r in read_rows(folder) if not r.get("error") and r.get("wall_s")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", dest="set_name", required=True, choices=["hotpotqa", "2wiki"])
    ap.add_argument("--n", type=int, default=20)
    ap.add_argument("--rungs", default="none,default", help="two ladder rungs, the base first")
    ap.add_argument("--work", type=Path, default=Path("/tmp/mia-paired-seconds"))
    ap.add_argument("--tag", default="", help="a label for this machine or build in the table")
    args = ap.parse_args()
    spec = ladder.load()
    names = args.rungs.split(",")
    load_before = os.getloadavg()[0]
    started = time.time()
    folders = [run_rung(spec, args.set_name, name, args.n, args.work / (args.tag or "run")) for name in names]
    load_after = os.getloadavg()[0]
    secs = [seconds(f) for f in folders]
    build = json.loads((folders[-1] / "config.json").read_text(encoding="utf-8")).get("llamacpp") or {}
    medians = [statistics.median(s) if s else float("nan") for s in secs]
    lines = [
        "",
        f"## {args.set_name}, final split positions 100-{99 + args.n}: {' / '.join(names)}"
        + (f" ({args.tag})" if args.tag else ""),
        "",
        "Command: `"
        + "".join(f"{k}={os.environ[k]} " for k in ("MIA_LLAMACPP_BUILD", "MIA_LLAMACPP_REPACK") if os.environ.get(k))
        + f"python bench/e2e/paired_seconds.py --set {args.set_name} --n {args.n}"
        + (f" --rungs {args.rungs}" if args.rungs != "none,default" else "")
        + (f" --tag {shlex.quote(args.tag)}" if args.tag else "")
        + f"`; {time.strftime('%Y-%m-%d', time.gmtime(started))}, {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} cores, llama.cpp build {build.get('build', '?')} (cpu {build.get('cpu', '?')}, "
        f"weight repacking {'on' if build.get('repack', True) else 'off'}); "
        f"load average {load_before:.2f} before, {load_after:.2f} after; {time.time() - started:.0f} s in all.",
        "",
        "| rung | answers | median s/q | mean s/q |",
        "|---|---|---|---|",
        *(
            f"| {name} | {len(s)} | {m:.1f} | {statistics.fmean(s):.1f} |"
            for name, s, m in zip(names, secs, medians, strict=True)
            if s
        ),
        "",
        f"Median ratio {names[1]} / {names[0]}: **{medians[1] / medians[0]:.2f}x**.",
    ]
    if not OUT.exists():
        OUT.write_text(
            "# Seconds per question of two rungs on the same questions, on one machine\n\n"
            "Written by `bench/e2e/paired_seconds.py` (see its docstring); newest last.\n",
            encoding="utf-8",
        )
    with OUT.open("a", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
