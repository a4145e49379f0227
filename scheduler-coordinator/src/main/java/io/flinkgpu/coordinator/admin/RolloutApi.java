package io.flinkgpu.coordinator.admin;

import com.fasterxml.jackson.databind.JsonNode;
import io.flinkgpu.coordinator.Coordinator;
import io.flinkgpu.coordinator.rollout.Rollout;
import io.flinkgpu.coordinator.rollout.RolloutEngine;
import io.flinkgpu.coordinator.rollout.RolloutException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * The admin API's gray-release endpoints, over the coordinator's {@link RolloutEngine}. Every
 * change publishes the changed split at once ({@link Coordinator#publishVersionSplits}).
 *
 * <pre>
 * GET    /api/rollouts                  every model's latest rollout
 * GET    /api/rollouts/{model}          one
 * POST   /api/rollouts                  {"model", "from", "to", "steps": [5, 25, 50, 100], "mode": "canary"|"shadow",
 *                                        "shadow_fraction": 0.1, "after_shadow": "canary"|"finish"}: start
 * POST   /api/rollouts/{model}/pause    hold at the step
 * POST   /api/rollouts/{model}/resume   continue (the step's dwell and samples start again)
 * POST   /api/rollouts/{model}/abort    back to 100% of the old version
 * DELETE /api/rollouts/{model}          remove a finished rollout and its split
 * </pre>
 */
final class RolloutApi {
    static final String PREFIX = "/api/rollouts";
    private static final Set<String> START_FIELDS = Set.of("model", "from", "to", "steps", "mode", "shadow_fraction",
            "after_shadow");

    private final Coordinator coordinator;

    RolloutApi(Coordinator coordinator) {
        this.coordinator = coordinator;
    }

    static boolean handles(String path) {
        return path.equals(PREFIX) || path.startsWith(PREFIX + "/");
    }

    /** Whether {@code method path} takes a JSON body. */
    static boolean wantsBody(String method, String path) {
        return method.equals("POST") && path.equals(PREFIX);
    }

    /**
     * Answers {@code method path}; {@code body} is the parsed JSON object where
     * {@link #wantsBody}. Returns what to answer with 200.
     */
    Object handle(String method, String path, JsonNode body) throws RolloutException {
        RolloutEngine engine = coordinator.rollouts();
        long now = coordinator.nowMillis();
        if (path.equals(PREFIX)) {
            switch (method) {
                case "GET" -> {
                    List<Object> out = new ArrayList<>();
                    engine.all().forEach(r -> out.add(view(r)));
                    return out;
                }
                case "POST" -> {
                    Rollout r = engine.start(request(body), now);
                    return published(r, "started");
                }
                default -> throw new RolloutException(405, PREFIX + " allows GET and POST");
            }
        }
        String rest = path.substring(PREFIX.length() + 1);
        int slash = rest.indexOf('/');
        String model = slash < 0 ? rest : rest.substring(0, slash);
        String action = slash < 0 ? null : rest.substring(slash + 1);
        if (action == null) {
            switch (method) {
                case "GET" -> {
                    return view(engine.get(checkedModel(model)).orElseThrow(
                            () -> new RolloutException(404, "model '" + model + "' has no rollout")));
                }
                case "DELETE" -> {
                    Rollout r = engine.forget(model, now);
                    coordinator.publishVersionSplits("rollout of " + model + " removed");
                    return Map.of("removed", view(r));
                }
                default -> throw new RolloutException(405, PREFIX + "/{model} allows GET and DELETE");
            }
        }
        if (!method.equals("POST")) {
            throw new RolloutException(405, PREFIX + "/{model}/" + "{pause|resume|abort} allows POST");
        }
        return switch (action) {
            case "pause" -> published(engine.pause(model, now), "paused");
            case "resume" -> published(engine.resume(model, now), "resumed");
            case "abort" -> published(engine.abort(model, now), "aborted");
            default -> throw new RolloutException(404, "no such endpoint");
        };
    }

    private Map<String, Object> published(Rollout r, String what) {
        coordinator.publishVersionSplits("rollout of " + r.model() + " " + what);
        return view(r);
    }

    private static String checkedModel(String model) throws RolloutException {
        if (!AdminServer.NAME.matcher(model).matches()) {
            throw new RolloutException(400, "model must match " + AdminServer.NAME.pattern());
        }
        return model;
    }

    /** A rollout as the API shows it: its state, where it stands in words, and the split plans carry. */
    static Map<String, Object> view(Rollout r) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("model", r.model());
        m.put("from", r.from());
        m.put("to", r.to());
        m.put("mode", r.mode().name().toLowerCase(Locale.ROOT));
        m.put("state", r.state().name());
        m.put("phase", r.phase().name().toLowerCase(Locale.ROOT));
        m.put("step", r.phase() == Rollout.Phase.CANARY ? r.step() + 1 : null);
        if (r.warmedOn() != null) {
            m.put("warmed_on_subtasks", r.warmedOn());
        }
        m.put("steps", r.steps().stream().map(s -> s * 100).toList());
        m.put("to_share_percent", r.toShare() * 100);
        if (r.mode() == Rollout.Mode.SHADOW) {
            m.put("shadow_fraction", r.shadowFraction());
            m.put("after_shadow", r.afterShadow().name().toLowerCase(Locale.ROOT));
        }
        m.put("describe", r.describe());
        m.put("started_at_millis", r.startedAtMillis());
        m.put("step_started_at_millis", r.stepStartedAtMillis());
        m.put("updated_at_millis", r.updatedAtMillis());
        m.put("reason", r.reason());
        m.put("split", r.split());
        return m;
    }

    private static RolloutEngine.Request request(JsonNode body) throws RolloutException {
        for (Iterator<String> it = body.fieldNames(); it.hasNext(); ) {
            String f = it.next();
            if (!START_FIELDS.contains(f)) {
                throw new RolloutException(400, "unknown field; a rollout takes " + new java.util.TreeSet<>(START_FIELDS));
            }
        }
        List<Double> steps = null;
        if (body.has("steps")) {
            JsonNode s = body.get("steps");
            if (!s.isArray()) {
                throw new RolloutException(400, "steps must be an array of percentages, e.g. [5, 25, 50, 100]");
            }
            steps = new ArrayList<>();
            for (JsonNode n : s) {
                if (!n.isNumber()) {
                    throw new RolloutException(400, "steps must be an array of percentages, e.g. [5, 25, 50, 100]");
                }
                steps.add(n.asDouble());
            }
        }
        Double shadow = null;
        if (body.has("shadow_fraction")) {
            if (!body.get("shadow_fraction").isNumber()) {
                throw new RolloutException(400, "shadow_fraction must be a number in (0, 1]");
            }
            shadow = body.get("shadow_fraction").asDouble();
        }
        return new RolloutEngine.Request(text(body, "model"), version(body, "from"), version(body, "to"),
                choice(body, "mode", Rollout.Mode.class), steps, shadow,
                choice(body, "after_shadow", Rollout.AfterShadow.class));
    }

    private static String text(JsonNode body, String field) throws RolloutException {
        JsonNode n = body.get(field);
        if (n == null || !n.isTextual()) {
            throw new RolloutException(400, field + " must be a string");
        }
        return n.asText();
    }

    /** A version as a string or an integer. */
    private static String version(JsonNode body, String field) throws RolloutException {
        JsonNode n = body.get(field);
        if (n != null && n.isInt()) {
            return String.valueOf(n.asInt());
        }
        if (n == null || !n.isTextual()) {
            throw new RolloutException(400, field + " must be a version (a positive integer)");
        }
        return n.asText();
    }

    private static <E extends Enum<E>> E choice(JsonNode body, String field, Class<E> type) throws RolloutException {
        JsonNode n = body.get(field);
        if (n == null || n.isNull()) {
            return null;
        }
        List<String> names = new ArrayList<>();
        for (E e : type.getEnumConstants()) {
            names.add(e.name().toLowerCase(Locale.ROOT));
            if (n.isTextual() && e.name().equalsIgnoreCase(n.asText())) {
                return e;
            }
        }
        throw new RolloutException(400, field + " must be one of " + names);
    }
}
