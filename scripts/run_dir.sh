# Sourced by the scripts that watch a running `mia eval` (stop_at_boundary.sh, checkpoint_run.sh):
# how they find its process and count its answers, defined once.
#   usage_unless_args N "$@"   print the caller's header comment (lines 2..N) and exit 2 without a RUN_DIR
#   answers                    lines in $RUN/results.jsonl and $RUN/warmup/results.jsonl (a warm-up's
#                              answers: `mia eval --warmup N` answers those first)
#   eval_pid                   the pid of the eval whose command line has `--out $RUN` (empty if none)
#   alive PID                  PID runs and has not exited (an exited child its parent has not yet
#                              reaped, a zombie, still answers `kill -0`)
usage_unless_args() {
    local last="$1"; shift
    if [[ $# -lt 1 || "$1" == "-h" || "$1" == "--help" ]]; then
        sed -n "2,${last}p" "$0" | sed 's/^# \{0,1\}//'
        exit 2
    fi
}
# (cat fails when one of the two files is absent, as in most runs; under `set -e -o pipefail`, as in
# stop_at_boundary.sh, that failure ended the caller silently)
answers() { { cat "$RUN/warmup/results.jsonl" "$RUN/results.jsonl" 2>/dev/null || true; } | wc -l; }
eval_pid() { pgrep -f -- "--out $RUN( |\$)" | head -1 || true; }
alive() { local state; state="$(ps -o stat= -p "$1" 2>/dev/null || true)"; [[ -n "$state" && "$state" != Z* ]]; }
