package io.flinkgpu.inference.operator.resource;

import io.flinkgpu.inference.device.CudaProbe;
import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.apache.flink.api.common.externalresource.ExternalResourceDriver;
import org.apache.flink.api.common.externalresource.ExternalResourceDriverFactory;
import org.apache.flink.api.common.externalresource.ExternalResourceInfo;
import org.apache.flink.configuration.Configuration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Flink's external-resource framework for GPUs, backed by our own probe instead of Flink's
 * discovery script (whose {@code flink-external-resource-gpu} plugin is not published for 2.2):
 *
 * <pre>
 *   external-resources: gpu
 *   external-resource.gpu.amount: 1
 *   external-resource.gpu.driver-factory.class: io.flinkgpu.inference.operator.resource.GpuExternalResourceDriverFactory
 * </pre>
 *
 * Each TaskManager reports up to {@code amount} GPUs with an {@code index} (the CUDA ordinal),
 * {@code name} and {@code memory} property; the inference operator then uses those GPUs. No GPU
 * (the usual case on a laptop or in CI) reports none, which is not an error: the operator falls
 * back to {@code inference.device.type}.
 */
public final class GpuExternalResourceDriverFactory implements ExternalResourceDriverFactory {
    private static final Logger LOG = LoggerFactory.getLogger(GpuExternalResourceDriverFactory.class);

    @Override
    public ExternalResourceDriver createExternalResourceDriver(Configuration config) {
        return amount -> discover(amount, CudaProbe.get());
    }

    static Set<GpuInfo> discover(long amount, CudaProbe.Result probe) {
        Set<GpuInfo> gpus = new LinkedHashSet<>();
        if (!probe.available()) {
            LOG.info("No GPU for the external resource framework: {}", probe.reason());
            return gpus;
        }
        for (CudaProbe.Gpu gpu : probe.gpus()) {
            if (gpus.size() >= amount) {
                break;
            }
            gpus.add(new GpuInfo(gpu.ordinal(), gpu.name(), gpu.totalMemoryBytes()));
        }
        if (gpus.size() < amount) {
            LOG.warn("{} GPUs requested per TaskManager, {} found", amount, gpus.size());
        }
        return gpus;
    }

    /** One GPU as Flink's runtime context hands it to operators. */
    public record GpuInfo(int index, String name, long memoryBytes) implements ExternalResourceInfo {
        public static final String INDEX = "index";

        @Override
        public Optional<String> getProperty(String key) {
            switch (key) {
                case INDEX:
                    return Optional.of(String.valueOf(index));
                case "name":
                    return Optional.of(name);
                case "memory":
                    return Optional.of(String.valueOf(memoryBytes));
                default:
                    return Optional.empty();
            }
        }

        @Override
        public Collection<String> getKeys() {
            return List.of(INDEX, "name", "memory");
        }
    }
}
