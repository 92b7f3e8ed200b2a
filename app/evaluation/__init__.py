"""Evaluation harness: measure what the MIA paper measures, on any backend.

`mia eval` runs one configuration (memory none | trajectory-rag | mia) over a QA set and logs one
line per question; `mia eval-report` merges runs. Public API (imported lazily, the harness pulls in
the graph only when it runs):

    from mia.app.evaluation import EvalConfig, run_evaluation, compare, load_examples, GraphRunner
"""

from __future__ import annotations

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submod_attrs={
        "harness": ["EvalConfig", "run_evaluation", "build_context", "RunAborted"],
        "runner": ["GraphRunner", "question_result"],
        "records": ["EvalExample", "QuestionResult"],
        "datasets": ["load_examples", "DATASETS"],
        "summary": ["summarise", "RunSummary"],
        "report": ["compare", "load_run"],
        "stats": ["wilson", "mean_ci"],
    },
)
