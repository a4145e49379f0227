#!/usr/bin/env bash
# Runs the benchmark like `mvn -pl benchmarks exec:exec`, but from a snapshot of the project's own
# jars (gpu-operator-udf, flink-job), so that a `mvn install` elsewhere during a long run cannot
# replace a jar under the running JVM. Usage, from the repository root:
#   benchmarks/run.sh --mode=full --publish=docs/benchmarks
# BENCH_JAVA_OPTS adds JVM options, e.g. a flight recording of the run:
#   BENCH_JAVA_OPTS=-XX:StartFlightRecording=filename=bench.jfr,settings=profile benchmarks/run.sh ...
# BENCH_HEAP replaces the heap options (default -Xms2g -Xmx4g), e.g. BENCH_HEAP="-Xms8g -Xmx8g".
set -euo pipefail
cd "$(dirname "$0")/.."
if ! build_log=$(mvn -B -q -pl benchmarks compile dependency:build-classpath -Dmdep.outputFile=target/bench.classpath 2>&1); then
  printf '%s\n' "$build_log" | grep -E '\[ERROR\]' | head -5 >&2
  echo "run.sh: could not build the harness against the project's installed jars; install them first (once, and" >&2
  echo "after they change): mvn -B -q install -DskipTests -pl benchmarks -am" >&2
  exit 1
fi
snapshot=benchmarks/target/bench-lib
rm -rf "$snapshot" && mkdir -p "$snapshot"
cp=""
IFS=":" read -ra entries < benchmarks/target/bench.classpath || true  # no trailing newline
for e in "${entries[@]}"; do
  case "$e" in
    */io/flinkgpu/*) cp "$e" "$snapshot/" && e="$snapshot/$(basename "$e")" ;;
  esac
  cp="$cp:$e"
done
cp -r benchmarks/target/classes "$snapshot/classes"
# shellcheck disable=SC2086 # BENCH_JAVA_OPTS and BENCH_HEAP are lists of options
exec java ${BENCH_JAVA_OPTS:-} ${BENCH_HEAP:--Xms2g -Xmx4g} -Xlog:gc:file=benchmarks/target/bench-gc.log -Djava.awt.headless=true \
  -cp "$snapshot/classes$cp" io.flinkgpu.bench.BenchmarkMain "$@"
