package io.flinkgpu.coordinator.collect;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import java.util.stream.DoubleStream;
import org.junit.jupiter.api.Test;

class ModelSampleTest {

    @Test
    void theBuilderSetsEachReadingByNameAndLeavesTheRestUnreported() {
        ModelSample s = ModelSample.builder("m", "2").counts(10, 9, 3).queuedSamples(4).batchSizeMean(3.5)
                .inferenceLatencyUsMean(700).queueLatencyUsP99(900).latencyModel(200, 50)
                .tenantRequestsIn(Map.of("t", 6.0)).loaded(1).errors(2).inferenceLatencyUsP99(1100).batchCap(16)
                .serviceLatencyUsP99(1000).build();
        assertThat(s).isEqualTo(new ModelSample("m", "2", 10, 9, 3, 4, 3.5, 700, 900, 200, 50, Map.of("t", 6.0), 1, 2,
                1100, 16, 1000));

        ModelSample bare = ModelSample.builder("m", "1").build();
        assertThat(bare.model()).isEqualTo("m");
        assertThat(bare.version()).isEqualTo("1");
        assertThat(bare.tenantRequestsIn()).isEmpty();
        assertThat(DoubleStream.of(bare.requestsIn(), bare.responsesOut(), bare.batches(), bare.queuedSamples(),
                bare.batchSizeMean(), bare.inferenceLatencyUsMean(), bare.queueLatencyUsP99(), bare.latencyModelAlphaUs(),
                bare.latencyModelBetaUs(), bare.loaded(), bare.errors(), bare.inferenceLatencyUsP99(), bare.batchCap(),
                bare.serviceLatencyUsP99()).boxed()).allMatch(v -> v.isNaN());
        assertThat(bare.reportsLoaded()).isFalse();
    }
}
