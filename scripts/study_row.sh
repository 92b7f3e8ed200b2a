#!/usr/bin/env bash
# One row of a study under results/: `mia eval EVAL_ARGS --label NAME --out STUDY/NAME` from a
# frozen copy of one commit (scripts/frozen_run.sh), logged to STUDY/NAME.log and committed every
# 30 minutes (scripts/checkpoint_run.sh, its output in STUDY/checkpoints.log). A study's run.sh
# calls it once a row, so that every study runs its rows the same way.
#
#   scripts/study_row.sh [--commit REV | --commit-of RUN_DIR] STUDY NAME EVAL_ARGS...
#
# --commit-of RUN_DIR: the commit RUN_DIR/config.json records (a study's first row), else HEAD, so
# that a study resumed in a later session runs every row on the commit it began on.
# STUDY_ROW_DRY_RUN=1 prints the two commands instead of running them.
set -euo pipefail
cd "$(dirname "$0")/.."
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
if [[ -n "${STUDY_ROW_DRY_RUN:-}" ]]; then
    echo "scripts/checkpoint_run.sh $STUDY/$NAME"
    echo "scripts/frozen_run.sh ${REV[*]} $STUDY/$NAME.log -- eval $* --label $NAME --out $STUDY/$NAME"
    exit 0
fi
scripts/checkpoint_run.sh "$STUDY/$NAME" >> "$STUDY/checkpoints.log" 2>&1 &
scripts/frozen_run.sh "${REV[@]}" "$STUDY/$NAME.log" -- eval "$@" --label "$NAME" --out "$STUDY/$NAME"
