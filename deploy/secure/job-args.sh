#!/usr/bin/env bash
# Prints the program arguments of the inference job in a secured deployment, one per line, for
# deploy/standalone/submit-job.sh (or flink run):
#
#   mapfile -t args < <(deploy/secure/job-args.sh deploy/secure/target/secrets)
#   deploy/standalone/submit-job.sh flink-job/target/flink-job-*-job.jar "${args[@]}"
#
# Secrets stay in DIR (deploy/secure/make-secrets.sh): the arguments hold only references to its files, which must
# be readable by the JobManager and every TaskManager (and the submitting process) at the same path.
#
# Environment (defaults in brackets):
#   KAFKA_BOOTSTRAP          [localhost:9093]     the broker's SASL listener
#   KAFKA_SECURITY_PROTOCOL  [SASL_SSL]           SASL_PLAINTEXT only where the network is trusted
#   KAFKA_SASL_MECHANISM     [SCRAM-SHA-512]      or PLAIN
#   KAFKA_TRUSTSTORE         []                   ssl.truststore.location for SASL_SSL, if the JVM's default does not do
#   JOB_KAFKA_USER           [inference-job]
#   CONTROL_TOPIC            [inference-control]
#   PLAN_KEY_ID              [plan-1]             the key id the coordinator signs under
#   TENANT_TOPICS            [shop-requests=shop] request topic=tenant pairs, space separated (TOPIC binding)
#   REQUESTS_TOPIC, RESPONSES_TOPIC, DEAD_LETTER_TOPIC, GROUP_ID   [the job's defaults]
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 SECRETS_DIR" >&2; exit 2; }
dir="$(cd "$1" && pwd)"
[ -s "$dir/plan-signing.key" ] && [ -s "$dir/kafka-job.properties" ] \
    || { echo "$0: no secrets in $dir (run deploy/secure/make-secrets.sh $1)" >&2; exit 1; }
mechanism="${KAFKA_SASL_MECHANISM:-SCRAM-SHA-512}"
case "$mechanism" in
    PLAIN) module=org.apache.kafka.common.security.plain.PlainLoginModule ;;
    SCRAM-SHA-256|SCRAM-SHA-512) module=org.apache.kafka.common.security.scram.ScramLoginModule ;;
    *) echo "$0: unsupported KAFKA_SASL_MECHANISM $mechanism" >&2; exit 2 ;;
esac
p=--inference.kafka.properties.
arg() { printf '%s\n' "$1" "$2"; }

arg --inference.kafka.bootstrap-servers "${KAFKA_BOOTSTRAP:-localhost:9093}"
[ -n "${REQUESTS_TOPIC:-}" ] && arg --inference.kafka.requests-topic "$REQUESTS_TOPIC"
[ -n "${RESPONSES_TOPIC:-}" ] && arg --inference.kafka.responses-topic "$RESPONSES_TOPIC"
[ -n "${DEAD_LETTER_TOPIC:-}" ] && arg --inference.kafka.dead-letter-topic "$DEAD_LETTER_TOPIC"
[ -n "${GROUP_ID:-}" ] && arg --inference.kafka.group-id "$GROUP_ID"
# Kafka: authenticated clients, the password read by Kafka's FileConfigProvider where each client runs
arg "${p}security.protocol" "${KAFKA_SECURITY_PROTOCOL:-SASL_SSL}"
arg "${p}sasl.mechanism" "$mechanism"
arg "${p}config.providers" file
arg "${p}config.providers.file.class" org.apache.kafka.common.config.provider.FileConfigProvider
arg "${p}config.providers.file.param.allowed.paths" "$dir"
arg "${p}sasl.jaas.config" \
    "$module required username=\"${JOB_KAFKA_USER:-inference-job}\" password=\"\${file:$dir/kafka-job.properties:password}\";"
[ -n "${KAFKA_TRUSTSTORE:-}" ] && arg "${p}ssl.truststore.location" "$KAFKA_TRUSTSTORE"
# the control plane: only plans signed with the coordinator's key
arg --inference.kafka.control-topic "${CONTROL_TOPIC:-inference-control}"
arg "--inference.control.verify-keys.${PLAN_KEY_ID:-plan-1}" "file:$dir/plan-signing.key"
# tenants: the request topic decides, Kafka ACLs decide who writes each topic
arg --inference.tenant.binding TOPIC
for pair in ${TENANT_TOPICS:-shop-requests=shop}; do
    arg "--inference.tenant.topics.${pair%%=*}" "${pair#*=}"
done
