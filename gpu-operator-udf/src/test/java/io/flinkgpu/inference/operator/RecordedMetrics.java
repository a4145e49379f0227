package io.flinkgpu.inference.operator;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.flink.api.common.JobID;
import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.Gauge;
import org.apache.flink.metrics.Metric;
import org.apache.flink.runtime.clusterframework.types.ResourceID;
import org.apache.flink.runtime.executiongraph.ExecutionAttemptID;
import org.apache.flink.runtime.metrics.groups.TaskManagerMetricGroup;
import org.apache.flink.runtime.metrics.util.TestingMetricRegistry;
import org.apache.flink.runtime.operators.testutils.MockEnvironment;
import org.apache.flink.runtime.operators.testutils.MockEnvironmentBuilder;

/**
 * The metrics an operator under a test harness registers, by identifier: the harness runs in
 * {@link #environment}, one subtask (index 0) of parallelism 1, whose task metric group records them.
 */
final class RecordedMetrics {
    private final Map<String, Metric> metrics = new ConcurrentHashMap<>();

    /** An environment for a harness whose operator's metrics this records. */
    MockEnvironment environment(String taskName) {
        TestingMetricRegistry registry = TestingMetricRegistry.builder().setDelimiter('.')
                .setRegisterConsumer((metric, name, group) -> metrics.put(group.getMetricIdentifier(name), metric))
                .build();
        var task = TaskManagerMetricGroup.createTaskManagerMetricGroup(registry, "host", ResourceID.generate())
                .addJob(new JobID(), "job").addTask(ExecutionAttemptID.randomId(), taskName);
        return new MockEnvironmentBuilder().setTaskName(taskName).setMaxParallelism(1).setParallelism(1)
                .setSubtaskIndex(0).setMetricGroup(task).build();
    }

    /** The value of the gauge whose identifier ends with {@code suffix}, or null while there is none. */
    Number gauge(String suffix) {
        Metric m = find(suffix);
        return m == null ? null : (Number) ((Gauge<?>) m).getValue();
    }

    /** The count of the counter whose identifier ends with {@code suffix}, or null while there is none. */
    Long count(String suffix) {
        Metric m = find(suffix);
        return m == null ? null : ((Counter) m).getCount();
    }

    private Metric find(String suffix) {
        return metrics.entrySet().stream().filter(e -> e.getKey().endsWith(suffix)).map(Map.Entry::getValue)
                .findFirst().orElse(null);
    }
}
