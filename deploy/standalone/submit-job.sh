#!/usr/bin/env bash
# Submits a job jar through Flink's REST API, as the web UI does: POST /jars/upload, then POST /jars/<id>/run.
# Usage: submit-job.sh [-r http://localhost:8081] [-c main.Class] [-p parallelism] [-s savepoint] <jar> [--key value ...]
# Program arguments follow the jar, e.g. --inference.kafka.bootstrap-servers localhost:9092. Prints the job id.
set -euo pipefail
rest="http://localhost:8081"; entry=""; parallelism=""; savepoint=""
while getopts "r:c:p:s:" opt; do
    case "$opt" in
        r) rest="$OPTARG" ;; c) entry="$OPTARG" ;; p) parallelism="$OPTARG" ;; s) savepoint="$OPTARG" ;;
        *) exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { echo "usage: $0 [-r rest-url] [-c class] [-p parallelism] [-s savepoint] <jar> [args...]" >&2; exit 2; }
jar="$1"; shift
json_string() { local s="${1//\\/\\\\}"; s="${s//\"/\\\"}"; printf '"%s"' "$s"; }

upload="$(curl -fsS -X POST -H "Expect:" -F "jarfile=@$jar" "$rest/jars/upload")"
jar_id="$(printf '%s' "$upload" | sed -n 's/.*"filename":"[^"]*\/\([^"/]*\)".*/\1/p')"
[ -n "$jar_id" ] || { echo "upload failed: $upload" >&2; exit 1; }

args="["; sep=""
for a in "$@"; do args+="$sep$(json_string "$a")"; sep=","; done
args+="]"
body="{\"programArgsList\":$args"
[ -n "$entry" ] && body+=",\"entryClass\":$(json_string "$entry")"
[ -n "$parallelism" ] && body+=",\"parallelism\":$parallelism"
[ -n "$savepoint" ] && body+=",\"savepointPath\":$(json_string "$savepoint")"
body+="}"
run="$(curl -fsS -X POST -H "Content-Type: application/json" -d "$body" "$rest/jars/$jar_id/run")"
job_id="$(printf '%s' "$run" | sed -n 's/.*"jobid":"\([0-9a-f]*\)".*/\1/p')"
[ -n "$job_id" ] || { echo "run failed: $run" >&2; exit 1; }
echo "$job_id"
