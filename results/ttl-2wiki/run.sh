#!/usr/bin/env bash
# Issue 37, part 3: test-time learning on top of the ladder's defaults, 120 2Wiki questions, against
# memory only. Both rows run from a frozen copy of one commit (scripts/frozen_run.sh), resumable,
# committed every 30 minutes (scripts/checkpoint_run.sh). Run it in the background:
#   nohup results/ttl-2wiki/run.sh > /dev/null 2>&1 &
#
# The same 120 questions: 2Wiki distractor, seed 0, positions 100-219 (the ladder's final split and
# the next 20; no default was chosen on them and no committed planner adapter trained on them is
# used). Both rows start from the ladder's 2Wiki warm-up memory, with every default of the graph
# except one: a learning session plans every question first (LearningSession sets plan_when
# "start": the planner learns from the plans it serves), so the memory-only row plans first too and
# the two rows differ in test-time learning alone. The learner trains in the served dtype (float32 on
# a CPU) between questions (schedule "between"), so a question's seconds exclude learning. (A first
# start in bfloat16, on a CPU without AVX-512 BF16, had not learned its first batch after 20 minutes
# and was removed; torch_dtype now refuses that setting.)
set -euo pipefail
cd "$(dirname "$0")/../.."
R=results/ttl-2wiki
COMMON=(--dataset 2wiki --seed 0 --start 100 --n 120 --max-tool-calls 4 --memory mia
        --memory-from results/training/2wiki-warmup-store --plan-when start)
# each row: scripts/study_row.sh (a frozen copy, logged to $R/NAME.log, committed every 30 minutes);
# both rows run the commit the first began on, whichever session resumes them
run() { local name="$1"; shift; scripts/study_row.sh --commit-of "$R/memory" "$R" "$name" "${COMMON[@]}" "$@"; }
run memory
.venv/bin/mia models fetch qwen-coder-1.5b --convert   # the learner trains the served weights, de-quantised
# the ttl row ran its first 8 answers and first batch on c880a98: the answer path of 7d74923 (the
# memory row's), with a learner that samples the served planner's plans and plays them with the
# served budget, and a rollback rule that asks a permutation test (a first ttl row on 7d74923/582f0fc
# was stopped at 11 answers: README.md); answers 9-12 and the second batch ran on 50df9e1, whose GRPO
# step computes the same loss and gradients with a question's prompt run once for its plans; from
# the third batch on, 316d49d, meant to sample the plans on the served llama.cpp planner, which it
# did not: it passed the sampler to the transformers-executor branch only, so answers 13 and the
# third batch ran as on 50df9e1; from answer 14 on, a831237, which samples on the served planner
# (the same weights and adapter, plain temperature sampling), not the learner's fp32 copy
scripts/study_row.sh --commit a831237 "$R" ttl "${COMMON[@]}" --test-time-learning
# memory-cpu2: the memory row again, same commit and settings, on the CPU that ran the ttl row's answers
# from 42 on (a Zen 5 EPYC with AVX-512, llamacpp.cpu x86_64-2380ab50821c): it pairs those answers on
# one CPU, and its answers against the memory row's show what the CPU alone changes (README).
run memory-cpu2
.venv/bin/mia eval-report "$R/memory" "$R/ttl" "$R/memory-cpu2" --out "$R" \
    --title "2WikiMultihopQA, 120 questions: test-time learning against memory only (plan first)"
