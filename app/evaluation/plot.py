"""One PNG per run or comparison: accuracy next to what it cost in tokens, per configuration.

Why side by side: MIA's claim is better accuracy at a lower context cost than long-context
baselines, so the two panels must be read together.
"""

from __future__ import annotations

from pathlib import Path

from mia.app.evaluation.summary import RunSummary


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
        heights = [(s.per_role[role].prompt_tokens + s.per_role[role].completion_tokens) if role in s.per_role else 0.0
                   for s in summaries]
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
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
