package io.flinkgpu.job.local;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.test.KafkaClusterTestKit;
import org.apache.kafka.common.test.TestKitNodes;

/** A single-node Kafka (KRaft, combined broker and controller) running inside this JVM. */
public final class EmbeddedKafka implements AutoCloseable {
    private final KafkaClusterTestKit cluster;

    private EmbeddedKafka(KafkaClusterTestKit cluster) {
        this.cluster = cluster;
    }

    public static EmbeddedKafka start() throws Exception {
        return new EmbeddedKafka(startCluster(new TestKitNodes.Builder()
                .setCombined(true)
                .setNumBrokerNodes(1)
                .setNumControllerNodes(1)
                .build(), Map.of()));
    }

    /**
     * Formats and starts a test-kit cluster of {@code nodes} with the single-node settings every
     * in-process broker here needs (replication factors 1, no group rebalance delay, 16 MiB
     * records) plus {@code extra} (e.g. SASL and an authorizer), and waits for its brokers.
     */
    public static KafkaClusterTestKit startCluster(TestKitNodes nodes, Map<String, String> extra) throws Exception {
        KafkaClusterTestKit.Builder builder = new KafkaClusterTestKit.Builder(nodes)
                .setConfigProp("offsets.topic.replication.factor", "1")
                .setConfigProp("transaction.state.log.replication.factor", "1")
                .setConfigProp("transaction.state.log.min.isr", "1")
                .setConfigProp("group.initial.rebalance.delay.ms", "0")
                .setConfigProp("message.max.bytes", String.valueOf(16 * 1024 * 1024));
        extra.forEach(builder::setConfigProp);
        KafkaClusterTestKit cluster = builder.build();
        java.io.PrintStream stdout = System.out;
        try {
            // Formatting prints its bootstrap metadata to stdout; keep the console for the summary.
            System.setOut(new java.io.PrintStream(java.io.OutputStream.nullOutputStream()));
            try {
                cluster.format();
            } finally {
                System.setOut(stdout);
            }
            cluster.startup();
            cluster.waitForReadyBrokers();
        } catch (Exception e) {
            cluster.close();
            throw e;
        }
        return cluster;
    }

    public String bootstrapServers() {
        return cluster.bootstrapServers();
    }

    /**
     * Topic settings that bound what a topic keeps on disk to its last 256 MiB per partition (in
     * 32 MiB segments; the broker drops the oldest closed segment once over it, checked every five
     * minutes). For topics a long-running local job writes without end: at 200 requests a second
     * of 28x28 images that is about 13 minutes of records per partition, far more than any consumer
     * of the local job lags, where unbounded topics would fill the disk by some gigabytes an hour.
     */
    public static final Map<String, String> BOUNDED_RETENTION = Map.of(
            "retention.bytes", String.valueOf(256L * 1024 * 1024),
            "segment.bytes", String.valueOf(32 * 1024 * 1024));

    public void createTopics(int partitions, String... topics) throws Exception {
        createTopics(partitions, Map.of(), topics);
    }

    /**
     * Creates {@code topics} with {@code partitions} each and the topic-level settings
     * {@code topicConfig}, and returns once the broker describes every one of them: the controller
     * commits a creation before the broker's metadata has it, and a client that asks in between
     * is told the topic does not exist.
     */
    public void createTopics(int partitions, Map<String, String> topicConfig, String... topics) throws Exception {
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers()))) {
            List<NewTopic> newTopics = new ArrayList<>();
            for (String t : topics) {
                newTopics.add(new NewTopic(t, partitions, (short) 1).configs(topicConfig));
            }
            admin.createTopics(newTopics).all().get(30, TimeUnit.SECONDS);
            awaitBroker("topics not described 30 s after their creation: " + List.of(topics), () -> {
                try {
                    admin.describeTopics(List.of(topics)).allTopicNames().get(30, TimeUnit.SECONDS);
                    return true;
                } catch (java.util.concurrent.ExecutionException e) {
                    if (e.getCause() instanceof org.apache.kafka.common.errors.UnknownTopicOrPartitionException) {
                        return false;
                    }
                    throw e;
                }
            });
        }
    }

    /**
     * Polls {@code done} until it holds, for at most 30 s: the controller commits a creation or a
     * deletion before the broker's metadata, which clients read, follows it.
     */
    private static void awaitBroker(String failure, java.util.concurrent.Callable<Boolean> done) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!done.call()) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException(failure);
            }
            Thread.sleep(50);
        }
    }

    /**
     * Deletes {@code topics} and their log files: a benchmark that writes tens of thousands of
     * records a second for an hour would otherwise fill the disk with topics nobody reads again.
     * Returns once the broker no longer lists them.
     */
    public void deleteTopics(String... topics) throws Exception {
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers()))) {
            admin.deleteTopics(List.of(topics)).all().get(30, TimeUnit.SECONDS);
            awaitBroker("topics still listed 30 s after their deletion: " + List.of(topics), () ->
                    java.util.Collections.disjoint(admin.listTopics().names().get(30, TimeUnit.SECONDS),
                            List.of(topics)));
        }
    }

    /** Names of the topics this broker has (internal ones left out). */
    public java.util.Set<String> topicNames() throws Exception {
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers()))) {
            return admin.listTopics().names().get(30, TimeUnit.SECONDS);
        }
    }

    /** Client properties pointing at this broker. */
    public Properties clientProperties() {
        Properties p = new Properties();
        p.setProperty("bootstrap.servers", bootstrapServers());
        return p;
    }

    @Override
    public void close() throws Exception {
        cluster.close();
    }
}
