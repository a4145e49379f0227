#!/usr/bin/env bash
# Writes the scheduler coordinator's config.yaml for a secured deployment into OUT_DIR, for
#
#   java -cp ... io.flinkgpu.coordinator.service.CoordinatorMain run --config-dir OUT_DIR
#
# The file holds references to the secrets in SECRETS_DIR (deploy/secure/make-secrets.sh), never a secret: the
# coordinator signs plans with plan-signing.key, authenticates to Kafka with kafka-coordinator.properties, and
# serves its admin API over HTTPS with the admin and read tokens.
#
# Usage: deploy/secure/coordinator-config.sh SECRETS_DIR OUT_DIR
# Environment (defaults in brackets): KAFKA_BOOTSTRAP [localhost:9093], KAFKA_SECURITY_PROTOCOL [SASL_SSL],
#   KAFKA_SASL_MECHANISM [SCRAM-SHA-512], KAFKA_TRUSTSTORE [], COORDINATOR_KAFKA_USER [scheduler-coordinator],
#   CONTROL_TOPIC [inference-control], PLAN_KEY_ID [plan-1], FLINK_REST [http://localhost:8081],
#   ADMIN_BIND [127.0.0.1], ADMIN_PORT [8090], STATE_DIR [OUT_DIR/state]
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 SECRETS_DIR OUT_DIR" >&2; exit 2; }
dir="$(cd "$1" && pwd)"
[ -s "$dir/plan-signing.key" ] && [ -s "$dir/admin-keystore.p12" ] \
    || { echo "$0: no secrets in $dir (run deploy/secure/make-secrets.sh $1)" >&2; exit 1; }
mkdir -p "$2"
out="$(cd "$2" && pwd)"
mechanism="${KAFKA_SASL_MECHANISM:-SCRAM-SHA-512}"
case "$mechanism" in
    PLAIN) module=org.apache.kafka.common.security.plain.PlainLoginModule ;;
    SCRAM-SHA-256|SCRAM-SHA-512) module=org.apache.kafka.common.security.scram.ScramLoginModule ;;
    *) echo "$0: unsupported KAFKA_SASL_MECHANISM $mechanism" >&2; exit 2 ;;
esac
{
    echo "# Written by deploy/secure/coordinator-config.sh; secrets are references to files in $dir."
    echo "coordinator.flink.rest-url: ${FLINK_REST:-http://localhost:8081}"
    echo "coordinator.kafka.bootstrap-servers: ${KAFKA_BOOTSTRAP:-localhost:9093}"
    echo "coordinator.kafka.control-topic: ${CONTROL_TOPIC:-inference-control}"
    echo "coordinator.kafka.properties.security.protocol: ${KAFKA_SECURITY_PROTOCOL:-SASL_SSL}"
    echo "coordinator.kafka.properties.sasl.mechanism: $mechanism"
    echo "coordinator.kafka.properties.config.providers: file"
    echo "coordinator.kafka.properties.config.providers.file.class: org.apache.kafka.common.config.provider.FileConfigProvider"
    echo "coordinator.kafka.properties.config.providers.file.param.allowed.paths: $dir"
    echo "coordinator.kafka.properties.sasl.jaas.config: '$module required username=\"${COORDINATOR_KAFKA_USER:-scheduler-coordinator}\" password=\"\${file:$dir/kafka-coordinator.properties:password}\";'"
    [ -n "${KAFKA_TRUSTSTORE:-}" ] && echo "coordinator.kafka.properties.ssl.truststore.location: $KAFKA_TRUSTSTORE"
    echo "coordinator.control.signing-key-id: ${PLAN_KEY_ID:-plan-1}"
    echo "coordinator.control.signing-key: file:$dir/plan-signing.key"
    echo "coordinator.admin.bind-address: ${ADMIN_BIND:-127.0.0.1}"
    echo "coordinator.admin.port: ${ADMIN_PORT:-8090}"
    echo "coordinator.admin.token: file:$dir/admin.token"
    echo "coordinator.admin.read-token: file:$dir/read.token"
    echo "coordinator.admin.tls.keystore: $dir/admin-keystore.p12"
    echo "coordinator.admin.tls.keystore-password: file:$dir/admin-keystore.password"
    echo "coordinator.state.dir: ${STATE_DIR:-$out/state}"
} > "$out/config.yaml"
echo "$out/config.yaml"
