#!/usr/bin/env bash
# Builds the simulator with the modules it uses (in the reactor, nothing installed) and runs it from
# the repository root; arguments go to io.flinkgpu.sim.SimulationMain (--help lists them).
set -euo pipefail
cd "$(dirname "$0")/.."
mvn -q -B -pl fleet-simulator -am package -DskipTests dependency:build-classpath \
    -Dmdep.outputFile=target/classpath.txt -Dmdep.includeScope=runtime
exec java -Xmx3g -Djava.awt.headless=true \
    -cp "fleet-simulator/target/classes:$(cat fleet-simulator/target/classpath.txt)" \
    io.flinkgpu.sim.SimulationMain "$@"
