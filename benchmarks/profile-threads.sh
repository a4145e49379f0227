#!/usr/bin/env bash
# Samples per-thread CPU time (utime+stime, clock ticks) of the running benchmark JVM every
# INTERVAL seconds, so CPU can be attributed to Kafka broker, Flink task, ONNX Runtime and
# load-generator threads for any time range of a run:
#   benchmarks/profile-threads.sh [INTERVAL] > benchmarks/target/threads.tsv
# Output: epoch seconds, thread id, thread name (15 chars, as Linux keeps it), cumulative ticks.
set -euo pipefail
interval=${1:-5}
pid=$(pgrep -f 'io.flinkgpu.bench.BenchmarkMain' | head -1)
while kill -0 "$pid" 2>/dev/null; do
  now=$(date +%s)
  for t in /proc/"$pid"/task/*; do
    # fields 14 and 15 of stat are utime and stime; the name may contain spaces, so cut after ')'
    stat=$(cat "$t/stat" 2>/dev/null) || continue
    rest=${stat##*) }
    set -- $rest
    printf '%s\t%s\t%s\t%s\n' "$now" "${t##*/}" "$(cat "$t/comm" 2>/dev/null)" $(( ${12} + ${13} ))
  done
  sleep "$interval"
done
