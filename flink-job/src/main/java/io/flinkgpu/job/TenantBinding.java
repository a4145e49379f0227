package io.flinkgpu.job;

import io.flinkgpu.contract.security.Hmac;
import io.flinkgpu.contract.security.Secrets;
import io.flinkgpu.inference.protocol.ErrorCode;
import io.flinkgpu.inference.protocol.RequestParameters;
import java.io.Serializable;
import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.apache.flink.configuration.ReadableConfig;

/**
 * Which tenant a request belongs to, decided from who could write it rather than from what it
 * says ({@link InferenceJobOptions#TENANT_BINDING}):
 *
 * <ul>
 *   <li>{@link Mode#DECLARED}: the request's {@code parameters.tenant}, as written. Any producer
 *       can name any tenant; for a trusted single-team deployment only.
 *   <li>{@link Mode#TOPIC}: the tenant of the topic the record was read from
 *       ({@code inference.tenant.topics.<topic>: <tenant>}); Kafka ACLs decide who may write each
 *       topic. Records of the main requests topic belong to {@code default}.
 *   <li>{@link Mode#SIGNED}: the tenant named by the record's {@value #TENANT_HEADER} header,
 *       proven by its {@value #SIGNATURE_HEADER} header, an HMAC-SHA256 under that tenant's key
 *       ({@code inference.tenant.keys.<tenant>}) of the tenant and the record's value. A missing or
 *       wrong signature is refused as {@code UNAUTHENTICATED}.
 * </ul>
 *
 * A request that claims a tenant other than the bound one is refused as {@code TENANT_MISMATCH};
 * one that claims none (or {@code default}) gets the bound tenant. Keys are held as secret
 * references and read when the parser opens, on the TaskManager.
 */
public final class TenantBinding implements Serializable {
    private static final long serialVersionUID = 1L;

    public static final String TOPICS_PREFIX = "inference.tenant.topics.";
    public static final String KEYS_PREFIX = "inference.tenant.keys.";
    public static final String TENANT_HEADER = "inference-tenant";
    public static final String SIGNATURE_HEADER = "inference-tenant-signature";
    /** Prefixed to what a tenant signs, so that a tenant signature is never valid as anything else. */
    static final byte[] DOMAIN = "flink-gpu-inference tenant v1\n".getBytes(StandardCharsets.UTF_8);
    private static final byte[] SEPARATOR = {'\n'};

    /** How a request's tenant is decided. */
    public enum Mode {
        DECLARED,
        TOPIC,
        SIGNED
    }

    /** The bound tenant, or why there is none. */
    public record Result(String tenant, ErrorCode error, String reason) {
        static Result bound(String tenant) {
            return new Result(tenant, null, null);
        }

        static Result refused(ErrorCode code, String reason) {
            return new Result(null, code, reason);
        }

        public boolean ok() {
            return error == null;
        }
    }

    private final Mode mode;
    private final Map<String, String> topicTenants;
    private final Map<String, String> keyReferences;
    private transient Map<String, byte[]> keys;

    TenantBinding(Mode mode, Map<String, String> topicTenants, Map<String, String> keyReferences) {
        this.mode = mode;
        this.topicTenants = Collections.unmodifiableMap(new TreeMap<>(topicTenants));
        this.keyReferences = Collections.unmodifiableMap(new TreeMap<>(keyReferences));
        check();
    }

    /** From the job's configuration; throws with the reason for an inconsistent one. */
    public static TenantBinding fromConfiguration(ReadableConfig config) {
        Map<String, String> all = config.toMap();
        Map<String, String> keys = Secrets.withPrefix(all, KEYS_PREFIX);
        keys.forEach((tenant, ref) -> Secrets.warnIfLiteral(KEYS_PREFIX + tenant, ref));
        return new TenantBinding(config.get(InferenceJobOptions.TENANT_BINDING),
                Secrets.withPrefix(all, TOPICS_PREFIX), keys);
    }

    /** Trusts the payload's claim. */
    public static TenantBinding declared() {
        return new TenantBinding(Mode.DECLARED, Map.of(), Map.of());
    }

