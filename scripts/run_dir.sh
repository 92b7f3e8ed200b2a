# Sourced by the scripts that watch a running `mia eval` (stop_at_boundary.sh, checkpoint_run.sh):
# how they find its process and count its answers, defined once.
#   usage_unless_args N "$@"   print the caller's header comment (lines 2..N) and exit 2 without a RUN_DIR
#   answers                    lines in $RUN/results.jsonl (0 before the first answer)
#   eval_pid                   the pid of the eval whose command line has `--out $RUN` (empty if none)
usage_unless_args() {
    local last="$1"; shift
    if [[ $# -lt 1 || "$1" == "-h" || "$1" == "--help" ]]; then
        sed -n "2,${last}p" "$0" | sed 's/^# \{0,1\}//'
        exit 2
    fi
}
answers() { [[ -f "$RUN/results.jsonl" ]] && wc -l < "$RUN/results.jsonl" || echo 0; }
eval_pid() { pgrep -f -- "--out $RUN( |\$)" | head -1 || true; }
