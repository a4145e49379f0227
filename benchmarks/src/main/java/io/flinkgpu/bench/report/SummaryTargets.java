package io.flinkgpu.bench.report;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * Targets that a benchmark tool records in {@code summary.json} itself: each tool replaces the
 * entries of its own scenario and leaves the others as they are.
 */
public final class SummaryTargets {
    private static final ObjectMapper JSON = new ObjectMapper();

    private SummaryTargets() {}

    /** One target entry; {@code pass} null for a comparison without a goal. */
    public static ObjectNode target(String scenario, String run, String name, String description, double measured,
            String goal, Boolean pass) {
        ObjectNode t = JSON.createObjectNode();
        t.put("scenario", scenario);
        t.put("target", name);
        t.put("run", run);
        t.put("description", description);
        t.put("measured", measured);
        t.put("goal", goal);
        if (pass != null) {
            t.put("pass", pass);
        }
        return t;
    }

    /** Replaces the targets of {@code scenario} in {@code summary} (if the file exists) by {@code targets}. */
    public static void replace(Path summary, String scenario, List<ObjectNode> targets) throws IOException {
        if (summary == null || !Files.isRegularFile(summary)) {
            return;
        }
        ObjectNode doc = (ObjectNode) JSON.readTree(summary.toFile());
        ArrayNode kept = JSON.createArrayNode();
        for (var t : doc.withArray("targets")) {
            if (!scenario.equals(t.path("scenario").asText())) {
                kept.add(t);
            }
        }
        targets.forEach(kept::add);
        doc.set("targets", kept);
        JSON.writerWithDefaultPrettyPrinter().writeValue(summary.toFile(), doc);
    }
}
