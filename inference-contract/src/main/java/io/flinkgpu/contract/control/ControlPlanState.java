package io.flinkgpu.contract.control;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The plan a job currently follows, and the gate every control record passes: with a
 * {@link PlanVerifier}, a record whose signature does not verify (unknown key id, tampered or
 * forged) is refused, and so is an unsigned one (a bare plan, an envelope without signature)
 * where the verifier requires signatures; a record that does not decode or validate is logged
 * and counted, a record whose epoch is not newer than the current plan's is ignored (replays of
 * old signed plans, reordering, a stale coordinator), and only a newer valid plan replaces the
 * current one. Without a verifier (trusted mode) a bare plan is taken as it is, and so is the
 * plan inside an envelope, unverified, so that a coordinator can sign before its jobs verify.
 * Refusals are logged with the key id, never with key material. Nothing here throws on bad input.
 */
public final class ControlPlanState {
    private static final Logger LOG = LoggerFactory.getLogger(ControlPlanState.class);

    /** What became of one control record. */
    public enum Outcome {
        APPLIED,
        STALE,
        INVALID,
        /** Refused: no signature where the verifier requires one. */
        UNSIGNED,
        /** Refused: signed under an unknown key id, or a signature that does not match. */
        BAD_SIGNATURE
    }

    private final PlanVerifier verifier;
    private ControlMessage current;
    private long applied;
    private long stale;
    private long invalid;
    private long unsigned;
    private long badSignature;

    /** Trusted mode, no plan yet. */
    public ControlPlanState() {
        this(null, null);
    }

    /** Trusted mode, from a plan restored from state (null: none). */
    public ControlPlanState(ControlMessage restored) {
        this(restored, null);
    }

    /** From a plan restored from state (null: none), checking records with {@code verifier} (null: trusted mode). */
    public ControlPlanState(ControlMessage restored, PlanVerifier verifier) {
        this.current = restored;
        this.verifier = verifier;
    }

    /** The verifier records are checked with, or null in trusted mode. */
    public PlanVerifier verifier() {
        return verifier;
    }

    public Outcome offer(byte[] record) {
        byte[] planBytes;
        try {
            if (verifier == null) {
                planBytes = unverifiedPlan(record);
            } else {
                PlanVerifier.Result checked = verifier.verify(record);
                Outcome refused = refusal(checked);
                if (refused != null) {
                    return refused;
                }
                planBytes = checked.plan();
            }
        } catch (InvalidControlMessageException e) {
            invalid++;
            LOG.warn("Ignoring an invalid control record (counted as recordsInvalid): {}", e.getMessage());
            return Outcome.INVALID;
        }
        ControlMessage message;
        try {
            message = ControlMessageCodec.decode(planBytes);
        } catch (InvalidControlMessageException e) {
            invalid++;
            LOG.warn("Ignoring an invalid control record (counted as recordsInvalid): {}", e.getMessage());
            return Outcome.INVALID;
        }
        return offer(message);
    }

    /** The plan bytes of a record in trusted mode: an envelope's, unverified, or the record itself. */
    private static byte[] unverifiedPlan(byte[] record) throws InvalidControlMessageException {
        PlanEnvelope envelope = PlanEnvelope.parse(record);
        return envelope == null ? record : envelope.plan();
    }

    /** Null where {@code checked} may be applied; else the refusal, counted and logged. */
    private Outcome refusal(PlanVerifier.Result checked) {
        switch (checked.verdict()) {
            case VALID -> {
                return null;
            }
            case UNSIGNED -> {
                if (!verifier.requireSignature()) {
                    return null;
                }
                unsigned++;
                LOG.warn("Refusing an unsigned control record: this job requires signed plans");
                return Outcome.UNSIGNED;
            }
            case UNKNOWN_KEY -> {
                badSignature++;
                LOG.warn("Refusing a control record signed under unknown key id {}; known: {}",
                        printable(checked.keyId()), verifier.keyIds());
                return Outcome.BAD_SIGNATURE;
            }
            default -> {
                badSignature++;
                LOG.warn("Refusing a control record whose signature under key id {} does not match its plan",
                        printable(checked.keyId()));
                return Outcome.BAD_SIGNATURE;
            }
        }
    }

    /** A key id fit for a log line (it comes from the record, so it may be anything). */
    private static String printable(String keyId) {
        if (keyId == null) {
            return "(none)";
        }
        return PlanEnvelope.isValidKeyId(keyId) ? "'" + keyId + "'" : "(not a valid key id)";
    }

    /** A message already in hand (in-process, so no signature to check). */
    public Outcome offer(ControlMessage message) {
        try {
            ControlMessageCodec.validate(message);
        } catch (InvalidControlMessageException e) {
            invalid++;
            LOG.warn("Ignoring an invalid control message (counted as recordsInvalid): {}", e.getMessage());
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

    /** Records refused for want of a signature. */
    public long unsignedCount() {
        return unsigned;
    }

    /** Records refused for an unknown key id or a signature that does not match. */
    public long badSignatureCount() {
        return badSignature;
    }
}
