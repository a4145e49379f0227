package io.flinkgpu.coordinator.admin;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
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
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.regex.Pattern;

/**
 * The admin REST API (JDK {@code com.sun.net.httpserver}): every {@code /api/...} request needs
 * {@code Authorization: Bearer <coordinator.admin.token>} (401 otherwise); {@code /metrics} is
 * open for Prometheus. Bodies are JSON; invalid input gets 400 with the reason.
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
 * GET    /api/tenants                 DRF weights
 * GET    /api/tenants/usage           each tenant's share of the fleet at the last plan (cost split)
 * PUT    /api/tenants/{name}          {"weight": w}
 * POST   /api/pause, /api/resume      automatic rebalancing off/on
 * PUT    /api/parallelism             {"parallelism": n}: rescale the inference vertex (adaptive scheduler)
 * GET    /metrics                     Prometheus text
 * </pre>
 */
public final class AdminServer implements AutoCloseable {
    static final Pattern NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,127}");
    private static final int MAX_BODY = 64 * 1024;
    static final double MAX_WEIGHT = 1_000;
    static final int MAX_PARALLELISM = 1024;

    private final HttpServer server;
    private final ExecutorService executor;
    private final Coordinator coordinator;
    private final StateStore store;
    private final byte[] token;
    private final Rescaler rescaler;
    private final ObjectMapper json = JsonMapper.builder().disable(SerializationFeature.FAIL_ON_EMPTY_BEANS).build();

    public AdminServer(String bindAddress, int port, String token, Coordinator coordinator) throws IOException {
        this(bindAddress, port, token, coordinator, null);
    }

    /** With {@code rescaler}, {@code PUT /api/parallelism} changes the inference vertex's parallelism. */
    public AdminServer(String bindAddress, int port, String token, Coordinator coordinator,
            Rescaler rescaler) throws IOException {
        if (token == null || token.isBlank()) {
            throw new IllegalArgumentException("the admin API needs coordinator.admin.token (or coordinator.admin.port: -1)");
        }
        this.token = token.getBytes(StandardCharsets.UTF_8);
        this.coordinator = coordinator;
        this.store = coordinator.store();
        this.rescaler = rescaler;
        this.server = HttpServer.create(new InetSocketAddress(bindAddress, port), 0);
        this.executor = Executors.newFixedThreadPool(2, r -> {
            Thread t = new Thread(r, "coordinator-admin");
            t.setDaemon(true);
            return t;
        });
        server.setExecutor(executor);
        server.createContext("/api/", this::api);
        server.createContext("/metrics", ex -> {
            try (ex) {
                respond(ex, 200, "text/plain; version=0.0.4; charset=utf-8",
                        coordinator.metrics().prometheusText().getBytes(StandardCharsets.UTF_8));
            }
        });
        server.start();
    }

    public int port() {
        return server.getAddress().getPort();
    }

    private void api(HttpExchange ex) throws IOException {
        try (ex) {
            if (!authorized(ex)) {
                ex.getResponseHeaders().add("WWW-Authenticate", "Bearer realm=\"coordinator\"");
                error(ex, 401, "missing or wrong bearer token");
                return;
            }
            try {
                route(ex);
            } catch (BadRequest e) {
                error(ex, e.status, e.getMessage());
            } catch (RuntimeException e) {
                error(ex, 500, e.toString());
            }
        }
    }

    private boolean authorized(HttpExchange ex) {
        String h = ex.getRequestHeaders().getFirst("Authorization");
        if (h == null || !h.startsWith("Bearer ")) {
            return false;
        }
        return MessageDigest.isEqual(h.substring("Bearer ".length()).trim().getBytes(StandardCharsets.UTF_8), token);
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
                    throw new BadRequest(502, "Flink refused: " + e.getMessage());
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new BadRequest(503, "interrupted");
                }
                store.appendDecisions(java.util.List.of(new io.flinkgpu.coordinator.plan.Decision(
                        System.currentTimeMillis(), "RESCALE", null, null, "inference parallelism "
                                + snapshot.parallelism() + " -> " + n.asInt() + " requested through the admin API")));
                ok(ex, Map.of("job", snapshot.jobId(), "vertex", snapshot.vertexId(), "parallelism", n.asInt()));
            }
            case "POST /api/resume" -> {
                store.setPaused(false);
                coordinator.metrics().paused(false);
                ok(ex, Map.of("paused", false));
            }
            default -> {
                if (method.equals("PUT") && path.startsWith("/api/tenants/")) {
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
                    ModelInfo info = store.models().get(name);
                    if (info == null) {
                        throw new BadRequest(404, "model '" + name + "' is not in the catalog");
                    }
                    ModelInfo undeployed = new ModelInfo(info.name(), info.version(), info.memoryBytes(),
                            info.sloMillis(), false);
                    store.putModel(undeployed);
                    ok(ex, undeployed);
                } else {
                    throw new BadRequest(404, "no such endpoint: " + method + " " + path);
                }
            }
        }
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
        } catch (IOException e) {
            throw new BadRequest(400, "body is not JSON: " + e.getMessage().split("\n")[0]);
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

        BadRequest(int status, String message) {
            super(message);
            this.status = status;
        }
    }

    @Override
    public void close() {
        server.stop(0);
        executor.shutdownNow();
    }
}
