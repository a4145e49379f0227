#!/usr/bin/env bash
# Starts a Flink session cluster on this machine as separate JVMs: one JobManager and N TaskManagers, from the
# jars Maven resolves (deploy/standalone/pom.xml) and the configuration in deploy/conf (FLINK_CONF_DIR), then
# waits until all TaskManagers have registered.
#
# Usage: deploy/standalone/start-cluster.sh [-n N] [-Dkey=value ...]
#   -n N          TaskManagers to start (default 2)
#   -Dkey=value   Flink options for every process, e.g. -Drest.port=18081 -Dtaskmanager.numberOfTaskSlots=4
# Stop it with deploy/standalone/stop-cluster.sh (same FLINK_RUN_DIR).
set -euo pipefail
source "$(dirname "$0")/common.sh"
taskmanagers=2
if [ "${1:-}" = "-n" ]; then taskmanagers="$2"; shift 2; fi
parse_dynamic "$@"

rest_port="$(printf '%s\n' "${DYNAMIC[@]}" | sed -n 's/^rest\.port=//p' | tail -1)"
[ -n "$rest_port" ] || rest_port="$(sed -n 's/^rest\.port:[[:space:]]*//p' "$FLINK_CONF_DIR/config.yaml" | tail -1)"
rest="http://localhost:${rest_port:-8081}"

cluster_classpath_args > /dev/null
"$STANDALONE_DIR/start-jobmanager.sh" "${DYNAMIC[@]}"
pids=()
for i in $(seq 1 "$taskmanagers"); do
    "$STANDALONE_DIR/start-taskmanager.sh" "$i" "${DYNAMIC[@]}" &
    pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || die "a TaskManager did not start"; done

echo "Waiting for $taskmanagers TaskManager(s) at $rest ..."
deadline=$((SECONDS + ${FLINK_START_TIMEOUT:-120}))
while [ $SECONDS -lt $deadline ]; do
    registered="$(curl -fsS "$rest/overview" 2>/dev/null | sed -n 's/.*"taskmanagers":\([0-9]*\).*/\1/p' || true)"
    if [ "${registered:-0}" -ge "$taskmanagers" ]; then
        echo "Cluster up: web UI $rest, $registered TaskManager(s). Run dir $FLINK_RUN_DIR"
        exit 0
    fi
    for pid_file in "$FLINK_RUN_DIR"/*.pid; do
        kill -0 "$(cat "$pid_file")" 2>/dev/null || die "$(basename "$pid_file" .pid) exited; see $FLINK_RUN_DIR/log/"
    done
    sleep 1
done
die "the cluster did not come up within ${FLINK_START_TIMEOUT:-120} s; see $FLINK_RUN_DIR/log/"
