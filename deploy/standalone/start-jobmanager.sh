#!/usr/bin/env bash
# Starts the JobManager (StandaloneSessionClusterEntrypoint: dispatcher, resource manager, REST API and web UI).
# Usage: start-jobmanager.sh [-Dkey=value ...]     (see common.sh for the environment variables)
set -euo pipefail
source "$(dirname "$0")/common.sh"
parse_dynamic "$@"
resource_params GET_JM_RESOURCE_PARAMS "${DYNAMIC[@]}"
# shellcheck disable=SC2086
start_process jobmanager "$JOBMANAGER_MAIN" "$RESOURCE_JVM_ARGS" $RESOURCE_DYNAMIC_PROPERTIES "${DYNAMIC[@]}"
