package io.flinkgpu.coordinator.collect;

/** Where the loop's metrics come from: Flink's REST API, or a fixture in tests. */
public interface MetricSource {
    MetricSnapshot collect() throws CollectException;

    /** Metrics could not be read (no job, REST unreachable); the cycle is skipped with this reason. */
    class CollectException extends Exception {
        private static final long serialVersionUID = 1L;

        public CollectException(String message) {
            super(message);
        }

        public CollectException(String message, Throwable cause) {
            super(message, cause);
        }
    }
}
