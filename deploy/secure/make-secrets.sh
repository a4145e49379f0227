#!/usr/bin/env bash
# Creates the secrets of a secured deployment (see docs/SECURITY.md, "A secured deployment") in one directory
# that only its owner can read. Existing files are kept, so it can be re-run, and a platform team may put its own
# files there first (e.g. the Kafka passwords its broker knows).
#
# Usage: deploy/secure/make-secrets.sh [DIR]        (default deploy/secure/target/secrets)
# Environment: ADMIN_HOSTNAME  host name in the admin API's certificate (default localhost)
#
# DIR/plan-signing.key              HMAC key of the control plane (coordinator signs, jobs verify)
# DIR/admin.token, DIR/read.token   the coordinator admin API's admin and read-only bearer tokens
# DIR/admin-keystore.p12            the admin API's TLS key and self-signed certificate (PKCS12)
# DIR/admin-keystore.password       its password
# DIR/admin-cert.pem                the certificate, for clients (coordinator api --cacert, Prometheus ca_file)
# DIR/kafka-job.properties          password=<the job's Kafka password>, read by Kafka's FileConfigProvider
# DIR/kafka-coordinator.properties  password=<the coordinator's Kafka password>
set -euo pipefail
dir="${1:-$(cd "$(dirname "$0")" && pwd)/target/secrets}"
umask 077
mkdir -p "$dir"
chmod 700 "$dir"
keytool="${JAVA_HOME:+$JAVA_HOME/bin/}keytool"

# 32 random bytes, URL-safe base64 without padding: 43 characters, a valid HMAC key, token or password
random() { head -c 32 /dev/urandom | base64 | tr -d '\n=' | tr '+/' '-_'; }

secret() {
    if [ ! -s "$dir/$1" ]; then
        random > "$dir/$1"
        echo "created $dir/$1"
    fi
}

kafka_password() {
    if [ ! -s "$dir/$1" ]; then
        printf 'password=%s\n' "$(random)" > "$dir/$1"
        echo "created $dir/$1 (register this password for the user on the broker)"
    fi
}

secret plan-signing.key
secret admin.token
secret read.token
secret admin-keystore.password
kafka_password kafka-job.properties
kafka_password kafka-coordinator.properties

if [ ! -s "$dir/admin-keystore.p12" ]; then
    host="${ADMIN_HOSTNAME:-localhost}"
    "$keytool" -genkeypair -alias coordinator -keyalg EC -groupname secp256r1 -dname "CN=$host" \
        -ext "SAN=dns:$host,ip:127.0.0.1" -validity 365 -storetype PKCS12 \
        -keystore "$dir/admin-keystore.p12" -storepass:file "$dir/admin-keystore.password" 2> /dev/null
    "$keytool" -exportcert -rfc -alias coordinator -keystore "$dir/admin-keystore.p12" \
        -storepass:file "$dir/admin-keystore.password" -file "$dir/admin-cert.pem" 2> /dev/null
    echo "created $dir/admin-keystore.p12 and $dir/admin-cert.pem (CN=$host)"
fi
