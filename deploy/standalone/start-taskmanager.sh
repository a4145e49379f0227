#!/usr/bin/env bash
# Starts one TaskManager (TaskManagerRunner) that registers with the JobManager of the configuration.
# Usage: start-taskmanager.sh <index> [-Dkey=value ...]
# The index names the process (taskmanager-<index>: pid file, log, resource id shown in the web UI).
set -euo pipefail
source "$(dirname "$0")/common.sh"
[ $# -ge 1 ] || die "usage: start-taskmanager.sh <index> [-Dkey=value ...]"
index="$1"; shift
parse_dynamic "$@"
resource_params GET_TM_RESOURCE_PARAMS "${DYNAMIC[@]}"
# shellcheck disable=SC2086
start_process "taskmanager-$index" "$TASKMANAGER_MAIN" "$RESOURCE_JVM_ARGS" $RESOURCE_DYNAMIC_PROPERTIES \
    -D "taskmanager.resource-id=taskmanager-$index" "${DYNAMIC[@]}"
