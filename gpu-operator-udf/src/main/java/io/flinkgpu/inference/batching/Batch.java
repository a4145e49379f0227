package io.flinkgpu.inference.batching;

import java.util.ArrayList;
import java.util.List;

/** A closed batch: requests of one {@link BatchKey}, in arrival order, and why it closed. */
public record Batch<T>(BatchKey key, List<Queued<T>> entries, int samples, CloseReason reason, long closedAtNanos) {

    /** Why a batch was closed. */
    public enum CloseReason {
        /** It reached the model's maximum batch size. */
        MAX_SIZE,
        /** It reached a preferred batch size. */
        PREFERRED_SIZE,
        /** Its oldest request waited the maximum queue delay. */
        QUEUE_DELAY,
        /** Waiting longer would miss a queued request's deadline, or no more arrivals are expected in time. */
        DEADLINE,
        /** SLO-aware sizing: the device is lightly loaded, so the batch goes without waiting. */
        LOW_LOAD,
        /** SLO-aware sizing: the batch is large enough to keep up with the arrival rate. */
        KEEPS_UP,
        /** The input ended or the operator is draining. */
        FLUSH
    }

    /** A queued item with its size in samples and the time it was enqueued. */
    public record Queued<T>(T item, int samples, long enqueuedNanos) {}

    public List<T> items() {
        List<T> items = new ArrayList<>(entries.size());
        for (Queued<T> q : entries) {
            items.add(q.item());
        }
        return items;
    }

    public int size() {
        return entries.size();
    }
}
