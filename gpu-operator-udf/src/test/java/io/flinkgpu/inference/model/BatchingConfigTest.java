package io.flinkgpu.inference.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.core.JsonProcessingException;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

class BatchingConfigTest {
    private static final BatchingConfig DEFAULTS = new BatchingConfig(16, Duration.ofMillis(2), List.of(4, 8), 3);

    private static BatchingConfig block(String json) throws JsonProcessingException {
        return ModelRepository.CONFIG_MAPPER.readValue(json, BatchingConfig.class);
    }

    @Test
    void aModelsBlockSetsOnlyWhatItNames() throws Exception {
        BatchingConfig own = block("{\"max_queue_delay_ms\": 1.5, \"preferred_batch_sizes\": [8, 2]}");

        assertThat(own.maxBatchSize()).as("the model's max_batch_size sits outside the block").isNull();
        assertThat(own.maxQueueDelay()).isEqualTo(Duration.ofNanos(1_500_000));
        assertThat(own.preferredBatchSizes()).containsExactly(2, 8);
        assertThat(own.maxEnqueuedBatches()).isNull();
        assertThat(own.isComplete()).isFalse();
        assertThat(block("{}")).isEqualTo(BatchingConfig.UNSET);
    }

    @Test
    void aModelsBlockIsCheckedWhenRead() {
        assertThatThrownBy(() -> block("{\"max_queue_delay_ms\": -1}")).hasMessageContaining("max_queue_delay_ms");
        assertThatThrownBy(() -> block("{\"max_enqueued_batches\": 0}")).hasMessageContaining("max_enqueued_batches");
        assertThatThrownBy(() -> block("{\"preferred_batch_sizes\": [0]}")).hasMessageContaining("preferred_batch_sizes");
        assertThatThrownBy(() -> block("{\"maxBatchSize\": 4}")).as("only the block's own keys")
                .isInstanceOf(JsonProcessingException.class);
        assertThatThrownBy(() -> block("{\"max_batch_size\": 4}")).isInstanceOf(JsonProcessingException.class);
    }

    @Test
    void resolvingTakesTheBlocksValuesOverTheDefaultsAndCapsThePreferredSizes() throws Exception {
        BatchingConfig unset = BatchingConfig.UNSET.resolve(8, DEFAULTS);
        assertThat(unset).isEqualTo(new BatchingConfig(8, Duration.ofMillis(2), List.of(4, 8), 3));
        assertThat(unset.isComplete()).isTrue();
        assertThat(unset.queueCapacity()).isEqualTo(24);

        BatchingConfig own = block("{\"max_queue_delay_ms\": 0, \"preferred_batch_sizes\": [2, 32],"
                + " \"max_enqueued_batches\": 5}").resolve(16, DEFAULTS);
        assertThat(own).isEqualTo(new BatchingConfig(16, Duration.ZERO, List.of(2), 5));

        assertThatThrownBy(() -> BatchingConfig.UNSET.resolve(8, BatchingConfig.UNSET))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void preferredSizesMustFitTheMaxBatchSize() {
        assertThatThrownBy(() -> new BatchingConfig(4, Duration.ZERO, List.of(8), 1))
                .hasMessageContaining("outside 1..4");
        assertThat(new BatchingConfig(8, Duration.ZERO, null, 1).preferredBatchSizes()).isEmpty();
    }
}
