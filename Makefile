# The README's two commands: `make demo` and `make test`. Both set everything up first.
QUESTION ?= Which magazine was started first, Arthur's Magazine or First for Women?

.PHONY: setup setup-dev demo test bench
setup:
	bash scripts/setup.sh
setup-dev:
	bash scripts/setup.sh --dev
demo: setup
	.venv/bin/mia ask "$(QUESTION)"
test: setup-dev
	.venv/bin/python -m pytest -q -p no:cacheprovider $(PYTEST_ARGS)
