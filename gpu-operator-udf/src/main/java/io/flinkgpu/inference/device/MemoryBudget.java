package io.flinkgpu.inference.device;

import java.util.concurrent.atomic.AtomicLong;

/**
 * Model memory accounted against a fixed capacity. Reservations are rounded up to
 * {@code granularity} bytes, as a GPU allocator hands out whole pages, so the same size always
 * reserves and releases the same amount.
 */
final class MemoryBudget {
    private final long capacity;
    private final long granularity;
    private final AtomicLong used = new AtomicLong();

    MemoryBudget(long capacity, long granularity) {
        if (capacity <= 0) {
            throw new IllegalArgumentException("memory capacity must be positive");
        }
        if (granularity < 1) {
            throw new IllegalArgumentException("granularity must be at least 1");
        }
        this.capacity = capacity;
        this.granularity = granularity;
    }

    long rounded(long bytes) {
        if (bytes <= 0) {
            return 0;
        }
        return ((bytes + granularity - 1) / granularity) * granularity;
    }

    boolean reserve(long bytes) {
        long r = rounded(bytes);
        while (true) {
            long current = used.get();
            if (current + r > capacity) {
                return false;
            }
            if (used.compareAndSet(current, current + r)) {
                return true;
            }
        }
    }

    void release(long bytes) {
        long after = used.addAndGet(-rounded(bytes));
        if (after < 0) {
            used.addAndGet(-after);
            throw new IllegalStateException("released more memory than was reserved");
        }
    }

    long capacity() {
        return capacity;
    }

    long used() {
        return used.get();
    }

    long free() {
        return capacity - used.get();
    }
}
