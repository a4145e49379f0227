package io.flinkgpu.coordinator.rollout;

/**
 * A rollout request that cannot be carried out, with the HTTP status the admin API answers it
 * with: 400 invalid input, 404 no such rollout, 409 not in a state that allows it.
 */
public final class RolloutException extends Exception {
    private static final long serialVersionUID = 1L;
    private final int status;

    public RolloutException(int status, String message) {
        super(message, null, false, false);
        this.status = status;
    }

    public int status() {
        return status;
    }
}
