#!/usr/bin/env bash
# Issue 15's HotpotQA rows (distractor setting), one configuration after the other, each from a
# frozen copy of one commit (scripts/frozen_run.sh), each resumable: a session stopped part-way
# leaves its results.jsonl, and the next `results/hotpotqa-qwen-planners/run.sh` goes on where it
# stopped (a finished run only has its summary rebuilt). Run it in the background:
#   nohup results/hotpotqa-qwen-planners/run.sh > /dev/null 2>&1 &
#
# What makes the rows comparable: the same 100 scored questions (seed 0, positions 0-99 of the
# seeded sample), the same budgets, and every memory run starts from one shared warm-up memory:
# 50 other HotpotQA questions answered by MIA first (`--n 0 --warmup 50`: the last 50 of the seeded
# pool, never scored), so that the memory runs differ in the planner alone.
#
# The GRPO row uses the planner adapter trained on 2WikiMultihopQA (results/training/cpu-qwen-2wiki):
# trained on one set and evaluated on another, as the paper's planner is trained on one set
# and evaluated on others; it is not a HotpotQA-trained planner.
set -euo pipefail
cd "$(dirname "$0")/../.."
R=results/hotpotqa-qwen-planners
COMMON=(--dataset hotpotqa --max-tool-calls 4)
CODE=2c8c751   # every row on one commit, whatever this checkout holds when the row starts
run() { local name="$1"; shift; scripts/study_row.sh --commit "$CODE" "$R" "$name" "${COMMON[@]}" "$@"; }  # one row: a frozen copy, committed every 30 min
run warmup --n 0 --warmup 50 --memory mia   # about an hour: the memory every row below starts from
run none --n 100 --memory none
# the shorter rows first: a session that ends part-way leaves whole rows to compare
run trajectory-rag --n 100 --memory trajectory-rag --memory-from "$R/warmup"
run mia-base --n 100 --memory mia --memory-from "$R/warmup"
run mia-grpo --n 100 --memory mia --memory-from "$R/warmup" \
    --planner-model llamacpp:qwen-coder-1.5b+results/training/cpu-qwen-2wiki/adapter
.venv/bin/mia eval-report "$R/none" "$R/trajectory-rag" "$R/mia-base" "$R/mia-grpo" --out "$R" \
    --title "HotpotQA, 100 questions"
