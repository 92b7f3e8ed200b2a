# The README's two commands: `make demo` and `make test`. Both set everything up first.
QUESTION ?= Which magazine was started first, Arthur's Magazine or First for Women?
# Tight budgets keep the CPU demo to a few minutes with the 135M embedded model; drop them for real models.
DEMO_ARGS ?= --max-tool-calls 3 --max-tokens 128

.PHONY: setup setup-dev demo test bench
setup:
	bash scripts/setup.sh
setup-dev:
	bash scripts/setup.sh --dev
demo: setup
	.venv/bin/mia ask "$(QUESTION)" $(DEMO_ARGS)
test: setup-dev
	.venv/bin/python -m pytest -q -p no:cacheprovider $(PYTEST_ARGS)
