package io.flinkgpu.contract.control;

/** A control record that cannot be applied; the message says why. */
public class InvalidControlMessageException extends Exception {
    private static final long serialVersionUID = 1L;

    public InvalidControlMessageException(String message) {
        super(message);
    }

    public InvalidControlMessageException(String message, Throwable cause) {
        super(message, cause);
    }
}
