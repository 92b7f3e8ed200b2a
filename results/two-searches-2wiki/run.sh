#!/usr/bin/env bash
# Issues 37 and 43: does a second search before the answer help the embedded executor, and what
# would an executor trained to search twice learn from? The graph's defaults (the ladder's `default`
# rung) against the same with two searches required before an answer (`--min-tool-calls 2`; the
# turn grammar then allows only a search call until the second search is made), paired, on 2Wiki
# positions 220-319 of the seeded order: no ladder split (tune 0-99, final 100-199), not the
# test-time learning study's (100-219) and not the held-out evaluation of the training configs
# (400-449), so a choice made here looks at no reported question. Both rows start from the ladder's
# 2Wiki warm-up memory, from a frozen copy of one commit, resumable, committed every 30 minutes.
# Their right episodes are rejection-sampling data for the executor (mia.training.sft_data).
#   nohup results/two-searches-2wiki/run.sh > /dev/null 2>&1 &
set -euo pipefail
cd "$(dirname "$0")/../.."
R=results/two-searches-2wiki
COMMON=(--dataset 2wiki --seed 0 --start 220 --n 100 --max-tool-calls 4 --memory mia
        --memory-from results/training/2wiki-warmup-store)
# each row: scripts/study_row.sh (a frozen copy, logged to $R/NAME.log, committed every 30 minutes);
# both rows run the commit the first began on, whichever session resumes them
run() { local name="$1"; shift; scripts/study_row.sh --commit-of "$R/default" "$R" "$name" "${COMMON[@]}" "$@"; }
run default
run two-searches --min-tool-calls 2
.venv/bin/mia eval-report "$R/default" "$R/two-searches" --out "$R" \
    --title "2WikiMultihopQA positions 220-319: the defaults, one search required against two"
