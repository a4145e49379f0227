#!/usr/bin/env bash
# Stops the processes that start-cluster.sh / start-*.sh started, and only those: each pid recorded in
# $FLINK_RUN_DIR/*.pid is signalled only if that process still runs a Flink entry point for this run dir
# (so a recycled pid is never touched). TERM first, KILL after FLINK_STOP_TIMEOUT seconds (default 15).
# Usage: stop-cluster.sh [name ...]   (default: every process of the run dir, e.g. taskmanager-2)
set -euo pipefail
source "$(dirname "$0")/common.sh"
shopt -s nullglob
if [ $# -gt 0 ]; then
    pid_files=(); for n in "$@"; do pid_files+=("$FLINK_RUN_DIR/$n.pid"); done
else
    pid_files=("$FLINK_RUN_DIR"/*.pid)
fi
stopping=()
for pid_file in "${pid_files[@]}"; do
    [ -f "$pid_file" ] || continue
    name="$(basename "$pid_file" .pid)"; pid="$(cat "$pid_file")"
    main="$TASKMANAGER_MAIN"; [ "$name" = jobmanager ] && main="$JOBMANAGER_MAIN"
    if is_ours "$pid" "$main"; then
        echo "Stopping $name (pid $pid)"
        kill -TERM "$pid" 2>/dev/null || true
        stopping+=("$pid:$name:$pid_file")
    else
        echo "$name (pid $pid) is not running"
        rm -f "$pid_file"
    fi
done
deadline=$((SECONDS + ${FLINK_STOP_TIMEOUT:-15}))
for entry in "${stopping[@]}"; do
    IFS=: read -r pid name pid_file <<< "$entry"
    main="$TASKMANAGER_MAIN"; [ "$name" = jobmanager ] && main="$JOBMANAGER_MAIN"
    while is_ours "$pid" "$main" && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
    if is_ours "$pid" "$main"; then
        echo "$name (pid $pid) did not stop in time: KILL"
        kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$pid_file"
done
# Native libraries that ONNX Runtime unpacked into the per-process tmp dirs.
rm -rf "$FLINK_RUN_DIR"/tmp/*/onnxruntime-java* 2>/dev/null || true
