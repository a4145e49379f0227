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
 *
 * <p>Simulated GPUs take per-model speeds ({@code simulatedModelSpeeds}, entries
 * {@code model=speed} or {@code model:version=speed}) and shares of batches to fail on purpose
 * ({@code simulatedModelFailures}, entries {@code model=share} or {@code model:version=share},
 * share in [0, 1]; see {@link SimulatedFailures}); a versioned entry wins over the model's. Both
 * are checked here, at configuration: a malformed entry is an {@link IllegalArgumentException}
 * naming it.
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
        List<Double> slotWeights,
        List<String> simulatedModelFailures) implements Serializable {

    private static final Logger LOG = LoggerFactory.getLogger(DeviceSettings.class);
    public static final Set<String> TYPES = Set.of("auto", "cuda", "cpu", "simulated");
    private static final Map<List<Object>, Device> SHARED = new ConcurrentHashMap<>();
    /** The option the slot weights come from, named in configuration errors. */
    public static final String SLOT_WEIGHTS_KEY = "inference.device.slot-weights";
    /** The options per-model entries come from, named in configuration errors. */
    public static final String MODEL_SPEEDS_KEY = "inference.device.simulated.model-speeds";
    public static final String MODEL_FAILURES_KEY = "inference.device.simulated.model-failures";
    /** A model name or version in an entry: no separators, no blanks. */
    private static final java.util.regex.Pattern NAME = java.util.regex.Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]*");

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
        simulatedModelFailures = simulatedModelFailures == null ? List.of() : List.copyOf(simulatedModelFailures);
        SpeedModel.parse(simulatedSpeed);
        modelSpeeds(simulatedModelSpeeds);
        modelFailures(simulatedModelFailures);
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

    /** No batch failed on purpose. */
    public DeviceSettings(String type, long cpuMemoryBytes, double cudaMemoryFraction, int intraOpThreads,
            int simulatedCount, long simulatedMemoryBytes, String simulatedSpeed, List<String> simulatedModelSpeeds,
            String simulatedLoadTime, List<Double> slotWeights) {
        this(type, cpuMemoryBytes, cudaMemoryFraction, intraOpThreads, simulatedCount, simulatedMemoryBytes,
                simulatedSpeed, simulatedModelSpeeds, simulatedLoadTime, slotWeights, List.of());
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

    /**
     * Parses {@code model=speed} and {@code model:version=speed} entries, keyed {@code model} and
     * {@code model:version}; a later entry for the same key replaces an earlier one.
     */
    static Map<String, SpeedModel> modelSpeeds(List<String> entries) {
        Map<String, SpeedModel> speeds = new HashMap<>();
        for (String entry : entries) {
            String key = entryKey(entry, MODEL_SPEEDS_KEY, "speed");
            try {
                speeds.put(key, SpeedModel.parse(entry.substring(entry.indexOf('=') + 1)));
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException(MODEL_SPEEDS_KEY + " entry '" + entry + "': " + e.getMessage(), e);
            }
        }
        return speeds;
    }

    /**
     * Parses {@code model=share} and {@code model:version=share} entries (share in [0, 1]), keyed
     * {@code model} and {@code model:version}; a key given twice is refused.
     */
    static Map<String, Double> modelFailures(List<String> entries) {
        Map<String, Double> shares = new HashMap<>();
        for (String entry : entries) {
            String key = entryKey(entry, MODEL_FAILURES_KEY, "share");
            String value = entry.substring(entry.indexOf('=') + 1).trim();
            double share;
            try {
                share = Double.parseDouble(value);
            } catch (NumberFormatException e) {
                share = Double.NaN;
            }
            if (!(share >= 0 && share <= 1)) {
                throw new IllegalArgumentException(MODEL_FAILURES_KEY + " entry '" + entry + "': the share '" + value
                        + "' is not a number in [0, 1] (the share of the batches that fail)");
            }
            if (shares.put(key, share) != null) {
                throw new IllegalArgumentException(MODEL_FAILURES_KEY + " entry '" + entry + "': " + key
                        + " is given more than once");
            }
        }
        return shares;
    }

    /** The {@code model} or {@code model:version} before the '=' of an entry of {@code option}. */
    private static String entryKey(String entry, String option, String what) {
        int eq = entry == null ? -1 : entry.indexOf('=');
        String form = "model=" + what + " or model:version=" + what;
        if (eq <= 0) {
            throw new IllegalArgumentException(option + " entry '" + entry + "' is not of the form " + form);
        }
        String key = entry.substring(0, eq).trim();
        int colon = key.indexOf(':');
        String model = colon < 0 ? key : key.substring(0, colon).trim();
        String version = colon < 0 ? null : key.substring(colon + 1).trim();
        if (!NAME.matcher(model).matches() || (version != null && !NAME.matcher(version).matches())) {
            throw new IllegalArgumentException(option + " entry '" + entry + "' is not of the form " + form
                    + " (model and version: letters, digits, '.', '_', '-')");
        }
        return version == null ? model : model + ":" + version;
    }

    /** The slot layout of the weights, or null where there are none (subtask {@code i} on GPU {@code i mod count}). */
    public SlotLayout slotLayout() {
        return slotWeights.isEmpty() ? null : SlotLayout.of(slotWeights);
    }

    /** The device of subtask {@code subtaskIndex}, parallelism unknown: GPU {@code i mod count}. */
    public Device createDevice(int subtaskIndex) {
        return createDevice(subtaskIndex, 0, List.of());
    }

    /** The kind of device {@link #createDevice} makes on this machine ('auto' and 'cuda': a GPU when one is usable). */
    public DeviceKind kind() {
        switch (type) {
            case "simulated":
                return DeviceKind.SIMULATED;
            case "cuda":
            case "auto":
                return CudaProbe.get().available() ? DeviceKind.CUDA : DeviceKind.CPU;
            default:
                return DeviceKind.CPU;
        }
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
        switch (kind()) {
            case SIMULATED: {
                int index = gpuIndex(subtaskIndex, parallelism, simulatedCount);
                return SHARED.computeIfAbsent(List.of(this, index), k -> new SimulatedDevice("sim:" + index,
                        simulatedMemoryBytes, SpeedModel.parse(simulatedSpeed), modelSpeeds(simulatedModelSpeeds),
                        modelFailures(simulatedModelFailures), LoadTimeModel.parse(simulatedLoadTime),
                        intraOpThreads));
            }
            case CUDA: {
                CudaProbe.Gpu gpu = chooseGpu(subtaskIndex, parallelism, assignedGpus, CudaProbe.get().gpus());
                return SHARED.computeIfAbsent(List.of(this, gpu.ordinal()), k -> new CudaDevice(gpu,
                        (long) (gpu.totalMemoryBytes() * cudaMemoryFraction), intraOpThreads, NvidiaSmi.shared()));
            }
            default:
                if (type.equals("cuda")) {
                    LOG.warn("inference.device.type is 'cuda' but there is no usable GPU ({}); subtask {} runs on the CPU",
                            CudaProbe.get().reason(), subtaskIndex);
                }
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
