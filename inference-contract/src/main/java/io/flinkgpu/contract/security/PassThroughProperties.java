package io.flinkgpu.contract.security;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

/**
 * Client properties passed through from configuration under a prefix, e.g. every
 * {@code inference.kafka.properties.<kafka key>} to the job's Kafka clients: the entries under the
 * prefix ({@link Secrets#withPrefix}), minus the prefix, with the keys the caller owns refused.
 * Values are handed on as written (Kafka's own config providers resolve {@code ${file:...}} and
 * {@code ${env:...}} references in them); no message here ever contains a value.
 */
public final class PassThroughProperties {
    private PassThroughProperties() {}

    /**
     * The entries of {@code config} under {@code prefix + "."}, the prefix removed, in key order.
     *
     * @param config the whole configuration (key to value as written)
     * @param prefix the prefix without its trailing dot, e.g. {@code inference.kafka.properties}
     * @param refused keys the caller sets itself or that would break it, each with the reason shown
     *     when it appears under the prefix (e.g. {@code bootstrap.servers -> "set
     *     inference.kafka.bootstrap-servers instead"})
     * @throws IllegalArgumentException if {@code prefix} itself is set (one value instead of one key
     *     per property) or a refused key is; the message names every such key and why, never a value
     */
    public static Map<String, String> read(Map<String, String> config, String prefix, Map<String, String> refused) {
        Objects.requireNonNull(config, "config");
        Objects.requireNonNull(prefix, "prefix");
        Objects.requireNonNull(refused, "refused");
        if (config.containsKey(prefix)) {
            throw new IllegalArgumentException(prefix + " cannot be set as one value: set each client property "
                    + "as its own key, " + prefix + ".<property>: <value> (e.g. " + prefix
                    + ".security.protocol: SASL_SSL)");
        }
        Map<String, String> out = new TreeMap<>(Secrets.withPrefix(config, prefix + "."));
        List<String> problems = new ArrayList<>();
        for (String key : out.keySet()) {
            String why = refused.get(key);
            if (why != null) {
                problems.add(prefix + "." + key + " (" + why + ")");
            }
        }
        if (!problems.isEmpty()) {
            throw new IllegalArgumentException("not allowed under " + prefix + ".*: " + String.join("; ", problems));
        }
        return out;
    }
}
