#!/usr/bin/env bash
# Commit a running evaluation's folder (results, the store's trajectory log and adapter versions) every
# INTERVAL seconds, each time just after an answer, so that a machine recycled mid-run loses at
# most one interval. Why: a session's uncommitted work can outlive its machine only as far as git
# carries it; twice a store, and once ten adapter versions (then git-ignored), were lost that way.
#
#   scripts/checkpoint_run.sh RUN_DIR [INTERVAL_S]      (default 1800; run it with nohup ... &)
#
# - Waits for RUN_DIR/results.jsonl to gain a line (the answer's memory is written, the next
#   question has only begun), then `git add`s RUN_DIR and commits only that path (`git commit
#   --only`), whatever else is staged. What .gitignore names stays out: the store's Chroma files and
#   index link (a resumed run rebuilds its memory from the trajectory log), the run's progress log
#   RUN_DIR.log, locks, owner files and the GGUF copies of adapters (rebuilt from the safetensors on
#   load). A busy index (another git command) is retried.
# - Waits up to a minute for the process that writes RUN_DIR to start (so a queue can start it
#   just before the run), and ends when no process writes RUN_DIR any more, after a last commit.
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/run_dir.sh
usage_unless_args 16 "$@"
RUN="${1%/}"; INTERVAL="${2:-1800}"
running() { [[ -n "$(eval_pid)" ]]; }
commit() {
    local paths=("$RUN") n
    n="$(answers)"
    for _ in 1 2 3 4 5; do
        if git add -- "${paths[@]}" 2>/dev/null; then
            git diff --cached --quiet -- "${paths[@]}" && return 0  # nothing new
            git commit -q --only -m "$RUN: checkpoint at $n answers (scripts/checkpoint_run.sh)" -- "${paths[@]}" \
                && { echo "$(date -u +%FT%TZ) committed $RUN at $n answers"; return 0; }
        fi
        sleep 5
    done
    echo "$(date -u +%FT%TZ) could not commit $RUN" >&2
}
for _ in $(seq 1 30); do running && break; sleep 2; done
while running; do
    for _ in $(seq 1 $((INTERVAL / 10))); do running || break; sleep 10; done
    start="$(answers)"
    while running && [[ "$(answers)" == "$start" ]]; do sleep 2; done
    commit
done
commit
