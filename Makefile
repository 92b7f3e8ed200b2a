# The README's two commands: `make demo` and `make test`. Both set everything up first.
QUESTION ?= Which magazine was started first, Arthur's Magazine or First for Women?
# Options for `mia ask` (e.g. DEMO_ARGS="--max-tool-calls 3"). Empty: the product defaults (measured: 2 min 46 s
# for the ask on 2 idle cores; the 135M model once needed tight budgets, Qwen does not).
DEMO_ARGS ?=

.PHONY: setup setup-dev demo test lint bench
setup:
	bash scripts/setup.sh
setup-dev:
	bash scripts/setup.sh --dev
demo: setup
	.venv/bin/mia ask "$(QUESTION)" $(DEMO_ARGS)
test: setup-dev
	.venv/bin/python -m pytest -q -p no:cacheprovider $(PYTEST_ARGS)
# Static checks (.ci/run runs them after the tests): mypy against its shrinking baseline, ruff.
lint: setup-dev
	bash scripts/typecheck.sh
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .
