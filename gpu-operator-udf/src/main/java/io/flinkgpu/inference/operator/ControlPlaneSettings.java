package io.flinkgpu.inference.operator;

import io.flinkgpu.contract.control.PlanVerifier;
import io.flinkgpu.contract.security.Secrets;
import java.io.Serializable;
import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import org.apache.flink.configuration.ReadableConfig;

/**
 * How {@link PlanRouter} checks the signatures of control records: the verify keys, as secret
 * references by key id ({@link GpuInferenceOptions#CONTROL_VERIFY_KEYS}), and whether unsigned
 * plans are refused ({@link GpuInferenceOptions#CONTROL_REQUIRE_SIGNATURE}). Shipped with the job
 * graph as references: {@link #verifier()} resolves them where it runs. No keys: trusted mode.
 * {@link #toString()} names the key ids only.
 */
public final class ControlPlaneSettings implements Serializable {
    private static final long serialVersionUID = 1L;

    private final TreeMap<String, String> verifyKeys;
    private final boolean requireSignature;

    private ControlPlaneSettings(Map<String, String> verifyKeys, boolean requireSignature) {
        this.verifyKeys = new TreeMap<>(verifyKeys);
        this.requireSignature = requireSignature;
    }

    /** Trusted mode: no keys, bare and signed plans alike applied without a check. */
    public static ControlPlaneSettings trusted() {
        return new ControlPlaneSettings(Map.of(), false);
    }

    /**
     * Settings from {@code verifyKeys} (key id -> secret reference) and {@code requireSignature}
     * (empty: true iff there are keys). Throws {@link IllegalArgumentException} for a signature
     * required without keys, and for a key id or key that cannot be used (resolving each
     * reference once, now, so that a bad one fails the job's build rather than its tasks).
     */
    public static ControlPlaneSettings of(Map<String, String> verifyKeys, Optional<Boolean> requireSignature) {
        boolean require = requireSignature.orElse(!verifyKeys.isEmpty());
        if (require && verifyKeys.isEmpty()) {
            throw new IllegalArgumentException(GpuInferenceOptions.CONTROL_REQUIRE_SIGNATURE.key()
                    + " is true but no " + GpuInferenceOptions.CONTROL_VERIFY_KEYS.key() + " is set");
        }
        ControlPlaneSettings settings = new ControlPlaneSettings(verifyKeys, require);
        settings.verifier(); // fail fast
        verifyKeys.forEach((id, reference) ->
                Secrets.warnIfLiteral(GpuInferenceOptions.CONTROL_VERIFY_KEYS_PREFIX + id, reference));
        return settings;
    }

    /** The settings in a Flink configuration (the verify keys by their prefix). */
    public static ControlPlaneSettings fromConfiguration(ReadableConfig config) {
        return of(Secrets.withPrefix(config.toMap(), GpuInferenceOptions.CONTROL_VERIFY_KEYS_PREFIX),
                config.getOptional(GpuInferenceOptions.CONTROL_REQUIRE_SIGNATURE));
    }

    /** The key ids, without their references. */
    public java.util.Set<String> keyIds() {
        return Collections.unmodifiableSet(verifyKeys.keySet());
    }

    public boolean requireSignature() {
        return requireSignature;
    }

    public boolean trustedMode() {
        return verifyKeys.isEmpty();
    }

    /** The verifier, its keys resolved now; null in trusted mode. The message of a failure names the key id. */
    public PlanVerifier verifier() {
        if (verifyKeys.isEmpty()) {
            return null;
        }
        Map<String, byte[]> keys = new TreeMap<>();
        verifyKeys.forEach((id, reference) -> {
            try {
                keys.put(id, Secrets.resolve(reference).getBytes(StandardCharsets.UTF_8));
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException(GpuInferenceOptions.CONTROL_VERIFY_KEYS_PREFIX + id + ": "
                        + e.getMessage());
            }
        });
        try {
            return new PlanVerifier(keys, requireSignature);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(GpuInferenceOptions.CONTROL_VERIFY_KEYS.key() + ": " + e.getMessage());
        }
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof ControlPlaneSettings other && verifyKeys.equals(other.verifyKeys)
                && requireSignature == other.requireSignature;
    }

    @Override
    public int hashCode() {
        return verifyKeys.hashCode() * 31 + Boolean.hashCode(requireSignature);
    }

    @Override
    public String toString() {
        return trustedMode() ? "ControlPlaneSettings[trusted]"
                : "ControlPlaneSettings[key ids " + verifyKeys.keySet() + ", signature "
                        + (requireSignature ? "required" : "optional") + "]";
    }
}
