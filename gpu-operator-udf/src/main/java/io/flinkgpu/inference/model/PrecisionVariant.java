package io.flinkgpu.inference.model;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonProperty;
import java.io.Serializable;
import java.util.Locale;
import java.util.regex.Pattern;

/**
 * A lower-precision file of the same model version, in the version directory beside
 * {@code model.onnx}, with its declared accuracy cost (absolute top-1 accuracy lost, 0..1).
 *
 * @param precision e.g. {@code FP16} or {@code INT8}
 * @param file a plain file name in the version directory, e.g. {@code model.int8.onnx}
 * @param accuracyCost the declared loss of accuracy against the full-precision model
 */
public record PrecisionVariant(
        @JsonProperty("precision") String precision,
        @JsonProperty("file") String file,
        @JsonProperty("accuracy_cost") double accuracyCost) implements Serializable {

    private static final Pattern SAFE_FILE = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,127}\\.onnx");

    @JsonCreator
    public PrecisionVariant {
        if (precision == null || precision.isBlank()) {
            throw new IllegalArgumentException("a precision variant needs a precision");
        }
        precision = precision.toUpperCase(Locale.ROOT);
        if (file == null || !SAFE_FILE.matcher(file).matches() || file.equals(ModelRepository.MODEL_FILE)) {
            throw new IllegalArgumentException("precision variant " + precision + ": file must be a plain *.onnx name "
                    + "in the version directory other than model.onnx, got " + file);
        }
        if (accuracyCost < 0 || accuracyCost > 1) {
            throw new IllegalArgumentException("precision variant " + precision + ": accuracy_cost must be within 0..1");
        }
    }
}
