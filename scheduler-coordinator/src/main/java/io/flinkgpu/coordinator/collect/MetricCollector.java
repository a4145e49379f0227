package io.flinkgpu.coordinator.collect;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.flinkgpu.contract.metrics.MetricNames;
import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Collect step: reads the inference operator's metrics through Flink's REST API.
 *
 * <ol>
 *   <li>{@code GET /jobs/overview}: the configured job, or the running job with an inference vertex;
 *   <li>{@code GET /jobs/<id>}: the vertex whose name contains the inference operator's name;
 *   <li>{@code GET /jobs/<id>/vertices/<vid>/subtasks/metrics}: which metrics exist;
 *   <li>{@code GET /jobs/<id>/vertices/<vid>/subtasks/<i>/metrics?get=...}: their values per subtask.
 * </ol>
 *
 * Operator metrics appear in REST as {@code <operator name>.gpu_inference.<name>}; everything
 * after {@code gpu_inference.} is matched against the operator's own names ({@link MetricNames},
 * listed in docs/METRICS.md). Flink's REST names replace ':' by '_', so device ids are mapped
 * back ({@code sim_0} -> {@code sim:0}).
 */
public final class MetricCollector implements MetricSource {
    private static final String GROUP = MetricNames.GROUP + ".";
    private static final String DEVICE_GROUP = MetricNames.DEVICE + ".";
    private static final String MODEL_GROUP = MetricNames.MODEL + ".";
    private static final String VERSION_GROUP = "." + MetricNames.VERSION + ".";
    private static final String TENANT_GROUP = MetricNames.TENANT + ".";
    private static final String TENANT_REQUESTS_IN = "." + MetricNames.REQUESTS_IN;
    private static final String ERROR_GROUP = MetricNames.ERROR + ".";
    private static final String ERROR_COUNT = "." + MetricNames.ERRORS;
    /** Flink's own task metrics (not the operator's): how busy and how backpressured a subtask is. */
    private static final String BUSY_TIME = "busyTimeMsPerSecond";
    private static final String BACK_PRESSURED_TIME = "backPressuredTimeMsPerSecond";
    private static final int NAMES_PER_REQUEST = 40;

    private final HttpClient http;
    private final ObjectMapper json = new ObjectMapper();
    private final String baseUrl;
    private final String jobId;
    private final String vertexName;
    private final Duration timeout;
    private final Clock clock;
    private final Duration settle;

    public MetricCollector(String restUrl, String jobId, String vertexName, Duration timeout, Clock clock) {
        this(restUrl, jobId, vertexName, timeout, clock, Duration.ZERO);
    }

    /**
     * @param settle how long to wait between the request that starts Flink's background metric
     *     fetch and reading the values ({@code coordinator.flink.metrics-settle}): Flink's REST
     *     handlers answer from the last completed fetch and start the next one asynchronously, so
     *     without the wait a read races that fetch and sees values that are fresh or one fetch old
     *     at random, which makes counter rates swing from cycle to cycle
     */
    public MetricCollector(String restUrl, String jobId, String vertexName, Duration timeout, Clock clock,
            Duration settle) {
        this.settle = settle;
        this.baseUrl = restUrl.endsWith("/") ? restUrl.substring(0, restUrl.length() - 1) : restUrl;
        this.jobId = jobId == null ? "" : jobId;
        this.vertexName = vertexName;
        this.timeout = timeout;
        this.clock = clock;
        this.http = HttpClient.newBuilder().connectTimeout(timeout).build();
    }

