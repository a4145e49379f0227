package io.flinkgpu.job;

/** A raw record from the requests topic, with where it came from (for dead letters). */
public record KafkaRecord(String topic, int partition, long offset, byte[] key, byte[] value) {}
