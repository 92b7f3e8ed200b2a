#!/usr/bin/env bash
# Issue 15's 2WikiMultihopQA rows, one configuration after the other, each from a frozen copy of
# one commit (scripts/frozen_run.sh). Every run is resumable: a session that is stopped part-way
# leaves its results.jsonl, and the next `results/2wiki-qwen-planners/run.sh` goes on where it
# stopped (a finished run only has its summary rebuilt, in seconds). Run it in the background:
#   nohup results/2wiki-qwen-planners/run.sh > /dev/null 2>&1 &
#
# What makes the rows comparable: the same 100 scored questions (seed 0, positions 0-99; the base
# and test-time-learning runs go on to 120), the same budgets, and every memory run starts from the
# same memory, the committed 2Wiki warm-up store (50 workflows, the ones the GRPO planner was
# trained with), so the memory runs differ in the planner alone. The GRPO planner trained on
# positions 100-399, so its run stops at 100.
set -euo pipefail
cd "$(dirname "$0")/../.."
R=results/2wiki-qwen-planners
STORE=results/training/2wiki-warmup-store
COMMON=(--dataset 2wiki --max-tool-calls 4)
run() { local name="$1"; shift; scripts/study_row.sh "$R" "$name" "${COMMON[@]}" "$@"; }  # one row: a frozen copy, committed every 30 min
run mia-grpo --n 100 --memory mia --memory-from "$STORE" \
    --planner-model llamacpp:qwen-coder-1.5b+results/training/cpu-qwen-2wiki/adapter
run none --n 100 --memory none   # first: the cheapest row (about 22 s a question)
run mia-base --n 120 --memory mia --memory-from "$STORE"
# the plan's effect on the executor alone, on the 25 comparison questions (the executor only; once)
[[ -f bench/e2e/plan-effect.md ]] || .venv/bin/python bench/e2e/plan_effect.py "$R/mia-grpo" --none "$R/none" --type comparison
# a first attempt (30 answers on 6290ee8) lost its memory with the machine it ran on; kept in attempts/
run trajectory-rag --n 100 --memory trajectory-rag --memory-from "$STORE"
.venv/bin/mia models fetch qwen-coder-1.5b --convert   # the learner trains the served weights, de-quantised
# on mia-base's own code (00922b1; since question 105, fa667c1 = 00922b1 + the registry's recovery of
# adapter versions whose files were lost, b68a9d5), so that the two 120-question rows differ in test-time learning
# alone (later commits added the executor's yes/no line and two plan and judge rules)
# test-time learning takes longer than a session (about 160 s a question): stop it at a question
# boundary, commit its store (git add -f), and the next session resumes it (see README.md)
# 00922b1's learner could not stop mid-batch: its process aborts at exit ("terminate called without
# an active exception") after the results and summary are written, hence `|| true`
scripts/study_row.sh --commit fa667c1 "$R" mia-ttl "${COMMON[@]}" \
    --n 120 --memory mia --memory-from "$STORE" --test-time-learning || true
.venv/bin/mia eval-report "$R/mia-base" "$R/mia-ttl" --out "$R/ttl" \
    --title "2WikiMultihopQA, 120 questions: test-time learning against memory only"
.venv/bin/python bench/online/rollback_replay.py "$R/mia-ttl"
.venv/bin/mia eval-report "$R/none" "$R/trajectory-rag" "$R/mia-base" "$R/mia-grpo" --out "$R" \
    --title "2WikiMultihopQA, 100 unseen questions"
