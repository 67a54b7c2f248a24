#!/usr/bin/env bash
# Start (or stop) a taskbfs Dask cluster on this machine, as background processes:
# one scheduler, CPU worker(s) advertising CPU=<threads>, and one worker per visible GPU
# advertising GPU=1 with CUDA_VISIBLE_DEVICES pinned to that GPU (as dask-cuda does).
#
#   deploy/start-local-cluster.sh [start]   start; prints the scheduler address
#   deploy/start-local-cluster.sh stop      stop what `start` started (by saved pids)
#   deploy/start-local-cluster.sh status    say what is running
#   deploy/start-local-cluster.sh address   print the running cluster's scheduler address
#
# It runs from any shell and any directory: the interpreter is found (see PYTHON below) and
# the state lives in one fixed place. The address is written to
# $TASKBFS_CLUSTER_DIR/scheduler-address; use it with
#   taskbfs run --scheduler "$(deploy/start-local-cluster.sh address)" ...
#   taskbfs.Runtime(open(".../scheduler-address").read().strip())
#
# Settings (environment variables):
#   TASKBFS_CLUSTER_DIR  state directory: address, pids, logs (default
#                        ${XDG_STATE_HOME:-~/.local/state}/taskbfs/cluster)
#   TASKBFS_HOST         interface every process listens on: scheduler, workers, nannies,
#                        dashboards (default 127.0.0.1: this machine only; the dashboards
#                        are unauthenticated). 0.0.0.0 or an interface's address opens
#                        the cluster to the network, deliberately: workers on other
#                        machines can then join, and anyone who reaches it can use it.
#   TASKBFS_PORT         scheduler port (default 8786; 0 = any free port)
#   TASKBFS_DASHBOARD    dashboard address (default $TASKBFS_HOST:8787; "none" serves none)
#   TASKBFS_GPUS         GPU workers (default: one per line of `nvidia-smi -L`, 0 without it)
#   TASKBFS_CPU_WORKERS  CPU worker processes (default 1)
#   TASKBFS_CPU_THREADS  threads per CPU worker (default: cores minus one per GPU worker,
#                        because each GPU worker's thread keeps a core busy driving its GPU)
#   TASKBFS_WORKER_ARGS  extra arguments for every `dask worker` (e.g. "--no-nanny")
#   TASKBFS_START_TIMEOUT  seconds to wait for the scheduler and the workers (default 60)
#   PYTHON               interpreter with taskbfs installed (default: the first that
#                        imports taskbfs of: the one running the `taskbfs` command on
#                        PATH, the .venv of the checkout holding this script, python3)
set -euo pipefail

DIR=${TASKBFS_CLUSTER_DIR:-${XDG_STATE_HOME:-${HOME:?set HOME or TASKBFS_CLUSTER_DIR}/.local/state}/taskbfs/cluster}
HOST=${TASKBFS_HOST:-127.0.0.1}
PORT=${TASKBFS_PORT:-8786}
DASHBOARD=${TASKBFS_DASHBOARD:-$HOST:8787}
CPU_WORKERS=${TASKBFS_CPU_WORKERS:-1}
WORKER_ARGS=${TASKBFS_WORKER_ARGS:-}
START_TIMEOUT=${TASKBFS_START_TIMEOUT:-60}

die() { echo "start-local-cluster: $*" >&2; exit 1; }

# the interpreter of the `taskbfs` console script on PATH (its #! line), if any
taskbfs_interpreter() {
    local script line
    script=$(command -v taskbfs 2>/dev/null) || return 0
    IFS= read -r line <"$script" || return 0
    if [[ "$line" == '#!/'* && "$line" != *' '* ]]; then echo "${line#\#!}"; fi
}

# $PYTHON if set, else the first candidate interpreter that imports taskbfs
find_python() {
    if [[ -n "${PYTHON:-}" ]]; then echo "$PYTHON"; return; fi
    local here candidate
    here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
    for candidate in "$(taskbfs_interpreter)" "$here/../.venv/bin/python" python3; do
        [[ -n "$candidate" ]] || continue
        if "$candidate" -c "import taskbfs" >/dev/null 2>&1; then echo "$candidate"; return; fi
    done
    echo python3  # start() says that it cannot import taskbfs
}

alive() { [[ -f "$1" ]] && kill -0 "$(cat "$1")" 2>/dev/null; }

# after something was started: stop it again, then die
fail() { stop >/dev/null 2>&1; die "$@"; }

count_gpus() {
    if [[ -n "${TASKBFS_GPUS:-}" ]]; then
        echo "$TASKBFS_GPUS"
    elif command -v nvidia-smi >/dev/null 2>&1; then
        nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true
    else
        echo 0
    fi
}

