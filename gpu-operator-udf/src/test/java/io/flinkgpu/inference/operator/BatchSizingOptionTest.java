package io.flinkgpu.inference.operator;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.flinkgpu.inference.qos.BatchSizing;
import io.flinkgpu.inference.qos.SchedulingConfig;
import java.util.Map;
import org.apache.flink.configuration.Configuration;
import org.junit.jupiter.api.Test;

/** inference.batching.batch-sizing: the batch sizing of models whose scheduling block does not set one. */
class BatchSizingOptionTest {
    private final ObjectMapper mapper = new ObjectMapper();

    private static InferenceSettings settings(Map<String, String> options) {
        return GpuInference.builder().configuration(Configuration.fromMap(options)).build().settings();
    }

    @Test
    void fixedDelayUnlessTheOptionSaysOtherwise() {
        assertThat(InferenceSettings.fromConfiguration(new Configuration()).batchSizing())
                .isEqualTo(BatchSizing.FIXED_DELAY);
        assertThat(settings(Map.of("inference.batching.batch-sizing", "SLO_AWARE")).batchSizing())
                .isEqualTo(BatchSizing.SLO_AWARE);
        assertThat(SchedulingConfig.DEFAULTS.batchSizing()).isEqualTo(BatchSizing.FIXED_DELAY);
        assertThat(SchedulingConfig.DEFAULTS.setsBatchSizing()).isFalse();
    }

    @Test
    void theModelsOwnBatchSizingWinsAndTheOptionFillsTheRest() throws Exception {
        SchedulingConfig unset = mapper.readValue("{\"priority_levels\": 2, \"slo_ms\": 130}", SchedulingConfig.class);
        SchedulingConfig fixed = mapper.readValue("{\"batch_sizing\": \"FIXED_DELAY\"}", SchedulingConfig.class);
        SchedulingConfig aimd = mapper.readValue("{\"batch_sizing\": \"AIMD\", \"slo_ms\": 50}", SchedulingConfig.class);

        assertThat(unset.setsBatchSizing()).isFalse();
        assertThat(unset.batchSizing()).isEqualTo(BatchSizing.FIXED_DELAY);
        SchedulingConfig resolved = unset.withBatchSizingDefault(BatchSizing.SLO_AWARE);
        assertThat(resolved.batchSizing()).isEqualTo(BatchSizing.SLO_AWARE);
        assertThat(resolved.priorityLevels()).isEqualTo(2);
        assertThat(resolved.sloMs()).isEqualTo(130);
        assertThat(fixed.withBatchSizingDefault(BatchSizing.SLO_AWARE).batchSizing()).isEqualTo(BatchSizing.FIXED_DELAY);
        assertThat(aimd.withBatchSizingDefault(BatchSizing.SLO_AWARE)).isSameAs(aimd);
        assertThat(SchedulingConfig.DEFAULTS.withBatchSizingDefault(BatchSizing.AIMD).batchSizing())
                .isEqualTo(BatchSizing.AIMD);

        // written back out, a block says what it runs with
        assertThat(mapper.readTree(mapper.writeValueAsString(unset)).get("batch_sizing").asText())
                .isEqualTo("FIXED_DELAY");
    }
}
