#!/usr/bin/env bash
# Regenerate constraints.txt (the exact versions the app, CI and README's commands install) from a
# working environment: scripts/update_constraints.sh [PYTHON]  (default: .venv/bin/python).
# The wheel's metadata keeps compatible ranges (pyproject.toml); this file pins what was tested.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${1:-.venv/bin/python}"
{
    echo "# Exact versions of a tested environment; regenerate with scripts/update_constraints.sh."
    echo "# Used as pip -c constraints.txt by scripts/setup.sh (and so by make demo, make test and .ci/run)."
    "$PY" -m pip freeze --exclude-editable --exclude mia-agent \
        | grep -vE '^(#|-e )' \
        | sed -E 's/^(torch==[0-9.]+)\+[a-z0-9]+$/\1/' \
        | LC_ALL=C sort -f
} > constraints.txt
echo "constraints.txt: $(grep -vc '^#' constraints.txt) pins"
