package io.flinkgpu.inference.device;

import java.io.Serializable;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Which device each inference subtask runs on, from configuration.
 *
 * <ul>
 *   <li>{@code auto}: a CUDA GPU when {@link CudaProbe} finds one, else the CPU;
 *   <li>{@code cuda}: a CUDA GPU; where there is none, the CPU with a warning (no GPU is never an error);
 *   <li>{@code cpu}: the CPU with its own memory budget per subtask;
 *   <li>{@code simulated}: one of {@code simulatedCount} simulated GPUs.
 * </ul>
 *
 * Subtask {@code i} uses GPU {@code i mod count}. Subtasks of one TaskManager that land on the
 * same GPU (real or simulated) share one {@link Device} instance, so its memory is accounted once.
 */
public record DeviceSettings(
        String type,
        long cpuMemoryBytes,
        double cudaMemoryFraction,
        int intraOpThreads,
        int simulatedCount,
        long simulatedMemoryBytes,
        String simulatedSpeed,
        List<String> simulatedModelSpeeds,
        String simulatedLoadTime) implements Serializable {

    private static final Logger LOG = LoggerFactory.getLogger(DeviceSettings.class);
    public static final Set<String> TYPES = Set.of("auto", "cuda", "cpu", "simulated");
    private static final Map<List<Object>, Device> SHARED = new ConcurrentHashMap<>();

    public DeviceSettings {
        type = type.toLowerCase(Locale.ROOT).trim();
        if (!TYPES.contains(type)) {
            throw new IllegalArgumentException("unsupported device type '" + type + "'; supported: auto, cuda, cpu, simulated");
        }
        if (cpuMemoryBytes <= 0 || simulatedMemoryBytes <= 0) {
            throw new IllegalArgumentException("device memory must be positive");
        }
        if (!(cudaMemoryFraction > 0 && cudaMemoryFraction <= 1)) {
            throw new IllegalArgumentException("CUDA memory fraction must be in (0, 1]: " + cudaMemoryFraction);
        }
        if (intraOpThreads < 1 || simulatedCount < 1) {
            throw new IllegalArgumentException("intra-op threads and simulated device count must be at least 1");
        }
        simulatedModelSpeeds = List.copyOf(simulatedModelSpeeds);
        SpeedModel.parse(simulatedSpeed);
        modelSpeeds(simulatedModelSpeeds);
        LoadTimeModel.parse(simulatedLoadTime);
    }

    /** Simulated GPUs with the default {@link LoadTimeModel}. */
    public DeviceSettings(String type, long cpuMemoryBytes, double cudaMemoryFraction, int intraOpThreads,
            int simulatedCount, long simulatedMemoryBytes, String simulatedSpeed, List<String> simulatedModelSpeeds) {
        this(type, cpuMemoryBytes, cudaMemoryFraction, intraOpThreads, simulatedCount, simulatedMemoryBytes,
                simulatedSpeed, simulatedModelSpeeds, LoadTimeModel.DEFAULT_SPEC);
    }

    /** Parses {@code model=speed} entries. */
    static Map<String, SpeedModel> modelSpeeds(List<String> entries) {
        Map<String, SpeedModel> speeds = new HashMap<>();
        for (String entry : entries) {
            int eq = entry.indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException("per-model speed '" + entry + "' is not of the form model=speed");
            }
            speeds.put(entry.substring(0, eq).trim(), SpeedModel.parse(entry.substring(eq + 1)));
        }
        return speeds;
    }

    /** The device of subtask {@code subtaskIndex}. */
    public Device createDevice(int subtaskIndex) {
        return createDevice(subtaskIndex, List.of());
    }

    /**
     * The device of subtask {@code subtaskIndex}, on one of the {@code assignedGpus} (CUDA ordinals
     * that Flink's external-resource framework gave this TaskManager) when there are any.
     */
    public Device createDevice(int subtaskIndex, List<Integer> assignedGpus) {
        switch (type) {
            case "simulated": {
                int index = subtaskIndex % simulatedCount;
                return SHARED.computeIfAbsent(List.of(this, index), k -> new SimulatedDevice("sim:" + index,
                        simulatedMemoryBytes, SpeedModel.parse(simulatedSpeed), modelSpeeds(simulatedModelSpeeds),
                        LoadTimeModel.parse(simulatedLoadTime), intraOpThreads));
            }
            case "cuda":
            case "auto": {
                CudaProbe.Result cuda = CudaProbe.get();
                if (cuda.available()) {
                    CudaProbe.Gpu gpu = chooseGpu(subtaskIndex, assignedGpus, cuda.gpus());
                    return SHARED.computeIfAbsent(List.of(this, gpu.ordinal()), k -> new CudaDevice(gpu,
                            (long) (gpu.totalMemoryBytes() * cudaMemoryFraction), intraOpThreads, NvidiaSmi.shared()));
                }
                if (type.equals("cuda")) {
                    LOG.warn("inference.device.type is 'cuda' but there is no usable GPU ({}); subtask {} runs on the CPU",
                            cuda.reason(), subtaskIndex);
                }
                return cpu(subtaskIndex);
            }
            default:
                return cpu(subtaskIndex);
        }
    }

    /** GPU {@code i mod n} among the assigned ones if any are assigned (and present), else among all. */
    static CudaProbe.Gpu chooseGpu(int subtaskIndex, List<Integer> assigned, List<CudaProbe.Gpu> gpus) {
        List<CudaProbe.Gpu> candidates = gpus.stream().filter(g -> assigned.contains(g.ordinal())).toList();
        if (candidates.isEmpty()) {
            if (!assigned.isEmpty()) {
                LOG.warn("Assigned GPUs {} are not among the GPUs found {}; choosing among all", assigned, gpus);
            }
            candidates = gpus;
        }
        return candidates.get(subtaskIndex % candidates.size());
    }

    private Device cpu(int subtaskIndex) {
        return new CpuDevice("cpu:" + subtaskIndex, cpuMemoryBytes, intraOpThreads);
    }
}
