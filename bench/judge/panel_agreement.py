"""The unsupervised panel (three reviewers and the weighted arbiter, no gold answer shown) against the
reference labels: how often its verdict agrees with an answer labelled by reading, before and after
calibrating the rule on half of the answers, reported on the other half (issue 38).

    python bench/judge/panel_agreement.py collect --limit 400     # review the labelled answers (resumable)
    python bench/judge/panel_agreement.py report                  # calibrate and report (no model call)

`collect` runs the judge role's model (the embedded default) in `reviewers` mode on each labelled
triple of bench/judge/reference/ with its logged trajectory (read back from the run's results.jsonl),
and appends each answer's three review scores and the default rule's verdict to panel-reviews.jsonl:
a stopped run goes on where it ended. On the held-out half it also runs `--judge-arbiter llm` (the
arbiter call reads the same three reviews; no veto, so the weighted rule never pre-empts it) and
records the arbiter's verdict: the LLM arbiter is not calibrated, so the held-out half is all it needs. `report` splits the answers by a hash of their id into a
calibration half and a held-out half, picks the rule (threshold, veto, and a spread at which
disagreeing reviewers give `unknown`) that agrees best with the labels on the calibration half
while deciding at least --min-coverage of it, and writes panel-agreement.md: agreement on the verdicts
given, coverage, and precision and recall of `correct` and of `incorrect`, on the held-out half.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import product
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
REFERENCE = HERE / "reference"
REVIEWS = HERE / "panel-reviews.jsonl"
OUT = HERE / "panel-agreement.md"
NAMES = ("reasoning", "sources", "validity")


def reference() -> list[dict]:
    """The labelled triples, in the reference file's order."""
    labels = {r["rid"]: r["label"] for r in map(json.loads, (REFERENCE / "labels.jsonl").open(encoding="utf-8"))}
    triples = [json.loads(line) for line in (REFERENCE / "triples.jsonl").open(encoding="utf-8")]
    return [t | {"label": labels[t["rid"]]} for t in triples if t["rid"] in labels]


def trace_of(triple: dict, cache: dict[str, dict[str, dict]]) -> str | None:
    """The logged trajectory of the triple's answer as the judge reads it, or None when the run's
    row has none (a warm-up store's answer, say)."""
    from mia.app.evaluation.runlog import read_rows
    from mia.memory import Trajectory

    run = ROOT / triple["run"]
    if triple["run"] not in cache:
        cache[triple["run"]] = {r["id"]: r for r in read_rows(run)} if run.exists() else {}
    row = cache[triple["run"]].get(triple["id"])
    if not row or not row.get("trajectory"):
        return None
    episode = Trajectory(question=row["question"], plan=row.get("plan") or "", steps=row["trajectory"])
    episode.answer = row.get("answer") or ""
    return episode.to_trace_text(include_judgement=False)


def trace_flags(rids: Iterable[str]) -> dict[str, bool]:
    """Whether each answer's logged trace shows a failure (mia.graph.nodes.failure.trace_failure,
    the check `JudgeConfig.trace_checks` runs before the reviewers): no model call."""
    from mia.app.evaluation.runlog import read_rows
    from mia.graph.nodes.failure import trace_failure

    triples = {t["rid"]: t for t in reference()}
    cache: dict[str, dict[str, dict]] = {}
    flags = {}
    for rid in rids:
        t = triples[rid]
        run = ROOT / t["run"]
        if t["run"] not in cache:
            cache[t["run"]] = {r["id"]: r for r in read_rows(run)} if run.exists() else {}
        row = cache[t["run"]].get(t["id"]) or {}
        steps = row.get("trajectory") or []
        stop = row.get("stop_reason") or "answered"
        flags[rid] = bool(steps) and trace_failure(steps, t["answer"], stop, t["question"])[0] is not None
    return flags


