package io.flinkgpu.inference.device;

import io.flinkgpu.contract.placement.SlotLayout;
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
 * Without slot weights, subtask {@code i} uses GPU {@code i mod count}. With {@code slotWeights}
 * (one positive weight per GPU, {@code inference.device.slot-weights}), the GPUs get slots in
 * proportion to them and subtask {@code i} of {@code P} uses the GPU {@link SlotLayout} gives it,
 * the same mapping the router and the coordinator use; with equal weights that is again
 * {@code i mod count}. Subtasks of one TaskManager that land on the same GPU (real or simulated)
 * share one {@link Device} instance, so its memory is accounted once. The CPU device is one per
 * subtask, so slot weights do not apply to it.
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
        String simulatedLoadTime,
        List<Double> slotWeights) implements Serializable {

    private static final Logger LOG = LoggerFactory.getLogger(DeviceSettings.class);
    public static final Set<String> TYPES = Set.of("auto", "cuda", "cpu", "simulated");
    private static final Map<List<Object>, Device> SHARED = new ConcurrentHashMap<>();
    /** The option the slot weights come from, named in configuration errors. */
    public static final String SLOT_WEIGHTS_KEY = "inference.device.slot-weights";

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
        slotWeights = slotWeights == null ? List.of() : List.copyOf(slotWeights);
        if (!slotWeights.isEmpty()) {
            String invalid = SlotLayout.invalidReason(slotWeights);
            if (invalid != null) {
                throw new IllegalArgumentException(SLOT_WEIGHTS_KEY + " " + slotWeights + ": " + invalid);
            }
            if (type.equals("cpu")) {
                throw new IllegalArgumentException(SLOT_WEIGHTS_KEY + " is set but inference.device.type is 'cpu': "
                        + "every subtask has a CPU device of its own, slot weights apply to GPUs (auto, cuda, simulated)");
            }
            if (type.equals("simulated") && slotWeights.size() != simulatedCount) {
                throw new IllegalArgumentException(SLOT_WEIGHTS_KEY + " has " + slotWeights.size() + " weight(s) "
                        + slotWeights + " but inference.device.simulated.count is " + simulatedCount
                        + ": give one weight per device");
            }
        }
    }

    /** Simulated GPUs and GPUs without slot weights: subtask {@code i} on GPU {@code i mod count}. */
    public DeviceSettings(String type, long cpuMemoryBytes, double cudaMemoryFraction, int intraOpThreads,
            int simulatedCount, long simulatedMemoryBytes, String simulatedSpeed, List<String> simulatedModelSpeeds,
            String simulatedLoadTime) {
        this(type, cpuMemoryBytes, cudaMemoryFraction, intraOpThreads, simulatedCount, simulatedMemoryBytes,
                simulatedSpeed, simulatedModelSpeeds, simulatedLoadTime, List.of());
    }

    /** Simulated GPUs with the default {@link LoadTimeModel}. */
    public DeviceSettings(String type, long cpuMemoryBytes, double cudaMemoryFraction, int intraOpThreads,
            int simulatedCount, long simulatedMemoryBytes, String simulatedSpeed, List<String> simulatedModelSpeeds) {
        this(type, cpuMemoryBytes, cudaMemoryFraction, intraOpThreads, simulatedCount, simulatedMemoryBytes,
                simulatedSpeed, simulatedModelSpeeds, LoadTimeModel.DEFAULT_SPEC, List.of());
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

    /** The slot layout of the weights, or null where there are none (subtask {@code i} on GPU {@code i mod count}). */
    public SlotLayout slotLayout() {
        return slotWeights.isEmpty() ? null : SlotLayout.of(slotWeights);
    }

    /** The device of subtask {@code subtaskIndex}, parallelism unknown: GPU {@code i mod count}. */
    public Device createDevice(int subtaskIndex) {
        return createDevice(subtaskIndex, 0, List.of());
    }

    /** As {@link #createDevice(int, int, List)} with the parallelism unknown: GPU {@code i mod count}. */
    public Device createDevice(int subtaskIndex, List<Integer> assignedGpus) {
        return createDevice(subtaskIndex, 0, assignedGpus);
    }

    /**
     * The device of subtask {@code subtaskIndex} of {@code parallelism} (0: unknown, GPU
     * {@code i mod count}), on one of the {@code assignedGpus} (CUDA ordinals that Flink's
     * external-resource framework gave this TaskManager) when there are any.
     */
    public Device createDevice(int subtaskIndex, int parallelism, List<Integer> assignedGpus) {
        switch (type) {
            case "simulated": {
                int index = gpuIndex(subtaskIndex, parallelism, simulatedCount);
                return SHARED.computeIfAbsent(List.of(this, index), k -> new SimulatedDevice("sim:" + index,
                        simulatedMemoryBytes, SpeedModel.parse(simulatedSpeed), modelSpeeds(simulatedModelSpeeds),
                        LoadTimeModel.parse(simulatedLoadTime), intraOpThreads));
            }
            case "cuda":
            case "auto": {
                CudaProbe.Result cuda = CudaProbe.get();
                if (cuda.available()) {
                    CudaProbe.Gpu gpu = chooseGpu(subtaskIndex, parallelism, assignedGpus, cuda.gpus());
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

    private int gpuIndex(int subtask, int parallelism, int gpus) {
        return gpuIndex(subtask, parallelism, slotWeights, gpus);
    }

    /**
     * Which of {@code gpus} GPUs subtask {@code subtask} of {@code parallelism} uses: the slot
     * layout's device where there are weights for exactly these GPUs and the parallelism is known,
     * else {@code subtask mod gpus}. Weights for another number of GPUs are logged and not used: the
     * number of real GPUs is only known on the TaskManager, and a wrong count must not fail the task.
     */
    static int gpuIndex(int subtask, int parallelism, List<Double> weights, int gpus) {
        if (weights.isEmpty() || parallelism <= 0 || subtask >= parallelism) {
            return subtask % gpus;
        }
        if (weights.size() != gpus) {
            LOG.warn("{} has {} weight(s) {} but subtask {} has {} GPU(s) to choose from; it uses GPU {} mod {}",
                    SLOT_WEIGHTS_KEY, weights.size(), weights, subtask, gpus, subtask, gpus);
            return subtask % gpus;
        }
        return SlotLayout.of(weights).deviceOf(subtask, parallelism);
    }

    private CudaProbe.Gpu chooseGpu(int subtaskIndex, int parallelism, List<Integer> assigned, List<CudaProbe.Gpu> gpus) {
        return chooseGpu(subtaskIndex, parallelism, slotWeights, assigned, gpus);
    }

    /** GPU {@code i mod n} among the assigned ones if any are assigned (and present), else among all. */
    static CudaProbe.Gpu chooseGpu(int subtaskIndex, List<Integer> assigned, List<CudaProbe.Gpu> gpus) {
        return chooseGpu(subtaskIndex, 0, List.of(), assigned, gpus);
    }

    /**
     * The GPU of subtask {@code subtaskIndex} of {@code parallelism} ({@link #gpuIndex} under
     * {@code weights}) among the assigned ones if any are assigned (and present), else among all.
     */
    static CudaProbe.Gpu chooseGpu(int subtaskIndex, int parallelism, List<Double> weights, List<Integer> assigned,
            List<CudaProbe.Gpu> gpus) {
        List<CudaProbe.Gpu> candidates = gpus.stream().filter(g -> assigned.contains(g.ordinal())).toList();
        if (candidates.isEmpty()) {
            if (!assigned.isEmpty()) {
                LOG.warn("Assigned GPUs {} are not among the GPUs found {}; choosing among all", assigned, gpus);
            }
            candidates = gpus;
        }
        return candidates.get(gpuIndex(subtaskIndex, parallelism, weights, candidates.size()));
    }

    private Device cpu(int subtaskIndex) {
        return new CpuDevice("cpu:" + subtaskIndex, cpuMemoryBytes, intraOpThreads);
    }
}
