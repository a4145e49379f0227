package io.flinkgpu.job;

import org.apache.flink.api.common.functions.Partitioner;

/**
 * Routes requests for the same model to the same inference subtask, so that each subtask loads
 * only the models it serves and batches fill. (Load-weighted routing from the coordinator's
 * routing table replaces this when it exists.)
 */
public class ModelPartitioner implements Partitioner<String> {
    private static final long serialVersionUID = 1L;

    @Override
    public int partition(String model, int numPartitions) {
        return Math.floorMod(model.hashCode(), numPartitions);
    }
}