    @Override
    public MetricSnapshot collect() throws CollectException {
        String jid = jobId.isEmpty() ? findRunningJob() : jobId;
        JsonNode job = get("/jobs/" + jid);
        JsonNode vertex = null;
        for (JsonNode v : job.path("vertices")) {
            if (v.path("name").asText().contains(vertexName)) {
                vertex = v;
                break;
            }
        }
        if (vertex == null) {
            throw new CollectException("job " + jid + " has no vertex named like '" + vertexName + "'");
        }
        String vid = vertex.path("id").asText();
        int parallelism = vertex.path("parallelism").asInt();
        List<String> names = new ArrayList<>();
        for (JsonNode m : get("/jobs/" + jid + "/vertices/" + vid + "/subtasks/metrics")) {
            String id = m.path("id").asText();
            if (wanted(id)) {
                names.add(id);
            }
        }
        // the listing above started Flink's metric fetch (if its update interval had passed): let it land
        if (!settle.isZero()) {
            try {
                Thread.sleep(settle.toMillis());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new CollectException("interrupted", e);
            }
        }
        long now = clock.millis();
        List<SubtaskSample> subtasks = new ArrayList<>();
        for (int i = 0; i < parallelism; i++) {
            Map<String, Double> values = new TreeMap<>();
            for (int from = 0; from < names.size(); from += NAMES_PER_REQUEST) {
                List<String> chunk = names.subList(from, Math.min(names.size(), from + NAMES_PER_REQUEST));
                String query = URLEncoder.encode(String.join(",", chunk), StandardCharsets.UTF_8);
                for (JsonNode m : get("/jobs/" + jid + "/vertices/" + vid + "/subtasks/" + i + "/metrics?get=" + query)) {
                    values.put(m.path("id").asText(), parse(m.path("value").asText()));
                }
            }
            subtasks.add(subtask(i, values));
        }
        return new MetricSnapshot(now, jid, vid, parallelism, subtasks);
    }

    private static boolean wanted(String id) {
        return id.contains(GROUP) || id.equals(BUSY_TIME) || id.equals(BACK_PRESSURED_TIME);
    }

    private static double parse(String s) {
        try {
            return Double.parseDouble(s);
        } catch (NumberFormatException e) {
            return Double.NaN;
        }
    }

    /** Turns one subtask's {@code name -> value} map into a sample. Package-private for tests. */
    static SubtaskSample subtask(int index, Map<String, Double> values) {
        String device = null;
        double memUsed = Double.NaN;
        double memTotal = Double.NaN;
        double util = Double.NaN;
        double queued = Double.NaN;
        Map<String, Map<String, Double>> perModel = new LinkedHashMap<>();
        for (Map.Entry<String, Double> e : values.entrySet()) {
            String id = e.getKey();
            int at = id.indexOf(GROUP);
            if (at < 0) {
                continue;
            }
            String name = id.substring(at + GROUP.length());
            if (name.startsWith(DEVICE_GROUP)) {
                String rest = name.substring(DEVICE_GROUP.length());
                int dot = rest.lastIndexOf('.');
                if (dot <= 0) {
                    continue;
                }
                device = deviceId(rest.substring(0, dot));
                switch (rest.substring(dot + 1)) {
                    case MetricNames.MEMORY_USED_BYTES -> memUsed = e.getValue();
                    case MetricNames.MEMORY_TOTAL_BYTES -> memTotal = e.getValue();
                    case MetricNames.UTILIZATION -> util = e.getValue();
                    default -> { }
                }
            } else if (name.startsWith(MODEL_GROUP)) {
                int v = name.lastIndexOf(VERSION_GROUP);
                if (v < 0) {
                    continue;
                }
                String model = name.substring(MODEL_GROUP.length(), v);
                String rest = name.substring(v + VERSION_GROUP.length());
                int dot = rest.indexOf('.');
                if (dot <= 0) {
                    continue;
                }
                String version = rest.substring(0, dot);
                String metric = rest.substring(dot + 1);
                perModel.computeIfAbsent(model + "\u0000" + version, k -> new LinkedHashMap<>()).put(metric, e.getValue());
            } else if (name.equals(MetricNames.QUEUED_REQUESTS)) {
                queued = e.getValue();
            }
        }
        List<ModelSample> models = new ArrayList<>();
        perModel.forEach((key, m) -> {
            String[] mv = key.split("\u0000", 2);
            Map<String, Double> tenants = new TreeMap<>();
            double errors = 0;
            for (Map.Entry<String, Double> mv2 : m.entrySet()) {
                String metric = mv2.getKey();
                double value = mv2.getValue();
                if (metric.startsWith(TENANT_GROUP) && metric.endsWith(TENANT_REQUESTS_IN)) {
                    tenants.put(metric.substring(TENANT_GROUP.length(), metric.length() - TENANT_REQUESTS_IN.length()),
                            value);
                } else if (metric.startsWith(ERROR_GROUP) && metric.endsWith(ERROR_COUNT) && Double.isFinite(value)) {
                    errors += value; // model.<m>.version.<v>.error.<code>.errors, summed over the codes
                }
            }
            models.add(new ModelSample(mv[0], mv[1], m.getOrDefault(MetricNames.REQUESTS_IN, Double.NaN),
                    m.getOrDefault(MetricNames.RESPONSES_OUT, Double.NaN),
                    m.getOrDefault(MetricNames.BATCHES, Double.NaN),
                    m.getOrDefault(MetricNames.QUEUED_SAMPLES, Double.NaN),
                    m.getOrDefault(MetricNames.mean(MetricNames.BATCH_SIZE), Double.NaN),
                    m.getOrDefault(MetricNames.mean(MetricNames.INFERENCE_LATENCY_US), Double.NaN),
                    m.getOrDefault(MetricNames.p99(MetricNames.QUEUE_LATENCY_US), Double.NaN),
                    m.getOrDefault(MetricNames.LATENCY_MODEL_ALPHA_US, Double.NaN),
                    m.getOrDefault(MetricNames.LATENCY_MODEL_BETA_US, Double.NaN), tenants,
                    m.getOrDefault(MetricNames.LOADED, Double.NaN), errors,
                    m.getOrDefault(MetricNames.p99(MetricNames.INFERENCE_LATENCY_US), Double.NaN),
                    m.getOrDefault(MetricNames.BATCH_CAP, Double.NaN),
                    m.getOrDefault(MetricNames.p99(MetricNames.SERVICE_LATENCY_US), Double.NaN)));
        });
        return new SubtaskSample(index, device, memUsed, memTotal, util,
                values.getOrDefault(BUSY_TIME, Double.NaN), values.getOrDefault(BACK_PRESSURED_TIME, Double.NaN), queued,
                models);
    }