def unseen_runs_precision() -> tuple[int, int, int]:
    """The trace check on the ablation ladder's final-split rows (results/ladder/<set>/<rung>/), which
    no check of the failure rule was written from: (answers, flagged, flagged and graded wrong by the
    runs' ground-truth grader)."""
    from mia.app.evaluation.runlog import read_rows
    from mia.graph.nodes.failure import trace_failure

    n = flagged = wrong = 0
    for run in sorted((ROOT / "results" / "ladder").glob("*/*/config.json")):
        for row in read_rows(run.parent):
            steps = row.get("trajectory") or []
            if not steps or row.get("error") or row.get("judge_correct") is None:
                continue
            n += 1
            answer, stop = row.get("answer") or "", row.get("stop_reason") or "answered"
            if trace_failure(steps, answer, stop, row["question"])[0] is not None:
                flagged += 1
                wrong += not row["judge_correct"]
    return n, flagged, wrong


def collect(limit: int) -> None:
    from tqdm import tqdm

    from mia.graph.context import Context
    from mia.graph.judge import judge
    from mia.graph.judge.config import JudgeConfig
    from mia.graph.nodes.deps import Deps

    done = {json.loads(line)["rid"] for line in REVIEWS.open(encoding="utf-8")} if REVIEWS.exists() else set()
    todo = [t for t in reference() if t["rid"] not in done][: max(0, limit - len(done))]
    from mia.graph.models.native import cpu_signature

    context = Context()
    model = Deps().chat_model(context, "judge")
    cpu = cpu_signature()
    cache: dict[str, dict[str, dict]] = {}
    with REVIEWS.open("a", encoding="utf-8") as out:
        for triple in tqdm(todo, desc="panel", unit="answer"):
            started = time.monotonic()
            trace = trace_of(triple, cache)
            llm = held_out(triple["rid"])
            config = JudgeConfig(arbiter="llm", veto_below=None) if llm else None
            verdict = judge(model, triple["question"], triple["answer"], trace, None, "reviewers", config=config)
            scores = {r.name: (None if r.missing else r.score) for r in verdict.reviews}
            record = {
                "rid": triple["rid"],
                "label": triple["label"],
                "scores": scores,
                "outcome": Rule.default().decide(scores),
                **({"arbiter_llm": verdict.outcome if verdict.method == "llm" else None} if llm else {}),
                "had_trace": trace is not None,
                "seconds": round(time.monotonic() - started, 1),
                "model": context.judge_model,
                "cpu": cpu,  # seconds differ 5x between the CPUs this bench has run on
            }
            out.write(json.dumps(record) + "\n")
            out.flush()


def seconds_by_cpu(rows: list[dict]) -> str:
    """The median seconds per answer on each CPU the reviews record (`cpu`, a native-build signature),
    as a clause; empty when none records one."""
    by: dict[str, list[float]] = {}
    for r in rows:
        by.setdefault(r.get("cpu") or "", []).append(r["seconds"])
    if set(by) == {""}:
        return ""
    return "; " + ", ".join(
        f"{statistics.median(v):.1f} s {f'on {cpu}' if cpu else 'where the CPU was not recorded'} ({len(v)} answers)"
        for cpu, v in by.items()
    )


