package io.flinkgpu.bench.cache;

import io.flinkgpu.inference.device.LoadTimeModel;
import io.flinkgpu.inference.device.SimulatedDevice;
import io.flinkgpu.inference.device.SpeedModel;
import io.flinkgpu.inference.cache.ModelCache;
import io.flinkgpu.inference.cache.ModelCacheSettings;
import io.flinkgpu.inference.cache.ModelLease;
import io.flinkgpu.inference.model.ModelRepository;
import io.flinkgpu.inference.protocol.InferenceRequest;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * A simulated GPU, its model cache and its FIFO queue served by {@code workers} threads: each cuts
 * a batch of the head request's model (every queued request of it, up to the batch limit) and runs
 * it through the cache, loading or swapping the model in when it is not resident.
 */
final class DeviceLane implements AutoCloseable {
    /** The devices of one run. */
    record Spec(long memoryMib, String speed, String loadTime, int maxBatch, int workers) {}

    /** One request in a device queue. */
    record Job(int model, int seq, InferenceRequest request) {}

    /** Where a lane reports each request's outcome, from its worker threads. */
    interface Answers {
        void answered(Job job, boolean ok, int batchSize);
    }

    private final SimulatedDevice device;
    private final ModelCache cache;
    private final ModelRepository repo;
    private final int maxBatch;
    private final Answers answers;
    private final ArrayDeque<Job> queue = new ArrayDeque<>();
    private final List<Thread> threads = new ArrayList<>();
    private volatile boolean running = true;
    /** Models the any-device router assigned here (guarded by the router). */
    int assigned;

    DeviceLane(int index, ModelRepository repo, int maxModels, Spec spec, Answers answers) {
        this.repo = repo;
        this.maxBatch = spec.maxBatch();
        this.answers = answers;
        device = new SimulatedDevice("sim:" + index, spec.memoryMib() << 20, SpeedModel.parse(spec.speed()), Map.of(),
                LoadTimeModel.parse(spec.loadTime()), 1);
        cache = new ModelCache(device, ModelCacheSettings.DEFAULTS.withMaxModels(maxModels).withWarmupWorkers(2)
                .withMaxBatchSize(maxBatch), System::nanoTime, ModelCache.Listener.NONE);
        for (int w = 0; w < spec.workers(); w++) {
            Thread t = new Thread(this::serve, "sim-" + index + "-worker-" + w);
            t.setDaemon(true);
            threads.add(t);
            t.start();
        }
    }

    synchronized int depth() {
        return queue.size();
    }

    synchronized void submit(Job job) {
        queue.addLast(job);
        notifyAll();
    }

    /** The head request and every queued request of its model, up to the batch limit. */
    private synchronized List<Job> nextBatch() throws InterruptedException {
        while (queue.isEmpty()) {
            if (!running) {
                return List.of();
            }
            wait(100);
        }
        Job head = queue.pollFirst();
        List<Job> batch = new ArrayList<>();
        batch.add(head);
        for (Iterator<Job> it = queue.iterator(); it.hasNext() && batch.size() < maxBatch;) {
            Job j = it.next();
            if (j.model() == head.model()) {
                batch.add(j);
                it.remove();
            }
        }
        return batch;
    }

    private void serve() {
        while (running) {
            List<Job> batch;
            try {
                batch = nextBatch();
            } catch (InterruptedException e) {
                return;
            }
            if (batch.isEmpty()) {
                continue;
            }
            boolean ok;
            try {
                ModelRepository.ResolvedModel model = repo.resolve(CacheBenchmark.modelName(batch.get(0).model()),
                        null);
                List<InferenceRequest> requests = new ArrayList<>(batch.size());
                for (Job j : batch) {
                    requests.add(j.request());
                }
                try (ModelLease lease = cache.acquire(model)) {
                    ok = lease.model().run(requests).size() == batch.size();
                }
            } catch (Exception e) {
                ok = false;
            }
            for (Job j : batch) {
                answers.answered(j, ok, batch.size());
            }
        }
    }

    /** The device and the models resident on it, e.g. {@code sim:0: [...]}. */
    String resident() {
        return device.id() + ": " + cache.residentModels();
    }

    /** Cold loads and swap-ins so far. */
    long loads() {
        ModelCache.Stats s = cache.stats();
        return s.coldLoads() + s.swapIns();
    }

    @Override
    public void close() throws InterruptedException {
        running = false;
        synchronized (this) {
            notifyAll();
        }
        for (Thread t : threads) {
            t.join(TimeUnit.SECONDS.toMillis(30));
        }
        cache.close();
    }
}
