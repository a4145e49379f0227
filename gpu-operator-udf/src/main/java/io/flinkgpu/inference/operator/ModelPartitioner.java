package io.flinkgpu.inference.operator;

import org.apache.flink.api.common.functions.Partitioner;

/**
 * Routes requests for the same model to the same inference subtask, so that each subtask loads
 * only the models it serves and batches fill. With a control topic configured, {@link PlanRouter}
 * routes by the coordinator's plan instead and falls back to this hash.
 */
public class ModelPartitioner implements Partitioner<String> {
    private static final long serialVersionUID = 1L;

    @Override
    public int partition(String model, int numPartitions) {
        return hash(model, numPartitions);
    }

    /** The default subtask of {@code model}: also {@link PlanRouter}'s fallback when a plan does not route it. */
    public static int hash(String model, int numPartitions) {
        return Math.floorMod(model.hashCode(), numPartitions);
    }
}