@dataclass(frozen=True)
class Rule:
    """The weighted arbiter with the paper's weights, a threshold on the weighted mean (1-10), a
    veto below which one reviewer makes it incorrect (None: no veto) or, against a passing mean, the
    verdict unknown (`split`, the judge's JudgeConfig.split), and a spread (highest minus lowest
    score) at or above which the reviewers disagree and the verdict is unknown (None: never)."""

    threshold: float
    veto: float | None
    spread: float | None
    split: str = "unknown"
    incorrect_below: float | None = None

    def decide(self, scores: dict[str, float | None]) -> str:
        return self.decision(scores)[0]

    def decision(self, scores: dict[str, float | None]) -> tuple[str, float]:
        """Outcome and score (the weighted mean on 0-1) of the judge's own weighted arbiter
        (mia.graph.judge.reviewers.weighted_decision) with this rule's threshold, veto and spread."""
        from mia.graph.judge.config import JudgeConfig
        from mia.graph.judge.reviewers import weighted_decision
        from mia.graph.judge.verdict import Review

        config = JudgeConfig(
            threshold=self.threshold,
            veto_below=self.veto,
            split=self.split,  # type: ignore[arg-type]
            disagree_spread=self.spread,
            incorrect_below=self.incorrect_below,
        )
        reviews = [
            Review(name=n, title=n, weight=config.weights.get(n, 0.0), score=s, missing=s is None)  # type: ignore[arg-type]
            for n, s in scores.items()
        ]
        outcome, score, _ = weighted_decision(reviews, config)
        return outcome, score

    @classmethod
    def default(cls) -> Rule:
        """The judge's default rule (JudgeConfig's threshold, veto, split and spread)."""
        from mia.graph.judge.config import JudgeConfig

        config = JudgeConfig()
        return cls(config.threshold, config.veto_below, config.disagree_spread, config.split, config.incorrect_below)

    def __str__(self) -> str:
        veto = f"veto below {self.veto:g} ({self.split} against a passing mean)" if self.veto is not None else "no veto"
        spread = f"unknown at a spread of {self.spread:g}" if self.spread is not None else "no unknown spread"
        band = (
            f", incorrect below {self.incorrect_below:g} (unknown up to the threshold)" if self.incorrect_below else ""
        )
        return f"threshold {self.threshold:g}, {veto}, {spread}{band}"


CAUTIOUS = Rule(10.0, None, None, "unknown", 1.0)
"""A panel that decides only at the ends (`Context(judge_threshold=10, judge_incorrect_below=1)`):
correct only at 10/10 from every reviewer, never incorrect on its own, so with the trace check the
verdicts given are nearly all the trace check's."""


def held_out(rid: str) -> bool:
    return int(hashlib.sha256(rid.encode()).hexdigest(), 16) % 2 == 1


def scores_of(rows: Iterable[dict], rule: Rule | None) -> dict[str, float]:
    """Agreement, coverage, precision and recall of a rule's verdicts (None: each row's `given` verdict)."""
    rows = list(rows)
    decided = [(rule.decide(r["scores"]) if rule else r["given"], r["label"]) for r in rows]
    given = [(d, label) for d, label in decided if d != "unknown"]
    agree = sum(d == label for d, label in given)
    out: dict[str, float] = {"n": len(rows), "given": len(given)}
    out["agreement"] = agree / len(given) if given else float("nan")
    out["coverage"] = len(given) / len(rows) if rows else float("nan")
    for kind in ("correct", "incorrect"):
        said = [label for d, label in given if d == kind]
        truth = [d for d, label in given if label == kind]
        out[f"{kind}_precision"] = said.count(kind) / len(said) if said else float("nan")
        out[f"{kind}_recall"] = truth.count(kind) / len(truth) if truth else float("nan")
    return out


def table_row(name: str, settings: object, s: dict[str, float]) -> str:
    """One row of the report's table from scores_of's figures ('-' where a verdict was never given)."""

    def two(x: float) -> str:
        return "-" if x != x else f"{x:.2f}"  # NaN: no such verdict or label

    return (
        f"| {name} | {settings} | {s['n']:.0f} | {s['given']:.0f} ({s['coverage']:.0%}) | **{s['agreement']:.1%}** | "
        f"{two(s['correct_precision'])} / {two(s['correct_recall'])} | "
        f"{two(s['incorrect_precision'])} / {two(s['incorrect_recall'])} |"
    )


def arbiter_line(rows: list[dict]) -> list[str]:
    """The LLM arbiter's verdicts (`--judge-arbiter llm`) on the held-out rows that have one."""
    part = [r for r in rows if "arbiter_llm" in r]
    if not part:
        return []
    s = scores_of(({"scores": {}, "label": r["label"], "given": r["arbiter_llm"] or "unknown"} for r in part), None)
    return [table_row("LLM arbiter, held-out half", "`--judge-arbiter llm`, no veto", s)]


