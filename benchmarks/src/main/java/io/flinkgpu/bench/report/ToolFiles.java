package io.flinkgpu.bench.report;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The files of the benchmark tools beside the rate sweeps (QoS, model cache, coordinator
 * recovery): a JSON result and a Markdown report generated from it, both marked as generated.
 */
public final class ToolFiles {
    private static final ObjectMapper JSON = new ObjectMapper();

    private ToolFiles() {}

    /** The first line of every generated report, and the blank line after it. */
    public static String writtenBy(String tool) {
        return "<!-- written by " + tool + "; do not edit -->\n\n";
    }

    /** The working tree's revision as the rate sweeps record it ({@code git describe --always --dirty}), or "unknown". */
    public static String revision() {
        return Report.git("describe", "--always", "--dirty");
    }

    /** The machine's processors and CPU model, e.g. {@code 2 cores (AMD EPYC)}. */
    public static String cores() {
        String cpu = "";
        try (java.util.stream.Stream<String> lines = Files.lines(Path.of("/proc/cpuinfo"))) {
            cpu = lines.filter(l -> l.startsWith("model name")).findFirst()
                    .map(l -> l.substring(l.indexOf(':') + 1).trim()).orElse("");
        } catch (IOException | RuntimeException e) {
            // not Linux
        }
        return Runtime.getRuntime().availableProcessors() + " cores" + (cpu.isEmpty() ? "" : " (" + cpu + ")");
    }

    /** Writes {@code doc} to {@code file} as indented JSON. */
    public static void writeJson(Path file, JsonNode doc) throws IOException {
        JSON.writerWithDefaultPrettyPrinter().writeValue(file.toFile(), doc);
    }

    /**
     * Writes a report to {@code file}: the written-by line, one line with the result's
     * {@code command}, {@code machine} and {@code started}, then {@code body}.
     */
    public static void writeReport(Path file, String tool, JsonNode result, CharSequence body) throws IOException {
        Files.writeString(file, writtenBy(tool) + "Command: `" + result.get("command").asText() + "`, "
                + result.get("machine").asText() + ", " + result.get("started").asText() + "\n\n" + body);
    }
}
