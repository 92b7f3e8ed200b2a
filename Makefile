# The README's two commands: `make demo` and `make test`. Both set everything up first.
# `make demo`: two related HotpotQA dev questions in one memory namespace (their supporting paragraphs
# are in the shipped demo corpus); the first is answered, judged against its gold answer and stored,
# and the second's plan is written with the first's workflow shown. DEMO_ARGS: the planner plans
# first (--plan-when start) so that the memory is seen at work, and a comparison answered from one
# side searches the other (--evidence-search); `mia ask` without them is the measured default, which
# plans only after a failure. Wall time: README.md.
QUESTION ?= Which magazine was published first, Woman's Day or The Lady?
GOLD ?= The Lady
QUESTION2 ?= Which women's magazine was published first, Mirabella or Home Monthly?
GOLD2 ?= Home Monthly
DEMO_ARGS ?= --plan-when start --evidence-search --namespace demo

.PHONY: setup setup-dev demo test lint bench
setup:
	bash scripts/setup.sh
setup-dev:
	bash scripts/setup.sh --dev
demo: setup
	.venv/bin/mia ask "$(QUESTION)" --gold "$(GOLD)" $(DEMO_ARGS)
	.venv/bin/mia ask "$(QUESTION2)" --gold "$(GOLD2)" $(DEMO_ARGS)
test: setup-dev
	.venv/bin/python -m pytest -q -p no:cacheprovider $(PYTEST_ARGS)
# Static checks (.ci/run runs them after the tests): mypy against its shrinking baseline, ruff.
lint: setup-dev
	bash scripts/typecheck.sh
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .
