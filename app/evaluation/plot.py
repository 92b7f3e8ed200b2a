"""One PNG per run or comparison: accuracy next to what it cost in tokens, per configuration.

Why side by side: MIA's claim is better accuracy at a lower context cost than long-context
baselines, so the two panels must be read together.
"""

from __future__ import annotations

from pathlib import Path

from mia.app.evaluation.learning_report import LearningReport
from mia.app.evaluation.summary import RunSummary
from mia.training.artifacts import save_figure


def _err(est) -> tuple[float, float]:
    if est.value is None:
        return (0.0, 0.0)
    return (est.value - (est.low or est.value), (est.high or est.value) - est.value)


def plot_runs(summaries: list[RunSummary], path: Path, title: str = "") -> Path:
    """Left: judge accuracy, EM, F1 and cover with 95% intervals; right: tokens per question,
    stacked by role (the judge's share is evaluation overhead, the rest is what the agent costs)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [s.label for s in summaries]
    x = list(range(len(summaries)))
    fig, (ax_acc, ax_tok) = plt.subplots(1, 2, figsize=(max(8, 2.2 * len(summaries) + 4), 4.2))

    metrics = [("judge acc.", "accuracy"), ("EM", "em"), ("F1", "f1"), ("cover", "cover")]
    metrics = [(name, key) for name, key in metrics if any(getattr(s, key).value is not None for s in summaries)]
    width = 0.8 / max(1, len(metrics))
    colours = ["#4C72B0", "#8172B2", "#64B5CD", "#CCB974"]
    for j, (name, key) in enumerate(metrics):
        ests = [getattr(s, key) for s in summaries]
        xs = [xi - 0.4 + width * (j + 0.5) for xi in x]
        vals = [e.value or 0.0 for e in ests]
        errs = list(zip(*[_err(e) for e in ests]))
        ax_acc.bar(xs, vals, width=width, yerr=errs, capsize=3, color=colours[j % len(colours)], label=name)
    ax_acc.set_ylabel("score (95% CI)")
    ax_acc.set_ylim(0, 1.22)
    ax_acc.set_yticks([0, 0.2, 0.4, 0.6, 0.8, 1.0])
    ax_acc.legend(fontsize=7, ncol=len(metrics), loc="upper center")

    bottom = [0.0] * len(summaries)
    role_colours = {"planner": "#C44E52", "executor": "#DD8452", "manager": "#55A868", "judge": "#BBBBBB"}
    for role, colour in role_colours.items():
        heights = [
            (s.per_role[role].prompt_tokens + s.per_role[role].completion_tokens) if role in s.per_role else 0.0
            for s in summaries
        ]
        if any(heights):
            ax_tok.bar(x, heights, bottom=bottom, color=colour, label=role)
            bottom = [b + h for b, h in zip(bottom, heights)]
    ax_tok.set_ylabel("tokens per question (prompt + completion)")
    ax_tok.legend(fontsize=8, title="role", title_fontsize=8)

    for ax in (ax_acc, ax_tok):
        ax.set_xticks(x)
        ax.set_xticklabels(labels, rotation=20, ha="right", fontsize=8)
    n = summaries[0].n if summaries else 0
    fig.suptitle(title or f"{summaries[0].config.get('dataset', '')} (n={n}, 95% CI)" if summaries else title)
    fig.tight_layout()
    path = Path(path)
    save_figure(fig, path, dpi=120)
    plt.close(fig)
    return path


def _cumulative(flags: list[bool | None]) -> list[float | None]:
    """Accuracy over the answers so far; None where the run has no answer for that question."""
    out, right, seen = [], 0, 0
    for flag in flags:
        if flag is not None:
            right, seen = right + int(flag), seen + 1
        out.append(right / seen if seen else None)
    return out


def _returns_to_older(versions: list[str]) -> list[int]:
    """1-based answers at which the served version went back to one published before the newest
    served so far (a rollback, or versions whose files were lost)."""
    order = {"base": 0}
    out, newest = [], 0
    for i, v in enumerate(versions, start=1):
        rank = order.setdefault(v, int(v[1:]) if v[1:].isdigit() else len(order))
        if rank < newest and (i == 1 or versions[i - 2] != v):
            out.append(i)
        newest = max(newest, rank)
    return out


def plot_learning(report: LearningReport, others: dict[str, dict[str, bool]], path: Path, title: str = "") -> Path:
    """Accuracy so far along the learning run's answers, beside other runs on the same questions in
    the same order (a memory-only run: the same memory, no learning), with a tick where each
    adapter version was first served. Why cumulative: windows of a few answers are too noisy to
    read, and the question is whether the learning run pulls away as versions accumulate."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x = list(range(1, len(report.answer_ids) + 1))
    fig, ax = plt.subplots(figsize=(9, 4.2))
    # a None in _cumulative is a gap in the line; matplotlib's stubs do not list None
    ax.plot(x, _cumulative(list(report.answer_correct)), color="#C44E52", lw=2, label=f"{report.label} (learning)")  # type: ignore[arg-type]
    colours = ["#4C72B0", "#55A868", "#8172B2", "#CCB974"]
    for j, (label, correct) in enumerate(others.items()):
        ys = _cumulative([correct.get(i) for i in report.answer_ids])
        ax.plot(x, ys, color=colours[j % len(colours)], lw=1.5, label=label)  # type: ignore[arg-type]
    firsts = [b.first_served for b in report.batches if b.kind == "step" and b.version and b.first_served]
    for at in firsts:
        ax.axvline(at, color="#999999", lw=0.6, ls=":")
    if firsts:
        ax.plot([], [], color="#999999", lw=0.6, ls=":", label="a new adapter version first served")
    returns = _returns_to_older(report.answer_versions)
    for at in returns:
        ax.axvline(at, color="#C44E52", lw=1.0, ls="--")
    if returns:
        ax.plot(
            [], [], color="#C44E52", lw=1.0, ls="--", label="an older version served again (rollback or lost files)"
        )
    for w in report.windows[1:]:
        ax.axvline(w.start - 0.5, color="#333333", lw=0.8, alpha=0.4)
    ax.set_xlabel("answers, in the order given")
    ax.set_ylabel(f"accuracy so far ({report.scored_by})")
    ax.set_xlim(1, max(x, default=1))
    ax.set_ylim(0, max(0.6, max((v for v in _cumulative(list(report.answer_correct))[5:] if v), default=0) + 0.1))
    ax.legend(fontsize=8, loc="upper right")
    fig.suptitle(title or f"Test-time learning: {report.label} (n={report.n})")
    fig.tight_layout()
    path = Path(path)
    save_figure(fig, path, dpi=120)
    plt.close(fig)
    return path
