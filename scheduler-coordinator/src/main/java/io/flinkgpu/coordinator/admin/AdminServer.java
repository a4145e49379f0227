package io.flinkgpu.coordinator.admin;

import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import com.sun.net.httpserver.HttpsConfigurator;
import com.sun.net.httpserver.HttpsParameters;
import com.sun.net.httpserver.HttpsServer;
import io.flinkgpu.coordinator.Coordinator;
import io.flinkgpu.coordinator.realize.Rescaler;
import io.flinkgpu.coordinator.state.ModelInfo;
import io.flinkgpu.coordinator.state.StateStore;
import io.flinkgpu.contract.control.ControlMessageCodec;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.regex.Pattern;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The admin REST API (JDK {@code com.sun.net.httpserver}; HTTPS with {@link AdminSettings#tls}).
 * Every {@code /api/...} request needs {@code Authorization: Bearer <token>}: the admin token
 * allows every method, the read token GET only (403 for others); none or a wrong one gets 401.
 * {@code /metrics} needs one of the two as well unless {@link AdminSettings#metricsOpen}. Bodies
 * are JSON; invalid input gets 400 with our reason (never a library's message), an unexpected
 * failure 500 with a reference that the log line of its exception carries.
 *
 * <pre>
 * GET    /api/status                  epoch, paused, last cycle
 * GET    /api/devices                 devices with their subtasks, memory and load
 * GET    /api/models                  catalog and measured demand
 * POST   /api/models                  {"name","version","memory_bytes","slo_ms"}: deploy
 * DELETE /api/models/{name}           undeploy
 * GET    /api/placements              model -> devices
 * GET    /api/plan                    the last plan (control-topic JSON)
 * GET    /api/decisions?limit=N       recent decisions with reasons
 * GET    /api/rescales                the rescales the coordinator started (automatic and requested)
 * GET    /api/tenants                 DRF weights
 * GET    /api/tenants/usage           each tenant's share of the fleet at the last plan (cost split)
 * PUT    /api/tenants/{name}          {"weight": w}
 * POST   /api/pause, /api/resume      automatic rebalancing off/on
 * PUT    /api/parallelism             {"parallelism": n}: rescale the inference vertex (adaptive scheduler)
 * GET    /api/rollouts[/{model}]      gray releases; POST /api/rollouts to start one,
 *                                     POST /api/rollouts/{model}/pause|resume|abort, DELETE /api/rollouts/{model}
 *                                     ({@link RolloutApi})
 * GET    /metrics                     Prometheus text (read or admin token unless coordinator.admin.metrics.open)
 * </pre>
 */
public final class AdminServer implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(AdminServer.class);
    static final Pattern NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,127}");
    private static final int MAX_BODY = 64 * 1024;
    static final double MAX_WEIGHT = 1_000;
    static final int MAX_PARALLELISM = 1024;
    private static final SecureRandom REFERENCES = new SecureRandom();

    /** Who a request's bearer token says it comes from. */
    enum Role { NONE, READ, ADMIN }

    private final HttpServer server;
    private final boolean https;
    private final ExecutorService executor;
    private final Coordinator coordinator;
    private final StateStore store;
    private final byte[] adminDigest;
    private final byte[] readDigest;
    private final boolean metricsOpen;
    private final Rescaler rescaler;
    private final RolloutApi rollouts;
    private final ObjectMapper json = JsonMapper.builder()
            .disable(SerializationFeature.FAIL_ON_EMPTY_BEANS)
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
            .build();

    public AdminServer(String bindAddress, int port, String token, Coordinator coordinator) throws IOException {
        this(AdminSettings.of(bindAddress, port, token), coordinator, null);
    }

    /** With {@code rescaler}, {@code PUT /api/parallelism} changes the inference vertex's parallelism. */
    public AdminServer(String bindAddress, int port, String token, Coordinator coordinator,
            Rescaler rescaler) throws IOException {
        this(AdminSettings.of(bindAddress, port, token), coordinator, rescaler);
    }

    /** The API as {@code settings} say (tokens, /metrics, TLS); {@code rescaler} may be null. */
    public AdminServer(AdminSettings settings, Coordinator coordinator, Rescaler rescaler) throws IOException {
        this.adminDigest = digest(settings.adminToken());
        this.readDigest = settings.readToken() == null ? null : digest(settings.readToken());
        this.metricsOpen = settings.metricsOpen();
        this.coordinator = coordinator;
        this.store = coordinator.store();
        this.rescaler = rescaler;
        this.rollouts = new RolloutApi(coordinator);
        InetSocketAddress address = new InetSocketAddress(settings.bindAddress(), settings.port());
        SSLContext tls = settings.tls();
        this.https = tls != null;
        if (tls != null) {
            String[] protocols = AdminTls.protocols(tls);
            HttpsServer s = HttpsServer.create(address, 0);
            s.setHttpsConfigurator(new HttpsConfigurator(tls) {
                @Override
                public void configure(HttpsParameters params) {
                    SSLParameters p = getSSLContext().getDefaultSSLParameters();
                    p.setProtocols(protocols);
                    p.setNeedClientAuth(false);
                    params.setSSLParameters(p);
                }
            });
            this.server = s;
        } else {
            this.server = HttpServer.create(address, 0);
        }
        this.executor = Executors.newFixedThreadPool(2, r -> {
            Thread t = new Thread(r, "coordinator-admin");
            t.setDaemon(true);
            return t;
        });
        server.setExecutor(executor);
        server.createContext("/", this::notFound);
        server.createContext("/api/", this::api);
        server.createContext("/metrics", this::metrics);
        server.start();
        LOG.info("Admin API on {}://{}:{} (read token {}, /metrics {})", https ? "https" : "http",
                settings.bindAddress(), port(), readDigest == null ? "none" : "set",
                metricsOpen ? "open to all" : "behind a token");
    }

    public int port() {
        return server.getAddress().getPort();
    }

    /** {@code https} or {@code http}. */
    public String scheme() {
        return https ? "https" : "http";
    }

    private void notFound(HttpExchange ex) throws IOException {
        try (ex) {
            error(ex, 404, "no such endpoint");
        }
    }

    private void metrics(HttpExchange ex) throws IOException {
        try (ex) {
            if (!ex.getRequestURI().getPath().equals("/metrics")) {
                error(ex, 404, "no such endpoint");
                return;
            }
            if (!metricsOpen && role(ex) == Role.NONE) {
                unauthorized(ex);
                return;
            }
            if (!ex.getRequestMethod().equals("GET")) {
                ex.getResponseHeaders().set("Allow", "GET");
                error(ex, 405, "/metrics allows GET only");
                return;
            }
            byte[] text;
            try {
                text = coordinator.metrics().prometheusText().getBytes(StandardCharsets.UTF_8);
            } catch (RuntimeException e) {
                internalError(ex, e);
                return;
            }
            respond(ex, 200, "text/plain; version=0.0.4; charset=utf-8", text);
        }
    }

    private void api(HttpExchange ex) throws IOException {
        try (ex) {
            Role role = role(ex);
            if (role == Role.NONE) {
                unauthorized(ex);
                return;
            }
            if (role == Role.READ && !ex.getRequestMethod().equals("GET")) {
                error(ex, 403, "the read token allows GET only; " + ex.getRequestMethod() + " needs the admin token");
                return;
            }
            try {
                route(ex);
            } catch (BadRequest e) {
                if (e.reference != null) {
                    respond(ex, e.status, "application/json", json.writeValueAsBytes(
                            Map.of("error", e.getMessage(), "reference", e.reference)));
                } else {
                    error(ex, e.status, e.getMessage());
                }
            } catch (RuntimeException e) {
                internalError(ex, e);
            }
        }
    }

    /** 500 with a fresh reference; the exception goes to the log under it, never into the answer. */
    private void internalError(HttpExchange ex, RuntimeException e) {
        String reference = reference();
        LOG.error("Admin API {} {} failed (reference {})", ex.getRequestMethod(), ex.getRequestURI().getRawPath(),
                reference, e);
        try {
            Map<String, String> body = new LinkedHashMap<>();
            body.put("error", "internal error");
            body.put("reference", reference);
            respond(ex, 500, "application/json", json.writeValueAsBytes(body));
        } catch (IOException | RuntimeException failed) {
            // headers already sent or the client went away: the log has it
        }
    }

    static String reference() {
        byte[] b = new byte[8];
        REFERENCES.nextBytes(b);
        return HexFormat.of().formatHex(b);
    }

    private void unauthorized(HttpExchange ex) throws IOException {
        ex.getResponseHeaders().add("WWW-Authenticate", "Bearer realm=\"coordinator\"");
        error(ex, 401, "missing or wrong bearer token");
    }

    /**
     * The request's role by its bearer token. Both tokens are compared every time, as SHA-256
     * digests with {@link MessageDigest#isEqual} (constant time, and equal lengths whatever was sent).
     */
    Role role(HttpExchange ex) {
        String h = ex.getRequestHeaders().getFirst("Authorization");
        if (h == null || h.length() <= 7 || !h.regionMatches(true, 0, "Bearer ", 0, 7)) {
            return Role.NONE;
        }
        byte[] presented = digest(h.substring(7).trim());
        boolean admin = MessageDigest.isEqual(presented, adminDigest);
        boolean read = readDigest != null && MessageDigest.isEqual(presented, readDigest);
        return admin ? Role.ADMIN : read ? Role.READ : Role.NONE;
    }

    private static byte[] digest(String token) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(token.getBytes(StandardCharsets.UTF_8));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is part of every JVM", e);
        }
    }

    private void route(HttpExchange ex) throws IOException, BadRequest {
        String method = ex.getRequestMethod();
        URI uri = ex.getRequestURI();
        String path = uri.getPath();
        switch (method + " " + path) {
            case "GET /api/status" -> {
                Map<String, Object> s = new LinkedHashMap<>();
                s.put("epoch", store.lastEpoch());
                s.put("paused", store.paused());
                s.put("plansPublished", coordinator.metrics().plansPublished());
                s.put("lastCollection", coordinator.lastDemand() == null ? null : coordinator.lastDemand().atMillis());
                ok(ex, s);
            }
            case "GET /api/devices" -> ok(ex, coordinator.lastDemand() == null ? Map.of()
                    : coordinator.lastDemand().devices());
            case "GET /api/models" -> {
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("catalog", store.models());
                m.put("demand", coordinator.lastDemand() == null ? Map.of() : coordinator.lastDemand().models());
                ok(ex, m);
            }
            case "POST /api/models" -> {
                JsonNode body = body(ex);
                String name = body.path("name").asText("");
                if (!NAME.matcher(name).matches()) {
                    throw new BadRequest(400, "name must match " + NAME.pattern());
                }
                String version = body.hasNonNull("version") ? body.get("version").asText() : null;
                if (version != null && !version.matches("[1-9][0-9]{0,8}")) {
                    throw new BadRequest(400, "version must be a positive integer");
                }
                long memory = body.path("memory_bytes").asLong(0);
                long slo = body.path("slo_ms").asLong(0);
                if (memory < 0 || slo < 0) {
                    throw new BadRequest(400, "memory_bytes and slo_ms must not be negative");
                }
                ModelInfo info = new ModelInfo(name, version, memory, slo, true);
                store.putModel(info);
                ok(ex, info);
            }
            case "GET /api/placements" -> ok(ex, store.placement().devicesByModel());
            case "GET /api/plan" -> {
                var plan = store.lastPlan();
                if (plan.isEmpty()) {
                    throw new BadRequest(404, "no plan yet");
                }
                respond(ex, 200, "application/json", ControlMessageCodec.toJson(plan.get()).getBytes(StandardCharsets.UTF_8));
            }
            case "GET /api/rescales" -> ok(ex, store.rescales());
            case "GET /api/decisions" -> {
                int limit = 50;
                String q = uri.getQuery();
                if (q != null && q.startsWith("limit=")) {
                    try {
                        limit = Integer.parseInt(q.substring("limit=".length()));
                    } catch (NumberFormatException e) {
                        throw new BadRequest(400, "limit must be an integer");
                    }
                    if (limit < 1 || limit > 10_000) {
                        throw new BadRequest(400, "limit must be 1..10000");
                    }
                }
                ok(ex, store.recentDecisions(limit));
            }
            case "GET /api/tenants" -> ok(ex, store.tenantWeights());
            case "GET /api/tenants/usage" -> ok(ex, coordinator.lastTenantUsage());
            case "POST /api/pause" -> {
                store.setPaused(true);
                coordinator.metrics().paused(true);
                ok(ex, Map.of("paused", true));
            }
            case "PUT /api/parallelism" -> {
                if (rescaler == null) {
                    throw new BadRequest(404, "rescaling is not enabled");
                }
                JsonNode n = body(ex).get("parallelism");
                if (n == null || !n.isInt() || n.asInt() < 1 || n.asInt() > MAX_PARALLELISM) {
                    throw new BadRequest(400, "parallelism must be an integer in 1.." + MAX_PARALLELISM);
                }
                var snapshot = coordinator.lastSnapshot();
                if (snapshot == null) {
                    throw new BadRequest(409, "no job seen yet: the coordinator has not collected metrics");
                }
                try {
                    rescaler.setParallelism(snapshot.jobId(), snapshot.vertexId(), n.asInt());
                } catch (IOException e) {
                    // Flink's answer can carry its stack traces: the log gets it, the caller a reference
                    String reference = reference();
                    LOG.warn("Rescaling through the admin API failed (reference {}): {}", reference, e.toString());
                    throw new BadRequest(502, "Flink's REST API refused or failed the rescale; the coordinator's "
                            + "log has its answer", reference);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new BadRequest(503, "interrupted");
                }
                String why = "inference parallelism " + snapshot.parallelism() + " -> " + n.asInt()
                        + " requested through the admin API";
                long at = System.currentTimeMillis();
                store.appendRescale(new io.flinkgpu.coordinator.plan.RescaleRecord(at, snapshot.parallelism(), n.asInt(),
                        why));
                store.appendDecisions(java.util.List.of(new io.flinkgpu.coordinator.plan.Decision(at, "RESCALE", null,
                        null, why)));
                ok(ex, Map.of("job", snapshot.jobId(), "vertex", snapshot.vertexId(), "parallelism", n.asInt()));
            }
            case "POST /api/resume" -> {
                store.setPaused(false);
                coordinator.metrics().paused(false);
                ok(ex, Map.of("paused", false));
            }
            default -> {
                if (RolloutApi.handles(path)) {
                    rollouts(ex, method, path);
                } else if (method.equals("PUT") && path.startsWith("/api/tenants/")) {
                    String tenant = path.substring("/api/tenants/".length());
                    if (!NAME.matcher(tenant).matches()) {
                        throw new BadRequest(400, "tenant must match " + NAME.pattern());
                    }
                    JsonNode w = body(ex).get("weight");
                    if (w == null || !w.isNumber() || !Double.isFinite(w.asDouble()) || w.asDouble() <= 0
                            || w.asDouble() > MAX_WEIGHT) {
                        throw new BadRequest(400, "weight must be a number in (0, " + (long) MAX_WEIGHT + "]");
                    }
                    store.putTenantWeight(tenant, w.asDouble());
                    ok(ex, Map.of("tenant", tenant, "weight", w.asDouble()));
                } else if (method.equals("DELETE") && path.startsWith("/api/models/")) {
                    String name = path.substring("/api/models/".length());
                    if (!NAME.matcher(name).matches()) {
                        throw new BadRequest(400, "name must match " + NAME.pattern());
                    }
                    ModelInfo info = store.models().get(name);
                    if (info == null) {
                        throw new BadRequest(404, "model '" + name + "' is not in the catalog");
                    }
                    ModelInfo undeployed = new ModelInfo(info.name(), info.version(), info.memoryBytes(),
                            info.sloMillis(), false);
                    store.putModel(undeployed);
                    ok(ex, undeployed);
                } else {
                    throw new BadRequest(404, "no such endpoint");
                }
            }
        }
    }

    /** Gray releases ({@link RolloutApi}): the engine's refusals keep their status and reason. */
    private void rollouts(HttpExchange ex, String method, String path) throws IOException, BadRequest {
        JsonNode body = RolloutApi.wantsBody(method, path) ? body(ex) : null;
        Object answer;
        try {
            answer = rollouts.handle(method, path, body);
        } catch (io.flinkgpu.coordinator.rollout.RolloutException e) {
            throw new BadRequest(e.status(), e.getMessage());
        }
        ok(ex, answer);
    }

    private JsonNode body(HttpExchange ex) throws IOException, BadRequest {
        byte[] bytes;
        try (InputStream in = ex.getRequestBody()) {
            bytes = in.readNBytes(MAX_BODY + 1);
        }
        if (bytes.length > MAX_BODY) {
            throw new BadRequest(413, "body larger than " + MAX_BODY + " bytes");
        }
        try {
            JsonNode node = json.readTree(bytes);
            if (node == null || !node.isObject()) {
                throw new BadRequest(400, "body must be a JSON object");
            }
            return node;
        } catch (JsonProcessingException e) {
            // Jackson's messages name classes and quote input: only the position is passed on
            JsonLocation at = e.getLocation();
            throw new BadRequest(400, at == null || at.getLineNr() < 1 ? "malformed JSON body"
                    : "malformed JSON body at line " + at.getLineNr() + ", column " + at.getColumnNr());
        } catch (IOException e) {
            throw new BadRequest(400, "malformed JSON body");
        }
    }

    private void ok(HttpExchange ex, Object value) throws IOException {
        respond(ex, 200, "application/json", json.writerWithDefaultPrettyPrinter().writeValueAsBytes(value));
    }

    private void error(HttpExchange ex, int status, String message) throws IOException {
        respond(ex, status, "application/json", json.writeValueAsBytes(Map.of("error", message)));
    }

    private static void respond(HttpExchange ex, int status, String type, byte[] body) throws IOException {
        ex.getResponseHeaders().set("Content-Type", type);
        ex.sendResponseHeaders(status, body.length);
        try (OutputStream out = ex.getResponseBody()) {
            out.write(body);
        }
    }

    private static final class BadRequest extends Exception {
        private static final long serialVersionUID = 1L;
        final int status;
        final String reference;

        BadRequest(int status, String message) {
            this(status, message, null);
        }

        BadRequest(int status, String message, String reference) {
            super(message, null, false, false);
            this.status = status;
            this.reference = reference;
        }
    }

    @Override
    public void close() {
        server.stop(0);
        executor.shutdownNow();
    }
}
