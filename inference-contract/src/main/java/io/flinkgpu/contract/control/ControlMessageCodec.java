package io.flinkgpu.contract.control;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.json.JsonMapper;
import java.io.IOException;
import java.util.HashSet;
import java.util.Set;

/**
 * JSON of {@link ControlMessage} (snake_case field names, like model configs) and the checks a
 * control record must pass before a job acts on it. Decoding never throws anything but
 * {@link InvalidControlMessageException}, whatever the bytes.
 */
public final class ControlMessageCodec {
    /** Control records larger than this are refused unread. */
    public static final int MAX_RECORD_BYTES = 4 * 1024 * 1024;
    static final int MAX_NAME_LENGTH = 256;

    private static final ObjectMapper MAPPER = JsonMapper.builder()
            .propertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE)
            .enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION)
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
            .build();

    private ControlMessageCodec() {}

    public static byte[] encode(ControlMessage message) {
        try {
            return MAPPER.writeValueAsBytes(message);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("cannot encode control message", e);
        }
    }

    public static String toJson(ControlMessage message) {
        try {
            return MAPPER.writerWithDefaultPrettyPrinter().writeValueAsString(message);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("cannot encode control message", e);
        }
    }

    /** Parses and validates a control record. */
    public static ControlMessage decode(byte[] bytes) throws InvalidControlMessageException {
        if (bytes == null || bytes.length == 0) {
            throw new InvalidControlMessageException("empty control record");
        }
        if (bytes.length > MAX_RECORD_BYTES) {
            throw new InvalidControlMessageException(
                    "control record of " + bytes.length + " bytes exceeds " + MAX_RECORD_BYTES);
        }
        ControlMessage message;
        try {
            message = MAPPER.readValue(bytes, ControlMessage.class);
        } catch (IOException | RuntimeException e) {
            throw new InvalidControlMessageException("malformed control record: " + firstLine(e.getMessage()), e);
        }
        if (message == null) {
            throw new InvalidControlMessageException("control record is JSON null");
        }
        validate(message);
        return message;
    }

    /** Throws with the first problem found, or returns if {@code m} can be applied. */
    public static void validate(ControlMessage m) throws InvalidControlMessageException {
        if (m.schemaVersion() < 1 || m.schemaVersion() > ControlMessage.SCHEMA_VERSION) {
            throw new InvalidControlMessageException("unsupported schema_version " + m.schemaVersion()
                    + "; this job reads 1.." + ControlMessage.SCHEMA_VERSION);
        }
        if (m.epoch() < 1) {
            throw new InvalidControlMessageException("epoch must be at least 1, got " + m.epoch());
        }
        if (m.parallelism() < 0) {
            throw new InvalidControlMessageException("parallelism must not be negative, got " + m.parallelism());
        }
        Set<String> models = new HashSet<>();
        for (ModelRoute route : m.routes()) {
            if (route == null) {
                throw new InvalidControlMessageException("null route");
            }
            checkName("route model", route.model());
            if (!models.add(route.model())) {
                throw new InvalidControlMessageException("model '" + route.model() + "' is routed twice");
            }
            if (route.targets().isEmpty()) {
                throw new InvalidControlMessageException("model '" + route.model() + "' has no targets");
            }
            Set<Integer> subtasks = new HashSet<>();
            for (RouteTarget t : route.targets()) {
                if (t == null) {
                    throw new InvalidControlMessageException("null target for model '" + route.model() + "'");
                }
                checkSubtask("route of '" + route.model() + "'", t.subtask(), m.parallelism());
                if (!subtasks.add(t.subtask())) {
                    throw new InvalidControlMessageException(
                            "model '" + route.model() + "' lists subtask " + t.subtask() + " twice");
                }
                if (!Double.isFinite(t.weight()) || t.weight() <= 0) {
                    throw new InvalidControlMessageException("weight of subtask " + t.subtask() + " for model '"
                            + route.model() + "' must be positive and finite, got " + t.weight());
                }
            }
        }
        Set<String> split = new HashSet<>();
        for (VersionSplit v : m.versionSplits()) {
            if (v == null) {
                throw new InvalidControlMessageException("null version split");
            }
            checkName("version split model", v.model());
            if (!split.add(v.model())) {
                throw new InvalidControlMessageException("model '" + v.model() + "' has two version splits");
            }
            if (v.versions().isEmpty()) {
                throw new InvalidControlMessageException("the version split of '" + v.model() + "' has no versions");
            }
            Set<String> versions = new HashSet<>();
            for (VersionSplit.VersionWeight w : v.versions()) {
                if (w == null) {
                    throw new InvalidControlMessageException("null version in the split of '" + v.model() + "'");
                }
                checkName("version of '" + v.model() + "'", w.version());
                if (!versions.add(w.version())) {
                    throw new InvalidControlMessageException("the split of '" + v.model() + "' lists version "
                            + w.version() + " twice");
                }
                if (!Double.isFinite(w.weight()) || w.weight() < 0) {
                    throw new InvalidControlMessageException("weight of version " + w.version() + " of '"
                            + v.model() + "' must be finite and not negative, got " + w.weight());
                }
            }
            if (v.versions().stream().mapToDouble(VersionSplit.VersionWeight::weight).sum() <= 0) {
                throw new InvalidControlMessageException("the split of '" + v.model() + "' has no positive weight");
            }
            if (v.shadow() != null) {
                checkName("shadow version of '" + v.model() + "'", v.shadow());
                if (!(v.shadowFraction() > 0 && v.shadowFraction() <= 1)) {
                    throw new InvalidControlMessageException("shadow_fraction of '" + v.model()
                            + "' must be in (0, 1], got " + v.shadowFraction());
                }
            }
        }
        for (SubtaskCommand c : m.commands()) {
            if (c == null) {
                throw new InvalidControlMessageException("null command");
            }
            if (c.action() == null) {
                throw new InvalidControlMessageException("command for subtask " + c.subtask() + " has no action");
            }
            checkName("command model", c.model());
            checkSubtask(c.action() + " " + c.model(), c.subtask(), m.parallelism());
        }
    }

    private static void checkName(String what, String name) throws InvalidControlMessageException {
        if (name == null || name.isBlank()) {
            throw new InvalidControlMessageException(what + " is missing");
        }
        if (name.length() > MAX_NAME_LENGTH) {
            throw new InvalidControlMessageException(what + " is longer than " + MAX_NAME_LENGTH + " characters");
        }
    }

    private static void checkSubtask(String what, int subtask, int parallelism) throws InvalidControlMessageException {
        if (subtask < 0 || (parallelism > 0 && subtask >= parallelism)) {
            throw new InvalidControlMessageException(what + ": subtask " + subtask + " is outside 0.."
                    + (parallelism > 0 ? String.valueOf(parallelism - 1) : "") + " of the plan's parallelism");
        }
    }

    private static String firstLine(String s) {
        if (s == null) {
            return "";
        }
        int nl = s.indexOf('\n');
        return nl < 0 ? s : s.substring(0, nl);
    }
}
