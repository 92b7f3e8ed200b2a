"""Evaluation harness: measure what the MIA paper measures, on any backend.

`mia eval` runs one configuration (memory none | trajectory-rag | mia) over a QA set and logs one
line per question; `mia eval-report` merges runs. Public API (imported lazily, the harness pulls in
the graph only when it runs):

    from mia.app.evaluation import EvalConfig, run_evaluation, compare, load_examples, GraphRunner
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_EXPORTS = {
    "EvalConfig": "mia.app.evaluation.harness",
    "run_evaluation": "mia.app.evaluation.harness",
    "build_context": "mia.app.evaluation.harness",
    "RunAborted": "mia.app.evaluation.harness",
    "GraphRunner": "mia.app.evaluation.runner",
    "result_from_output": "mia.app.evaluation.runner",
    "EvalExample": "mia.app.evaluation.records",
    "QuestionResult": "mia.app.evaluation.records",
    "load_examples": "mia.app.evaluation.datasets",
    "DATASETS": "mia.app.evaluation.datasets",
    "summarise": "mia.app.evaluation.summary",
    "RunSummary": "mia.app.evaluation.summary",
    "compare": "mia.app.evaluation.report",
    "load_run": "mia.app.evaluation.report",
    "wilson": "mia.app.evaluation.stats",
    "mean_ci": "mia.app.evaluation.stats",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'mia.app.evaluation' has no attribute {name!r}")
