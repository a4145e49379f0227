package io.flinkgpu.inference.cache;

import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Daemon threads named after what they do and the device they serve ({@code model-warmup-cpu-1}),
 * so that the cache's background work never keeps a JVM alive and shows up readably in a dump.
 */
final class DaemonThreads {
    private DaemonThreads() {}

    static ThreadFactory named(String prefix) {
        AtomicInteger n = new AtomicInteger();
        return r -> {
            Thread t = new Thread(r, prefix + "-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        };
    }
}
