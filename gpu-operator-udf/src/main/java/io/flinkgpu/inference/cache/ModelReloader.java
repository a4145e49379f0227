package io.flinkgpu.inference.cache;

import io.flinkgpu.inference.model.ModelId;
import io.flinkgpu.inference.model.ModelRepository;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Hot reload: brings what a {@link ModelRepository} serves in line with what is on disk, one
 * model at a time. When a model's default version changes, the new version is loaded and warmed
 * up on the cache's device first and only then published, so no request meets a cold session;
 * versions no longer served are retired in the cache (they drain: unloaded when their last batch
 * ends). If the new version cannot be loaded (corrupt, does not fit) the old one keeps serving
 * and the next reload tries again. A model new to the repository is published at once and loads
 * on its first request; a model gone from disk stops being served.
 */
public final class ModelReloader implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(ModelReloader.class);

    private final ModelRepository repository;
    private final ModelCache cache;
    private ScheduledExecutorService poller;

    /** What one reload did. */
    public record Report(List<String> published, List<ModelId> retired, Map<String, String> failed) {
        public boolean changedAnything() {
            return !published.isEmpty() || !retired.isEmpty();
        }
    }

    /** @param cache where new default versions are warmed up before they serve; null to publish at once */
    public ModelReloader(ModelRepository repository, ModelCache cache) {
        this.repository = repository;
        this.cache = cache;
    }

    /** Reloads every {@code interval} on a daemon thread until {@link #close}. */
    public synchronized ModelReloader startPolling(Duration interval, String threadName) {
        if (poller == null && !interval.isZero() && !interval.isNegative()) {
            poller = Executors.newSingleThreadScheduledExecutor(r -> {
                Thread t = new Thread(r, threadName);
                t.setDaemon(true);
                return t;
            });
            poller.scheduleWithFixedDelay(this::reloadQuietly, interval.toMillis(), interval.toMillis(),
                    TimeUnit.MILLISECONDS);
        }
        return this;
    }

    private void reloadQuietly() {
        try {
            reload();
        } catch (RuntimeException e) {
            LOG.warn("Reloading model repository {} failed: {}", repository.root(), e.toString());
        }
    }

    /** Rescans the repository and applies the differences. */
    public synchronized Report reload() {
        Map<String, ModelRepository.ModelEntry> found = repository.scan();
        Map<String, ModelRepository.ModelEntry> served = repository.served();
        List<String> published = new ArrayList<>();
        List<ModelId> retired = new ArrayList<>();
        Map<String, String> failed = new LinkedHashMap<>();
        TreeSet<String> names = new TreeSet<>(found.keySet());
        names.addAll(served.keySet());
        for (String name : names) {
            ModelRepository.ModelEntry current = served.get(name);
            ModelRepository.ModelEntry next = found.get(name);
            if (next != null && next.sameAs(current)) {
                continue;
            }
            if (next != null && current != null && cache != null
                    && !next.defaultVersion().equals(current.defaultVersion())) {
                try {
                    cache.preload(next.resolved(name, next.defaultVersion()));
                } catch (ModelCache.ModelLoadException e) {
                    failed.put(name, e.getMessage());
                    LOG.warn("Model {} version {} is not served; {} keeps serving: {}", name, next.defaultVersion(),
                            current.defaultVersion(), e.getMessage());
                    continue;
                }
            }
            repository.publish(name, next);
            published.add(name);
            if (current != null) {
                for (String v : current.versionFiles().keySet()) {
                    if (next == null || !next.versionFiles().containsKey(v)) {
                        ModelId id = new ModelId(name, v);
                        retired.add(id);
                        if (cache != null) {
                            cache.retire(id);
                        }
                    }
                }
            }
            LOG.info("Model {} now serves versions {} (default {})", name,
                    next == null ? "none" : next.versionFiles().keySet(), next == null ? "-" : next.defaultVersion());
        }
        return new Report(published, retired, failed);
    }

    @Override
    public synchronized void close() {
        if (poller != null) {
            poller.shutdownNow();
            poller = null;
        }
    }
}
