package io.flinkgpu.coordinator.plan;

/**
 * A relocation of one instance of {@code model} from one device to another.
 *
 * @param reversal whether it undid an earlier move of the same model (back to where it came from)
 */
public record MoveRecord(String model, String from, String to, long atMillis, boolean reversal) {}
