#!/usr/bin/env bash
# One row of a study under results/: `mia eval EVAL_ARGS --label NAME --out STUDY/NAME` from a
# frozen copy of one commit (scripts/frozen_run.sh), logged to STUDY/NAME.log and committed every
# 30 minutes (scripts/checkpoint_run.sh, its output in STUDY/checkpoints.log). Every study's run.sh
# and the ablation ladder (scripts/ladder.py) run their rows through it, the same way.
#
#   scripts/study_row.sh [--commit REV | --commit-of RUN_DIR] STUDY NAME EVAL_ARGS...
#
# --commit-of RUN_DIR: the commit RUN_DIR/config.json records (the row itself, or a study's first
# row), else HEAD, so that a row resumed in a later session runs the code it began on.
# STUDY_ROW_FROZEN and STUDY_ROW_CHECKPOINT name other commands in place of the two scripts (tests).
set -euo pipefail
cd "$(dirname "$0")/.."
FROZEN="${STUDY_ROW_FROZEN:-scripts/frozen_run.sh}"
CHECKPOINT="${STUDY_ROW_CHECKPOINT:-scripts/checkpoint_run.sh}"
REV=()
case "${1:-}" in
    --commit) REV=(--commit "$2"); shift 2 ;;
    --commit-of)
        if c="$(.venv/bin/python -c 'import json, sys; print(json.load(open(sys.argv[1]))["code"]["commit"])' \
            "$2/config.json" 2>/dev/null)"; then REV=(--commit "$c"); fi
        shift 2 ;;
esac
if [[ $# -lt 2 || "$1" == -* ]]; then
    sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
fi
STUDY="$1"; NAME="$2"; shift 2
mkdir -p "$STUDY"
"$CHECKPOINT" "$STUDY/$NAME" >> "$STUDY/checkpoints.log" 2>&1 &
"$FROZEN" "${REV[@]}" "$STUDY/$NAME.log" -- eval "$@" --label "$NAME" --out "$STUDY/$NAME"
