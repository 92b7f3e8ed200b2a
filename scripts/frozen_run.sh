#!/usr/bin/env bash
# Run a long `mia` command (an evaluation, a training run) from a frozen copy of one commit, so that
# edits, commits and branch switches in this checkout cannot reach it while it runs for hours.
#
#   scripts/frozen_run.sh [--commit REV] LOG -- ARGS...      (ARGS: what follows `mia`)
#   scripts/frozen_run.sh LOG -- eval --dataset 2wiki --n 100 --memory mia --warmup 50 --out results/x/mia
#
# - The copy is `git archive REV` (default HEAD) installed (not editable, no dependencies) into
#   $MIA_FROZEN_DIR/<sha>/pkg (default /tmp/mia-frozen), once per commit; its CODE_COMMIT file names
#   the commit, so the run folder's config.json records it (app/provenance.py).
# - The command runs in this checkout (relative paths such as --out land here) with this checkout's
#   .venv, `python -P` and PYTHONPATH=the copy: without -P, `python -c` puts the working directory
#   first on sys.path and the checkout's own `mia/` folder would be imported instead of the copy.
# - Output (progress bars included) is appended to LOG. Run it with nohup/& to keep it in the background.
# - Stop one between two questions with scripts/stop_at_boundary.sh RUN_DIR.
# - Never `git stash` or check out files that such a run writes (its results and store): git replaces
#   the files, and the run goes on writing to the deleted ones.
set -euo pipefail
cd "$(dirname "$0")/.."
REV=HEAD
if [[ "${1:-}" == "--commit" ]]; then REV="$2"; shift 2; fi
if [[ $# -lt 3 || "$2" != "--" || "${1:-}" == "-h" || "${1:-}" == "--help" ]]; then
    sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
fi
LOG="$1"; shift 2
SHA="$(git rev-parse --verify "$REV^{commit}")"
DEST="${MIA_FROZEN_DIR:-/tmp/mia-frozen}/${SHA:0:12}"
if [[ ! -f "$DEST/pkg/mia/CODE_COMMIT" ]]; then
    rm -rf "$DEST" && mkdir -p "$DEST/src"
    git archive "$SHA" | tar -x -C "$DEST/src"
    # setup.py's own folder-to-package mapping lays the copy out (installed, not editable)
    .venv/bin/python -m pip install -q --no-deps --no-build-isolation --no-compile --target "$DEST/pkg" "$DEST/src"
    echo "$SHA" > "$DEST/pkg/mia/CODE_COMMIT"
fi
export PYTHONPATH="$DEST/pkg" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 ANONYMIZED_TELEMETRY=False
echo "[frozen_run] $(date -u +%FT%TZ) commit ${SHA:0:12}: mia $*" >> "$LOG"
# SIGINT is restored: a job started with `&` from a script ignores it, and scripts/stop_at_boundary.sh
# relies on it (asyncio then cancels the question in flight and the harness's cleanup runs).
exec .venv/bin/python -P -c "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); from mia.app.cli import main; sys.argv = ['mia'] + sys.argv[1:]; main()" \
    "$@" >> "$LOG" 2>&1
