package io.flinkgpu.coordinator.rollout;

import java.time.Duration;
import java.util.List;

/**
 * How rollouts are judged ({@code coordinator.rollout.*}).
 *
 * @param minDwell how long a step lasts at least before it is judged
 * @param minSamples responses each version must have given within the step before it is judged
 * @param significance the one-sided two-proportion z-test's level: B's error rate is worse than
 *     A's when the test's p-value is below it
 * @param latencyTolerance B's p99 batch latency may exceed A's by this fraction
 * @param latencyMinBatches batches each version must have run within the step before their p99s
 *     are compared: the first batch of a freshly loaded version includes its load, and in a short
 *     window that one batch is the p99
 * @param latencyMaxWait how long a step may last (from its start) waiting for both versions to run
 *     {@code latencyMinBatches} batches once its dwell and samples are complete: until then a B that
 *     is not worse by error rate is neither promoted nor judged on latency (error rates are compared
 *     at every collection, so a failing B is rolled back without waiting); past it the step is
 *     judged on error rates alone and the reason says so. Zero: no wait (judged on error rates alone
 *     as soon as dwell and samples are complete)
 * @param latencyGuard B is rolled back at any collection of a step that is not judged yet (before
 *     its dwell and samples are complete, or while it waits for batches) once its batch time at a
 *     common batch size by the latency fits exceeds A's times this factor, where both versions ran
 *     {@code latencyGuardBatches} batches in the step: a B that slow holds up A's requests on the
 *     execution threads they share for the whole dwell otherwise. 0: no guard; else above 1
 * @param latencyGuardBatches batches each version must have run within the step before the guard
 *     compares their fits
 * @param earlySignificance B is rolled back at any collection of a step before its dwell and
 *     samples are complete when the exact one-sided test of "B's error rate is above A's" on the
 *     step's counts (Fisher's, the hypergeometric tail) gives a p-value below this: far stricter than
 *     {@code significance}, as an early look in a group-sequential test is, so that early looks
 *     hardly raise the chance of rolling a good B back. 0: no early look; else at most
 *     {@code significance}
 * @param defaultSteps B's share per canary step (fractions, ascending, the last 1) where a
 *     rollout does not give its own
 * @param defaultShadowFraction the share of requests copied to B in shadow mode where a rollout
 *     does not give its own
 * @param defaultAfterShadow what a passed shadow phase leads to where a rollout does not say
 * @param warmTimeout how long a rollout waits in its warming phase for B to be reported loaded on
 *     the subtasks where A is before B gets traffic anyway; zero: no warming phase, B gets its
 *     first share at once and loads on its first request ({@code coordinator.plan.warm-before-route}
 *     off)
 */
public record RolloutSettings(Duration minDwell, long minSamples, double significance, double latencyTolerance,
        long latencyMinBatches, Duration latencyMaxWait, double latencyGuard, long latencyGuardBatches,
        double earlySignificance, List<Double> defaultSteps, double defaultShadowFraction,
        Rollout.AfterShadow defaultAfterShadow, Duration warmTimeout) {
    public static final List<Double> STEPS = List.of(0.05, 0.25, 0.5, 1.0);

    public RolloutSettings {
        if (minDwell == null || minDwell.isNegative()) {
            throw new IllegalArgumentException("coordinator.rollout.min-dwell must not be negative");
        }
        if (minSamples < 1) {
            throw new IllegalArgumentException("coordinator.rollout.min-samples must be at least 1");
        }
        if (!(significance > 0 && significance < 0.5)) {
            throw new IllegalArgumentException("coordinator.rollout.significance must be in (0, 0.5)");
        }
        if (!(latencyTolerance >= 0) || !Double.isFinite(latencyTolerance)) {
            throw new IllegalArgumentException("coordinator.rollout.latency-tolerance must be a finite number >= 0");
        }
        if (latencyMinBatches < 0) {
            throw new IllegalArgumentException("coordinator.rollout.latency-min-batches must not be negative");
        }
        if (latencyMaxWait == null || latencyMaxWait.isNegative()) {
            throw new IllegalArgumentException("coordinator.rollout.latency-max-wait must not be negative");
        }
        if (!(latencyGuard == 0 || latencyGuard > 1) || !Double.isFinite(latencyGuard)) {
            throw new IllegalArgumentException("coordinator.rollout.latency-guard must be 0 (off) or above 1");
        }
        if (latencyGuardBatches < 1) {
            throw new IllegalArgumentException("coordinator.rollout.latency-guard-batches must be at least 1");
        }
        if (!(earlySignificance >= 0 && earlySignificance <= significance)) {
            throw new IllegalArgumentException("coordinator.rollout.early-significance must be in [0, "
                    + "coordinator.rollout.significance]");
        }
        String bad = RolloutEngine.checkSteps(defaultSteps);
        if (bad != null) {
            throw new IllegalArgumentException("coordinator.rollout.steps: " + bad);
        }
        if (!(defaultShadowFraction > 0 && defaultShadowFraction <= 1)) {
            throw new IllegalArgumentException("coordinator.rollout.shadow-fraction must be in (0, 1]");
        }
        defaultSteps = List.copyOf(defaultSteps);
        if (defaultAfterShadow == null) {
            defaultAfterShadow = Rollout.AfterShadow.CANARY;
        }
        if (warmTimeout == null || warmTimeout.isNegative()) {
            throw new IllegalArgumentException("coordinator.plan.warm-timeout must not be negative");
        }
    }

    /** Without a warming phase: B gets its first share at once. */
    public RolloutSettings(Duration minDwell, long minSamples, double significance, double latencyTolerance,
            long latencyMinBatches, Duration latencyMaxWait, double latencyGuard, long latencyGuardBatches,
            double earlySignificance, List<Double> defaultSteps, double defaultShadowFraction,
            Rollout.AfterShadow defaultAfterShadow) {
        this(minDwell, minSamples, significance, latencyTolerance, latencyMinBatches, latencyMaxWait, latencyGuard,
                latencyGuardBatches, earlySignificance, defaultSteps, defaultShadowFraction, defaultAfterShadow,
                Duration.ZERO);
    }

    /** Whether a rollout warms B where A is loaded before B gets traffic. */
    public boolean warms() {
        return !warmTimeout.isZero();
    }

    /** The options' defaults. */
    public static RolloutSettings defaults() {
        return new RolloutSettings(Duration.ofMinutes(2), 200, 0.01, 0.2, 200, Duration.ofMinutes(10), 5, 10, 1e-4,
                STEPS, 0.1, Rollout.AfterShadow.CANARY, Duration.ofSeconds(30));
    }
}
