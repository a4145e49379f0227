package io.flinkgpu.bench.cache;

import io.flinkgpu.bench.load.LoadDriver;
import io.flinkgpu.bench.load.Target;
import io.flinkgpu.bench.scenario.Scenario;
import io.flinkgpu.inference.model.ModelRepository;
import io.flinkgpu.inference.protocol.RequestParameters;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * The six-model workload as a load target: each request picks a model by Zipf popularity, carries
 * one of the scenario's images, and goes to a device lane by the placement's routing; it is
 * answered when its batch has run. As the driver's listener it counts, while the point is
 * measured, the requests answered per model and the models loaded.
 */
final class ZipfTarget implements Target, LoadDriver.Listener, AutoCloseable {
    private final List<DeviceLane> lanes = new ArrayList<>();
    private final Placement placement;
    private final int maxBatch;
    private final double[] cumulative;
    private final Scenario images;
    private final SplittableRandom random = new SplittableRandom(1);
    /** Any-device placement: the devices each model is assigned to (guarded by the lane list). */
    private final Map<Integer, List<DeviceLane>> assigned = new HashMap<>();
    private final long[] perModel;
    private volatile boolean measuring;
    private volatile Completions completions;
    private long loadsBefore;
    private long loads;

    ZipfTarget(ModelRepository repo, Placement placement, double[] popularity, Scenario images, DeviceLane.Spec spec,
            int devices) {
        this.placement = placement;
        this.maxBatch = spec.maxBatch();
        this.images = images;
        this.perModel = new long[popularity.length];
        this.cumulative = new double[popularity.length];
        double acc = 0;
        for (int i = 0; i < popularity.length; i++) {
            acc += popularity[i];
            cumulative[i] = acc;
        }
        for (int d = 0; d < devices; d++) {
            lanes.add(new DeviceLane(d, repo, placement.maxModels, spec, this::answered));
        }
    }

    @Override
    public void begin(int runId, Completions c) {
        completions = c;
    }

    @Override
    public void send(int seq) {
        double u = random.nextDouble();
        int model = 0;
        while (model < cumulative.length - 1 && u > cumulative[model]) {
            model++;
        }
        route(model).submit(new DeviceLane.Job(model, seq, images.request("c-" + seq, seq,
                CacheBenchmark.modelName(model), RequestParameters.DEFAULTS)));
    }

    private void answered(DeviceLane.Job job, boolean ok, int batchSize) {
        if (measuring && ok) {
            synchronized (perModel) {
                perModel[job.model()]++;
            }
        }
        completions.complete(job.seq(), System.nanoTime(), !ok, batchSize, Double.NaN, Double.NaN);
    }

    @Override
    public void measuring() {
        loadsBefore = lanes.stream().mapToLong(DeviceLane::loads).sum();
        measuring = true;
    }

    @Override
    public void measured() {
        measuring = false;
        loads = lanes.stream().mapToLong(DeviceLane::loads).sum() - loadsBefore;
    }

    /** Models loaded (cold or swapped in) while the point was measured. */
    long loads() {
        return loads;
    }

    /** Requests answered per model while the point was measured. */
    long[] perModel() {
        synchronized (perModel) {
            return perModel.clone();
        }
    }

    /** What each device holds now. */
    List<String> resident() {
        return lanes.stream().map(DeviceLane::resident).toList();
    }

    /**
     * Static and partitioned: model i to device i mod 2. Any device: a model is assigned to a home
     * device the first time it is seen (the device with the fewest models); it is replicated to a
     * second device, if that device has a model slot left, when its holders' queues are all longer
     * than a batch and the other's is short; each request goes to the holder with the shortest
     * queue. This is the coordinator's placement in miniature, so the cache does not thrash.
     */
    private DeviceLane route(int model) {
        if (!placement.anyDevice) {
            return lanes.get(model % lanes.size());
        }
        synchronized (lanes) {
            List<DeviceLane> holders = assigned.computeIfAbsent(model, m -> {
                DeviceLane home = lanes.get(0);
                for (DeviceLane lane : lanes) {
                    if (lane.assigned < home.assigned) {
                        home = lane;
                    }
                }
                home.assigned++;
                return new ArrayList<>(List.of(home));
            });
            DeviceLane best = holders.get(0);
            for (DeviceLane lane : holders) {
                if (lane.depth() < best.depth()) {
                    best = lane;
                }
            }
            if (best.depth() > maxBatch) {
                for (DeviceLane lane : lanes) {
                    if (!holders.contains(lane) && lane.assigned < placement.maxModels && lane.depth() < maxBatch / 4) {
                        lane.assigned++;
                        holders.add(lane);
                        return lane;
                    }
                }
            }
            return best;
        }
    }

    @Override
    public void close() throws InterruptedException {
        for (DeviceLane lane : lanes) {
            lane.close();
        }
    }
}
