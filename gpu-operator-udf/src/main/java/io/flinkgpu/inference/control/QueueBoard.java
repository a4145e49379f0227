package io.flinkgpu.inference.control;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * How many requests each inference subtask of one stage has outstanding, shared inside one JVM
 * between the stage's routers and its inference subtasks, so that a router can send a request to
 * the least loaded of a model's replicas (see {@link RoutingTable#select(String, java.util.function.IntToLongFunction)}).
 *
 * <p>A subtask's outstanding requests are two parts. Its inference subtask publishes what it holds
 * after every change ({@link Slot#publish}): its queued requests plus one per batch executing (a
 * new request waits for an executing batch to end, not for each request in it). The requests on their way to
 * it are counted by the routers of this JVM when they send one ({@link #sent}) and uncounted by
 * the subtask when it arrives ({@link Slot#arrived}, never below zero: a request sent by a router
 * in another JVM was never counted). A subtask that (re)opens starts its slot afresh, so requests
 * lost in a failover do not stay counted.
 *
 * <p>Only subtasks that run in this JVM are on the board; a router that sees a target missing
 * from it falls back to the plan's weighted round robin, so in a cluster of several TaskManagers
 * a model whose replicas span them is routed as without the board. One board per key (the job
 * and the stage); a board that no router or subtask holds any more is dropped.
 */
public final class QueueBoard {
    /** What {@link #outstanding} answers for a subtask that is not on the board. */
    public static final long UNKNOWN = -1;

    private static final Map<String, QueueBoard> BOARDS = new ConcurrentHashMap<>();

    private final String key;
    /** The subtasks' slots by index; replaced by a larger copy (under the board's lock) when a subtask needs it. */
    private volatile AtomicReferenceArray<Slot> slots;
    /** The routers and subtasks holding this board; at zero it leaves {@link #BOARDS}. */
    private final AtomicInteger holders = new AtomicInteger();
    /** The running parallelism the subtasks reported (0: none on the board yet). */
    private volatile int parallelism;

    private QueueBoard(String key, int capacity) {
        this.key = key;
        this.slots = new AtomicReferenceArray<>(Math.max(1, capacity));
    }

    /**
     * The board of {@code key} in this JVM, held until {@link #release}: each router and each
     * inference subtask takes it once at open. {@code capacity} is the number of subtask indices it
     * starts with (the caller's maximum parallelism); it grows for a subtask beyond it.
     */
    public static QueueBoard acquire(String key, int capacity) {
        while (true) {
            QueueBoard board = BOARDS.computeIfAbsent(key, k -> new QueueBoard(k, capacity));
            synchronized (board) {
                if (BOARDS.get(key) == board) { // not dropped meanwhile by its last holder
                    board.holders.incrementAndGet();
                    return board;
                }
            }
        }
    }

    /** Gives the board back (a router's or subtask's close); the last holder drops it. */
    public void release() {
        synchronized (this) {
            if (holders.decrementAndGet() == 0) {
                BOARDS.remove(key, this);
            }
        }
    }

    /** The boards in this JVM (for tests). */
    static int boards() {
        return BOARDS.size();
    }

    /**
     * Puts inference subtask {@code subtask} of {@code runningParallelism} on the board with an
     * empty slot, replacing the slot of an earlier attempt.
     */
    public synchronized Slot join(int subtask, int runningParallelism) {
        if (subtask < 0) {
            throw new IllegalArgumentException("subtask " + subtask + " is negative");
        }
        AtomicReferenceArray<Slot> current = slots;
        if (subtask >= current.length()) {
            AtomicReferenceArray<Slot> larger = new AtomicReferenceArray<>(Math.max(subtask + 1, 2 * current.length()));
            for (int i = 0; i < current.length(); i++) {
                larger.set(i, current.get(i));
            }
            slots = current = larger;
        }
        Slot slot = new Slot();
        current.set(subtask, slot);
        parallelism = runningParallelism;
        return slot;
    }

    /** Takes {@code slot} off the board (its subtask closed), unless a newer attempt replaced it. */
    public synchronized void leave(int subtask, Slot slot) {
        AtomicReferenceArray<Slot> current = slots;
        if (subtask >= 0 && subtask < current.length()) {
            current.compareAndSet(subtask, slot, null);
        }
    }

    /** The running parallelism of the subtasks on the board (0: none joined yet). */
    public int parallelism() {
        return parallelism;
    }

    /** A router sent a request to {@code subtask} (ignored for a subtask not on the board). */
    public void sent(int subtask) {
        AtomicReferenceArray<Slot> current = slots;
        Slot slot = subtask >= 0 && subtask < current.length() ? current.get(subtask) : null;
        if (slot != null) {
            slot.inTransit.incrementAndGet();
        }
    }

    /** The requests {@code subtask} holds or has on their way to it; {@link #UNKNOWN} where it is not on the board. */
    public long outstanding(int subtask) {
        AtomicReferenceArray<Slot> current = slots;
        Slot slot = subtask >= 0 && subtask < current.length() ? current.get(subtask) : null;
        return slot == null ? UNKNOWN : slot.held + slot.inTransit.get();
    }

    /** One inference subtask's entry; written by that subtask's mailbox thread and by routers. */
    public static final class Slot {
        private final AtomicLong inTransit = new AtomicLong();
        private volatile long held;

        private Slot() {
        }

        /** A request reached the subtask: one fewer on its way (never below zero). */
        public void arrived() {
            inTransit.getAndUpdate(n -> n > 0 ? n - 1 : 0);
        }

        /** What the subtask holds now: queued requests plus one per batch executing. */
        public void publish(long heldRequests) {
            held = Math.max(0, heldRequests);
        }
    }
}
