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
    """Left: judge accuracy (EM when there was no judge) with 95% intervals; right: prompt and
    completion tokens per question (stacked), with the interval of the total prompt tokens."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [s.label for s in summaries]
    x = list(range(len(summaries)))
    fig, (ax_acc, ax_tok) = plt.subplots(1, 2, figsize=(max(8, 2.2 * len(summaries) + 4), 4.2))

    use_judge = all(s.accuracy.value is not None for s in summaries)
    metric = [s.accuracy if use_judge else s.em for s in summaries]
    vals = [m.value or 0.0 for m in metric]
    errs = list(zip(*[_err(m) for m in metric])) if summaries else [[], []]
    ax_acc.bar(x, vals, yerr=errs, capsize=4, color="#4C72B0")
    ax_acc.set_ylabel("LLM-judge accuracy" if use_judge else "exact match")
    ax_acc.set_ylim(0, 1)
    for xi, v in zip(x, vals):
        ax_acc.text(xi, v + 0.02, f"{v:.2f}", ha="center", fontsize=8)

    prompt = [s.prompt_tokens.value or 0.0 for s in summaries]
    compl = [s.completion_tokens.value or 0.0 for s in summaries]
    perr = list(zip(*[_err(s.prompt_tokens) for s in summaries])) if summaries else [[], []]
    ax_tok.bar(x, prompt, yerr=perr, capsize=4, color="#DD8452", label="prompt")
    ax_tok.bar(x, compl, bottom=prompt, color="#55A868", label="completion")
    ax_tok.set_ylabel("tokens per question (all roles)")
    ax_tok.legend(fontsize=8)

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
