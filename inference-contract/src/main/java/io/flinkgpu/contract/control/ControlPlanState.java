package io.flinkgpu.contract.control;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The plan a job currently follows, and the gate every control record passes: a record that
 * does not decode or validate is logged and counted, a record whose epoch is not newer than the
 * current plan's is ignored (replays, reordering, a stale coordinator), and only a newer valid
 * plan replaces the current one. Nothing here throws on bad input.
 */
public final class ControlPlanState {
    private static final Logger LOG = LoggerFactory.getLogger(ControlPlanState.class);

    /** What became of one control record. */
    public enum Outcome {
        APPLIED,
        STALE,
        INVALID
    }

    private ControlMessage current;
    private long applied;
    private long stale;
    private long invalid;

    public ControlPlanState() {}

    /** Starts from a plan restored from state (null: none). */
    public ControlPlanState(ControlMessage restored) {
        this.current = restored;
    }

    public Outcome offer(byte[] record) {
        ControlMessage message;
        try {
            message = ControlMessageCodec.decode(record);
        } catch (InvalidControlMessageException e) {
            invalid++;
            LOG.warn("Ignoring control record ({} invalid so far): {}", invalid, e.getMessage());
            return Outcome.INVALID;
        }
        return offer(message);
    }

    public Outcome offer(ControlMessage message) {
        try {
            ControlMessageCodec.validate(message);
        } catch (InvalidControlMessageException e) {
            invalid++;
            LOG.warn("Ignoring control message ({} invalid so far): {}", invalid, e.getMessage());
            return Outcome.INVALID;
        }
        if (current != null && message.epoch() <= current.epoch()) {
            stale++;
            LOG.info("Ignoring plan epoch {}: already at epoch {}", message.epoch(), current.epoch());
            return Outcome.STALE;
        }
        current = message;
        applied++;
        LOG.info("Applied plan epoch {} ({} routes, {} commands): {}", message.epoch(), message.routes().size(),
                message.commands().size(), message.reason());
        return Outcome.APPLIED;
    }

    /** The plan in force, or null before the first one. */
    public ControlMessage current() {
        return current;
    }

    public long currentEpoch() {
        return current == null ? 0 : current.epoch();
    }

    public long appliedCount() {
        return applied;
    }

    public long staleCount() {
        return stale;
    }

    public long invalidCount() {
        return invalid;
    }
}