start() {
    PYTHON=$(find_python)
    mkdir -p "$DIR"
    alive "$DIR/scheduler.pid" && die "already running (scheduler pid $(cat "$DIR/scheduler.pid")); run '$0 stop' first"
    "$PYTHON" -c "import taskbfs" 2>/dev/null \
        || die "$PYTHON cannot import taskbfs; install it (the scheduler runs its placement plugin)"
    rm -f "$DIR"/*.pid "$DIR/scheduler.json" "$DIR/scheduler-address"

    local gpus threads cores
    gpus=$(count_gpus)
    cores=$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN)
    threads=${TASKBFS_CPU_THREADS:-$(( cores - gpus > 0 ? cores - gpus : 1 ))}

    local dash=(--dashboard-address "$DASHBOARD")
    [[ "$DASHBOARD" == none ]] && dash=(--no-dashboard)
    nohup "$PYTHON" -m dask scheduler --host "$HOST" --port "$PORT" "${dash[@]}" \
        --scheduler-file "$DIR/scheduler.json" >"$DIR/scheduler.log" 2>&1 &
    echo $! >"$DIR/scheduler.pid"

    local waited=0
    until [[ -s "$DIR/scheduler.json" ]]; do
        alive "$DIR/scheduler.pid" || fail "scheduler exited; see $DIR/scheduler.log"
        (( waited++ < START_TIMEOUT * 10 )) || fail "scheduler did not start in ${START_TIMEOUT}s"
        sleep 0.1
    done
    local addr
    addr=$("$PYTHON" -c "import json, sys; print(json.load(open(sys.argv[1]))['address'])" \
        "$DIR/scheduler.json")

    # Every worker gets an equal share of this host's memory: Dask's default gives a worker
    # the share of its threads (1/cores for a one-thread GPU worker), too little for the
    # graph ranges a GPU worker holds.
    local share
    share=$(awk -v w="$(( CPU_WORKERS + gpus ))" 'BEGIN { printf "%.4f", 1 / w }')
    local i
    for (( i = 0; i < CPU_WORKERS; i++ )); do
        # shellcheck disable=SC2086  # WORKER_ARGS is a list of words
        nohup "$PYTHON" -m dask worker "$addr" --name "cpu-$i" --nthreads "$threads" \
            --host "$HOST" --dashboard-address "$HOST:0" --memory-limit "$share" \
            --resources "CPU=$threads" $WORKER_ARGS >"$DIR/cpu-$i.log" 2>&1 &
        echo $! >"$DIR/cpu-$i.pid"
    done
    for (( i = 0; i < gpus; i++ )); do
        # shellcheck disable=SC2086
        CUDA_VISIBLE_DEVICES=$i nohup "$PYTHON" -m dask worker "$addr" --name "gpu-$i" \
            --host "$HOST" --dashboard-address "$HOST:0" --memory-limit "$share" \
            --nthreads 1 --resources "GPU=1" $WORKER_ARGS >"$DIR/gpu-$i.log" 2>&1 &
        echo $! >"$DIR/gpu-$i.pid"
    done

    "$PYTHON" - "$addr" "$(( CPU_WORKERS + gpus ))" "$START_TIMEOUT" <<'EOF' \
        || fail "workers did not join in ${START_TIMEOUT}s; see the logs in $DIR"
import sys
from distributed import Client
addr, n, timeout = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
with Client(addr, timeout=timeout) as client:
    client.wait_for_workers(n, timeout=timeout)
EOF
    echo "$addr" >"$DIR/scheduler-address"
    echo "taskbfs cluster at $addr: $CPU_WORKERS CPU worker(s) x $threads threads, $gpus GPU worker(s)" >&2
    echo "$addr"
}

# TERM the processes of the given pid files together, wait up to 10 s, KILL what is left
stop_pids() {
    local pidfile pids=() pid n=0
    for pidfile in "$@"; do
        [[ -f "$pidfile" ]] || continue
        pid=$(cat "$pidfile")
        kill -TERM "$pid" 2>/dev/null && pids+=("$pid")
        rm -f "$pidfile"
    done
    for pid in ${pids[@]+"${pids[@]}"}; do
        while kill -0 "$pid" 2>/dev/null && (( n++ < 100 )); do sleep 0.1; done
        kill -KILL "$pid" 2>/dev/null || true
    done
}

stop() {
    [[ -d "$DIR" ]] || { echo "nothing to stop in $DIR" >&2; return 0; }
    # workers first (so they do not wait for a vanished scheduler), then the scheduler
    stop_pids "$DIR"/cpu-*.pid "$DIR"/gpu-*.pid
    stop_pids "$DIR"/scheduler.pid
    rm -f "$DIR/scheduler-address" "$DIR/scheduler.json"
    echo "stopped the taskbfs cluster of $DIR" >&2
}

status() {
    local pidfile state any=0 running=0
    for pidfile in "$DIR"/*.pid; do
        [[ -f "$pidfile" ]] || continue
        any=1
        if alive "$pidfile"; then state=running; running=1; else state=dead; fi
        echo "$(basename "$pidfile" .pid): pid $(cat "$pidfile") $state"
    done
    [[ -f "$DIR/scheduler-address" ]] && echo "address: $(cat "$DIR/scheduler-address")"
    # Scripts test the exit status: 0 only when some process of the cluster is alive.
    (( running )) || { echo "not running"; return 1; }
    return 0
}

case "${1:-start}" in
    start) start ;;
    stop) stop ;;
    status) status ;;
    address) [[ -s "$DIR/scheduler-address" ]] || die "not running (no $DIR/scheduler-address)"
             cat "$DIR/scheduler-address" ;;
    -h|--help|help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0" ;;
    *) die "unknown command '$1' (start, stop, status, address)" ;;
esac
