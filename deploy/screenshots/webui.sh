#!/usr/bin/env bash
# Screenshots of the Flink web UI with the inference job and its metrics, for docs/images/.
# Starts the embedded local default, drives Debian's headless Chromium with playwright-core
# (from npm, installed into a temporary directory), then stops everything it started.
#   deploy/screenshots/webui.sh [output dir]     (needs: apt-get install chromium nodejs npm)
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-docs/images}
port=${WEB_PORT:-8081}
mkdir -p "$out"
tools=$(mktemp -d)
(cd "$tools" && npm init -y > /dev/null && npm install --silent playwright-core@1 > /dev/null)
cp deploy/screenshots/webui.mjs "$tools/"
mvn -q -B install -DskipTests -pl flink-job -am
mvn -q -B -pl flink-job exec:exec -Dlocal.args="--duration=120 --web-port=$port --prometheus-port=0" \
    > "$tools/local.log" 2>&1 &
local_pid=$!
trap 'kill $local_pid 2> /dev/null || true; rm -rf "$tools"' EXIT
for _ in $(seq 1 120); do
    if curl -sf "http://localhost:$port/jobs" | grep -q RUNNING; then break; fi
    sleep 1
done
sleep 25 # let traffic flow so the metrics have values
node "$tools/webui.mjs" "http://localhost:$port" "$(realpath "$out")"
