package io.flinkgpu.inference.operator.resource;

import io.flinkgpu.inference.device.CudaProbe;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Set;
import org.apache.flink.configuration.Configuration;
import org.junit.jupiter.api.Test;

class GpuExternalResourceTest {
    private static final List<CudaProbe.Gpu> FOUR = List.of(new CudaProbe.Gpu(0, "A", 1L << 34), new CudaProbe.Gpu(1, "A", 1L << 34),
            new CudaProbe.Gpu(2, "B", 1L << 35), new CudaProbe.Gpu(3, "B", 1L << 35));

    @Test
    void reportsProbedGpusUpToTheRequestedAmount() {
        Set<GpuExternalResourceDriverFactory.GpuInfo> infos =
                GpuExternalResourceDriverFactory.discover(2, new CudaProbe.Result(FOUR, "probed"));
        assertThat(infos).extracting(i -> i.getProperty("index").orElseThrow()).containsExactly("0", "1");
        assertThat(infos.iterator().next().getProperty("memory")).contains(String.valueOf(1L << 34));
        assertThat(infos.iterator().next().getKeys()).contains("index", "name", "memory");
    }

    @Test
    void reportsNoGpuOnThisMachineWithoutFailing() throws Exception {
        assertThat(new GpuExternalResourceDriverFactory().createExternalResourceDriver(new Configuration())
                .retrieveResourceInfo(1)).isEmpty();
    }
}