def ranking_auc(rows: list[dict]) -> float:
    """P(a right answer's weighted mean > a wrong one's), ties counted half; answers without a
    usable review are left out."""
    rule = Rule.default()
    by: dict[str, list[float]] = {"correct": [], "incorrect": []}
    for r in rows:
        if any(v is not None for v in r["scores"].values()):
            by[r["label"]].append(rule.decision(r["scores"])[1])
    pairs = [(p > n) + 0.5 * (p == n) for p in by["correct"] for n in by["incorrect"]]
    return sum(pairs) / len(pairs) if pairs else float("nan")


def selective_rule(calibration: list[dict], target: float) -> tuple[Rule | None, int]:
    """The rule that decides the most of the calibration half while agreeing with its labels on at
    least `target` of the verdicts it gives (ties: the higher agreement): a panel allowed to say
    `unknown` between a low mean (incorrect below) and a high one (the threshold). None if no rule
    reaches the target. Also returns how many rules were tried."""
    halves = [x / 2 for x in range(2, 21)]
    grid = [
        Rule(t, v, None, "unknown", b)
        for t, v in product(halves, [None, 2.0, 3.0])
        for b in [None, *[h for h in halves if h < t]]
    ]
    scored = [(r, scores_of(calibration, r)) for r in grid]
    passing = [(r, s) for r, s in scored if s["given"] and s["agreement"] >= target]
    if not passing:
        return None, len(grid)
    return max(passing, key=lambda rs: (rs[1]["coverage"], rs[1]["agreement"]))[0], len(grid)


def trace_lines(calibration: list[dict], test: list[dict], rules: list[tuple[str, Rule]]) -> list[str]:
    """Rows for the trace check first (incorrect when the logged trace shows a failure), then a rule
    on the answers it leaves."""
    flags = trace_flags(r["rid"] for r in calibration + test)
    out = []
    for name, rule in rules:
        for half, part in (("calibration half", calibration), ("held-out half", test)):
            given = [
                {
                    "scores": {},
                    "label": r["label"],
                    "given": "incorrect" if flags[r["rid"]] else rule.decide(r["scores"]),
                }
                for r in part
            ]
            out.append(table_row(f"trace check + {name}, {half}", rule, scores_of(given, None)))
    return out


