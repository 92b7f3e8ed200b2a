#!/usr/bin/env bash
# Stop a running `mia eval` between two questions, so that its run folder (results.jsonl, store/)
# can be committed and resumed on another machine.
#
#   scripts/stop_at_boundary.sh RUN_DIR [TIMEOUT_S]
#
# - Waits (up to TIMEOUT_S, default 900) for RUN_DIR/results.jsonl (or a warm-up's
#   RUN_DIR/warmup/results.jsonl) to gain a line: the question just
#   answered has had its memory written, the next one has only begun.
# - Then sends SIGINT to the eval process whose command line has `--out RUN_DIR`: asyncio cancels the
#   question in flight (it is answered again on resume) and the harness closes the learner of a
#   test-time-learning run (it finishes the batch in progress, or leaves it pending, within 60 s).
# - Waits for the process to exit (SIGKILL after 120 s more). Exit status 0 once it has stopped.
# Why not kill at any time: a memory write or an adapter save cut half-way is what a commit must not hold.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/run_dir.sh
usage_unless_args 14 "$@"
RUN="${1%/}"; TIMEOUT="${2:-900}"
PID="$(eval_pid)"
[[ -n "$PID" ]] || { echo "no running eval writes $RUN" >&2; exit 1; }
start="$(answers)"; waited=0
echo "waiting for question $((start + 1)) of $RUN to finish (pid $PID)"
while [[ "$(answers)" == "$start" ]] && alive "$PID"; do
    (( waited >= TIMEOUT )) && { echo "no answer within ${TIMEOUT}s; nothing stopped" >&2; exit 1; }
    sleep 2; waited=$((waited + 2))
done
kill -INT "$PID" 2>/dev/null || true
for _ in $(seq 1 60); do alive "$PID" || { echo "stopped after $(answers) answers"; exit 0; }; sleep 2; done
echo "still running after 120 s: SIGKILL" >&2
kill -KILL "$PID" 2>/dev/null || true
echo "killed after $(answers) answers"