    private void check() {
        switch (mode) {
            case TOPIC -> {
                if (topicTenants.isEmpty()) {
                    throw new IllegalArgumentException("inference.tenant.binding is TOPIC but no "
                            + TOPICS_PREFIX + "<topic>: <tenant> is configured");
                }
                topicTenants.forEach((topic, tenant) -> {
                    if (tenant == null || tenant.isBlank()) {
                        throw new IllegalArgumentException(TOPICS_PREFIX + topic + " names no tenant");
                    }
                });
            }
            case SIGNED -> {
                if (keyReferences.isEmpty()) {
                    throw new IllegalArgumentException("inference.tenant.binding is SIGNED but no "
                            + KEYS_PREFIX + "<tenant>: <secret> is configured");
                }
                // Fail at build time for a reference that cannot be read or a key too short to sign.
                resolvedKeys();
            }
            case DECLARED -> { }
            default -> throw new IllegalStateException(mode.toString());
        }
    }

    public Mode mode() {
        return mode;
    }

    /** The topics the job must read besides its main requests topic (TOPIC mode's tenant topics). */
    public Set<String> extraTopics() {
        return mode == Mode.TOPIC ? new LinkedHashSet<>(topicTenants.keySet()) : Set.of();
    }

    /**
     * The tenant of a request read from {@code record} that claims {@code claimed} (its
     * {@code parameters.tenant}, already defaulted to {@code default}).
     */
    public Result bind(KafkaRecord record, String claimed) {
        String bound;
        switch (mode) {
            case DECLARED:
                return Result.bound(claimed);
            case TOPIC:
                bound = topicTenants.getOrDefault(record.topic(), RequestParameters.DEFAULT_TENANT);
                break;
            case SIGNED:
                String header = record.tenantHeader();
                if (header == null || header.isEmpty()) {
                    return Result.refused(ErrorCode.UNAUTHENTICATED,
                            "the record has no " + TENANT_HEADER + " header (tenants are signed)");
                }
                byte[] key = resolvedKeys().get(header);
                if (key == null || !Hmac.verify(key, record.tenantSignature(), DOMAIN,
                        header.getBytes(StandardCharsets.UTF_8), SEPARATOR, value(record))) {
                    // Unknown tenant and bad signature read alike: neither tells a prober which tenants exist.
                    return Result.refused(ErrorCode.UNAUTHENTICATED, "the " + SIGNATURE_HEADER
                            + " header is missing or does not prove tenant '" + header + "'");
                }
                bound = header;
                break;
            default:
                throw new IllegalStateException(mode.toString());
        }
        if (!claimed.equals(bound) && !claimed.equals(RequestParameters.DEFAULT_TENANT)) {
            return Result.refused(ErrorCode.TENANT_MISMATCH, "the request claims tenant '" + claimed
                    + "' but " + (mode == Mode.TOPIC ? "its topic belongs to tenant '" : "it is signed by tenant '")
                    + bound + "'");
        }
        return Result.bound(bound);
    }

    /** The signature a producer of {@code tenant} puts in {@value #SIGNATURE_HEADER} for {@code value}. */
    public static String sign(byte[] tenantKey, String tenant, byte[] value) {
        return Hmac.sign(tenantKey, DOMAIN, tenant.getBytes(StandardCharsets.UTF_8), SEPARATOR,
                value == null ? new byte[0] : value);
    }

    private static byte[] value(KafkaRecord record) {
        return record.value() == null ? new byte[0] : record.value();
    }

    private Map<String, byte[]> resolvedKeys() {
        if (keys == null) {
            Map<String, byte[]> k = Secrets.resolveAll(keyReferences);
            k.forEach((tenant, key) -> {
                try {
                    Hmac.checkKey(key);
                } catch (IllegalArgumentException e) {
                    throw new IllegalArgumentException(KEYS_PREFIX + tenant + ": " + e.getMessage());
                }
            });
            keys = k;
        }
        return keys;
    }

    @Override
    public String toString() {
        // Never the keys: only the mode and which topics or tenants are configured.
        return "TenantBinding{" + mode + (mode == Mode.TOPIC ? ", topics=" + topicTenants
                : mode == Mode.SIGNED ? ", tenants with keys=" + keyReferences.keySet() : "") + "}";
    }
}
