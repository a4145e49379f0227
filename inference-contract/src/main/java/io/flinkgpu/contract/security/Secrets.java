package io.flinkgpu.contract.security;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Objects;
import java.util.function.Function;

/**
 * Secret values in configuration: {@code file:/path} (the file's content, without its trailing
 * line break), {@code env:NAME} (an environment variable), anything else as written. A reference
 * that cannot be read fails with the reference in the message, never the secret. Nothing here logs a
 * secret ({@link #warnIfLiteral} logs an option's name).
 */
public final class Secrets {
    public static final String FILE_PREFIX = "file:";
    public static final String ENV_PREFIX = "env:";

    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(Secrets.class);

    private Secrets() {}

    /** Whether {@code reference} names where a secret is ({@code file:} or {@code env:}) rather than holding it. */
    public static boolean isReference(String reference) {
        return reference != null && (reference.startsWith(FILE_PREFIX) || reference.startsWith(ENV_PREFIX));
    }

    /**
     * Warns that option {@code option} holds a secret itself rather than a reference to it: such a
     * value travels in the job graph, and Flink logs and shows the values of options whose name
     * lacks 'secret' or 'password'. Logs the option's name only.
     */
    public static void warnIfLiteral(String option, String reference) {
        if (!isReference(reference)) {
            LOG.warn("{} holds the key itself: it travels in the job graph, and Flink logs and shows values of "
                    + "options whose name lacks 'secret' or 'password'; prefer {}/path or {}NAME", option,
                    FILE_PREFIX, ENV_PREFIX);
        }
    }

    /** The secret {@code reference} names, read now. */
    public static String resolve(String reference) {
        return resolve(reference, System::getenv);
    }

    /** As {@link #resolve(String)}, with {@code env} instead of the process environment. */
    public static String resolve(String reference, Function<String, String> env) {
        Objects.requireNonNull(reference, "secret reference");
        if (reference.startsWith(FILE_PREFIX)) {
            Path path = Path.of(reference.substring(FILE_PREFIX.length()));
            try {
                return stripLineBreak(Files.readString(path, StandardCharsets.UTF_8));
            } catch (IOException | RuntimeException e) {
                throw new IllegalArgumentException("cannot read the secret file " + path + ": "
                        + e.getClass().getSimpleName());
            }
        }
        if (reference.startsWith(ENV_PREFIX)) {
            String name = reference.substring(ENV_PREFIX.length());
            String value = env.apply(name);
            if (value == null) {
                throw new IllegalArgumentException("the environment variable " + name + " (a secret) is not set");
            }
            return value;
        }
        return reference;
    }

    /** Every entry's value resolved with {@link #resolve(String)}; keys and order kept. */
    public static Map<String, byte[]> resolveAll(Map<String, String> references) {
        Map<String, byte[]> out = new java.util.LinkedHashMap<>();
        references.forEach((k, v) -> out.put(k, resolve(v).getBytes(StandardCharsets.UTF_8)));
        return out;
    }

    /**
     * The entries of {@code config} under {@code prefix}, the prefix removed (e.g. every
     * {@code inference.kafka.properties.*} key). Keys equal to the prefix alone are skipped.
     */
    public static Map<String, String> withPrefix(Map<String, String> config, String prefix) {
        Map<String, String> out = new java.util.TreeMap<>();
        config.forEach((k, v) -> {
            if (k.startsWith(prefix) && k.length() > prefix.length()) {
                out.put(k.substring(prefix.length()), v);
            }
        });
        return out;
    }

    private static String stripLineBreak(String s) {
        if (s.endsWith("\r\n")) {
            return s.substring(0, s.length() - 2);
        }
        return s.endsWith("\n") ? s.substring(0, s.length() - 1) : s;
    }
}