def report(min_coverage: float, target: float) -> None:

    rows = [json.loads(line) for line in REVIEWS.open(encoding="utf-8")]
    calibration = [r for r in rows if not held_out(r["rid"])]
    test = [r for r in rows if held_out(r["rid"])]
    default = Rule.default()
    grid = [
        Rule(t, v, s, split)
        for t, v, s, split in product(
            [x / 2 for x in range(6, 19)], [None, 2.0, 3.0, 4.0], [None, 4.0, 5.0, 6.0, 7.0, 8.0], ["unknown", "veto"]
        )
    ]
    eligible = [r for r in grid if scores_of(calibration, r)["coverage"] >= min_coverage]
    best = (
        max(eligible, key=lambda r: (scores_of(calibration, r)["agreement"], scores_of(calibration, r)["coverage"]))
        if eligible
        else default
    )
    selective, tried = selective_rule(calibration, target)
    n_unseen, flagged, wrong = unseen_runs_precision()
    unseen_text = (
        f"of {n_unseen} answers it flagged {flagged} ({flagged / n_unseen:.0%}), and the runs' ground-truth grader "
        f"graded {wrong} of those wrong ({wrong / flagged:.1%})"
        if flagged
        else "no answer to read"
    )
    labels = [r["label"] for r in rows]
    seconds = [r["seconds"] for r in rows]

    def line(name: str, rule: Rule, part: list[dict]) -> str:
        return table_row(name, rule, scores_of(part, rule))

    text = [
        "# The unsupervised panel against answers labelled by reading",
        "",
        f"Commands: `python bench/judge/panel_agreement.py collect --limit N` (the judge model "
        f"`{rows[0]['model'] if rows else '?'}`, reviewers mode, no gold shown), then "
        f"`python bench/judge/panel_agreement.py report --min-coverage {min_coverage:g}`. "
        f"{len(rows)} of the {len(reference())} labelled answers of bench/judge/reference/ reviewed "
        f"({labels.count('correct')} labelled correct); {statistics.median(seconds) if seconds else 0:.1f} s "
        f"median per answer (three reviewer calls{seconds_by_cpu(rows)}). Calibration half and held-out half by a "
        "hash of the answer's id.",
        "",
        "| rule | settings | answers | verdicts given | agreement with the labels | correct: precision / recall "
        "| incorrect: precision / recall |",
        "|---|---|---|---|---|---|---|",
        line("default, calibration half", default, calibration),
        line("default, held-out half", default, test),
        line("calibrated, calibration half", best, calibration),
        line("calibrated, held-out half", best, test),
        *arbiter_line(test),
        *(
            [
                line("selective, calibration half", selective, calibration),
                line("selective, held-out half", selective, test),
            ]
            if selective
            else []
        ),
        *trace_lines(
            calibration,
            test,
            [
                ("default", default),
                *([("selective", selective)] if selective else []),
                ("cautious", CAUTIOUS),
            ],
        ),
        "",
        f"The calibrated rule is the one of {len(grid)} (thresholds 3-9, vetoes none/2/3/4 giving "
        f"incorrect or, against a passing mean, unknown, unknown at a spread of 4-8 or never) with the best agreement on the calibration half among those that decide at "
        f"least {min_coverage:.0%} of it; the held-out rows are what it is reported on.",
        "",
        (
            f"The selective rule is the one of {tried} (thresholds 1-10, incorrect below any lower half point or "
            f"not at all, a veto at 2, 3 or none) that decides the most of the calibration half while agreeing "
            f"with its labels on at least {target:.0%} of the verdicts it gives: a panel that says `unknown` "
            "between a low and a high mean (`JudgeConfig.incorrect_below`, `Context.judge_incorrect_below`)."
            if selective
            else f"No rule of {tried} reached {target:.0%} agreement on the calibration half."
        ),
        "",
        f"For scale: a rule that calls every answer incorrect agrees with the labels on "
        f"{sum(r['label'] == 'incorrect' for r in test) / max(len(test), 1):.1%} of the held-out half "
        "(the share labelled incorrect); a panel earns its calls only above that. How well the weighted mean "
        f"ranks right answers above wrong ones over all {len(rows)} answers (AUC, 0.5 = chance): {ranking_auc(rows):.2f}.",
        "",
        "**The trace check** (`JudgeConfig.trace_checks`, on by default): before the reviewers, an answer whose trace "
        "shows a failure (the failure rule reflection replans on, `mia.graph.nodes.failure.trace_failure`: no answer, "
        "a forced answer, a tool error, an answer no search result supports, one that restates the question, names "
        "neither candidate or is of the wrong kind, one its own results contradict) is incorrect, with no reviewer "
        "call; the rows above marked `trace check` read it from each answer's logged trace. Its checks were written "
        "from the tuning split's logs, and some labelled answers come from those runs. "
        f"Out of sample, on the ablation ladder's final-split rows, which no check was written from: {unseen_text}.",
    ]
    OUT.write_text("\n".join(text) + "\n", encoding="utf-8")
    print("\n".join(text))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    c = sub.add_parser("collect")
    c.add_argument("--limit", type=int, default=400, help="stop once this many answers are reviewed in all")
    r = sub.add_parser("report")
    r.add_argument("--min-coverage", type=float, default=0.6)
    r.add_argument("--target", type=float, default=0.85, help="the selective rule's least agreement (issue 38: 85%%)")
    args = ap.parse_args()
    if args.command == "collect":
        collect(args.limit)
    else:
        report(args.min_coverage, args.target)


if __name__ == "__main__":
    sys.exit(main())