    private static final java.util.regex.Pattern FILTERED_DEVICE = java.util.regex.Pattern.compile("(cpu|cuda|sim)_(\\d+)");

    /** Flink's metric names turn the ':' of device ids into '_' ({@code sim:0} reads {@code sim_0}); undo it. */
    static String deviceId(String reported) {
        java.util.regex.Matcher m = FILTERED_DEVICE.matcher(reported);
        return m.matches() ? m.group(1) + ":" + m.group(2) : reported;
    }

    private String findRunningJob() throws CollectException {
        List<String> running = new ArrayList<>();
        for (JsonNode j : get("/jobs/overview").path("jobs")) {
            if ("RUNNING".equals(j.path("state").asText())) {
                running.add(j.path("jid").asText());
            }
        }
        for (String jid : running) {
            for (JsonNode v : get("/jobs/" + jid).path("vertices")) {
                if (v.path("name").asText().contains(vertexName)) {
                    return jid;
                }
            }
        }
        throw new CollectException("no running job with a vertex named like '" + vertexName + "' at " + baseUrl
                + " (" + running.size() + " running jobs)");
    }

    private JsonNode get(String path) throws CollectException {
        HttpRequest request = HttpRequest.newBuilder(URI.create(baseUrl + path)).timeout(timeout).GET().build();
        try {
            HttpResponse<String> response = http.send(request, HttpResponse.BodyHandlers.ofString());
            if (response.statusCode() != 200) {
                throw new CollectException("GET " + path + " answered " + response.statusCode() + ": "
                        + abbreviate(response.body()));
            }
            return json.readTree(response.body());
        } catch (IOException e) {
            throw new CollectException("GET " + baseUrl + path + " failed: " + (e.getMessage() == null
                    ? e.getClass().getSimpleName() : e.getMessage()), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new CollectException("interrupted", e);
        }
    }

    private static String abbreviate(String s) {
        return s == null ? "" : s.length() > 200 ? s.substring(0, 200) + "..." : s;
    }
}
