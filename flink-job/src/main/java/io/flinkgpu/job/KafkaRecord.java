package io.flinkgpu.job;

/**
 * A raw record from a requests topic, with where it came from (for dead letters) and its tenant
 * headers ({@link TenantBinding#TENANT_HEADER}, {@link TenantBinding#SIGNATURE_HEADER}; null when absent).
 */
public record KafkaRecord(String topic, int partition, long offset, byte[] key, byte[] value, String tenantHeader,
        String tenantSignature) {
    public KafkaRecord(String topic, int partition, long offset, byte[] key, byte[] value) {
        this(topic, partition, offset, key, value, null, null);
    }
}
