package io.flinkgpu.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The structure rules of docs/ARCHITECTURE.md, checked on the sources: each main source file's
 * package and imports are read (a plain reader, no bytecode), and the rules are asserted on them.
 */
class ArchitectureRulesTest {
    private static final Path ROOT = Path.of("..").toAbsolutePath().normalize();
    private static final List<String> MODULES = List.of("inference-contract", "gpu-operator-udf", "flink-sql",
            "flink-job", "scheduler-coordinator", "fleet-simulator", "benchmarks");
    private static final Pattern PACKAGE = Pattern.compile("^package ([\\w.]+);", Pattern.MULTILINE);
    private static final Pattern IMPORT = Pattern.compile("^import (?:static )?([\\w.]+)(?:\\.\\*)?;", Pattern.MULTILINE);

    /** One main source file: its module, package and the packages it imports. */
    record Source(String module, Path path, String pkg, Set<String> imports) {}

    private static List<Source> sources;

    @BeforeAll
    static void readSources() {
        sources = new ArrayList<>();
        for (String module : MODULES) {
            Path main = ROOT.resolve(module).resolve("src/main/java");
            assertThat(main).as("module %s", module).isDirectory();
            try (Stream<Path> files = Files.walk(main)) {
                files.filter(p -> p.toString().endsWith(".java")).forEach(p -> sources.add(read(module, p)));
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
    }

    private static Source read(String module, Path path) {
        try {
            String text = Files.readString(path);
            Matcher pkg = PACKAGE.matcher(text);
            assertThat(pkg.find()).as("package declaration of %s", path).isTrue();
            Set<String> imports = new TreeSet<>();
            Matcher imp = IMPORT.matcher(text);
            while (imp.find()) {
                imports.add(packageOf(imp.group(1)));
            }
            return new Source(module, path, pkg.group(1), imports);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The package part of an imported name: the segments before the first capitalised one. */
    static String packageOf(String imported) {
        List<String> parts = new ArrayList<>();
        for (String part : imported.split("\\.")) {
            if (!part.isEmpty() && Character.isUpperCase(part.charAt(0))) {
                break;
            }
            parts.add(part);
        }
        return String.join(".", parts);
    }

    private static List<String> violations(String module, Pattern allowedPackages, String forbiddenImportPrefix) {
        List<String> found = new ArrayList<>();
        for (Source s : sources) {
            if (!s.module().equals(module) || allowedPackages.matcher(s.pkg()).matches()) {
                continue;
            }
            for (String imported : s.imports()) {
                if (imported.startsWith(forbiddenImportPrefix)) {
                    found.add(ROOT.relativize(s.path()) + " imports " + imported);
                }
            }
        }
        return found;
    }

    @Test
    void sourcesWereRead() {
        assertThat(sources).hasSizeGreaterThan(100);
        assertThat(sources).anySatisfy(s -> assertThat(s.imports()).contains("org.apache.flink.streaming.api.datastream"));
    }

    @Test
    void noPackageDependsOnItselfThroughOthers() {
        Map<String, Set<String>> graph = new TreeMap<>();
        for (Source s : sources) {
            Set<String> deps = graph.computeIfAbsent(s.pkg(), k -> new TreeSet<>());
            for (String imported : s.imports()) {
                if (imported.startsWith("io.flinkgpu.") && !imported.equals(s.pkg())) {
                    deps.add(imported);
                }
            }
        }
        graph.values().forEach(deps -> deps.retainAll(graph.keySet()));
        assertThat(cycles(graph)).as("package cycles (strongly connected packages)").isEmpty();
    }

    @Test
    void flinkTypesStayInTheLibrarysOperatorLayer() {
        assertThat(violations("gpu-operator-udf", Pattern.compile("io\\.flinkgpu\\.inference\\.operator(\\..*)?"),
                "org.apache.flink")).isEmpty();
    }

    @Test
    void theContractDependsOnNeitherFlinkNorTheLibrary() {
        Pattern none = Pattern.compile("(?!)");
        List<String> found = new ArrayList<>();
        for (String prefix : List.of("org.apache.flink", "ai.onnxruntime", "io.flinkgpu.inference", "io.flinkgpu.job",
                "io.flinkgpu.coordinator", "org.apache.kafka")) {
            found.addAll(violations("inference-contract", none, prefix));
        }
        assertThat(found).isEmpty();
    }

    @Test
    void theCoordinatorSpeaksToTheJobOnlyThroughTheContract() {
        Pattern none = Pattern.compile("(?!)");
        assertThat(violations("scheduler-coordinator", none, "io.flinkgpu.inference")).isEmpty();
        assertThat(violations("scheduler-coordinator", none, "io.flinkgpu.job")).isEmpty();
    }

    @Test
    void theSimulatorRunsTheLibraryAndTheCoordinatorWithoutFlink() {
        Pattern none = Pattern.compile("(?!)");
        List<String> found = new ArrayList<>();
        for (String prefix : List.of("org.apache.flink", "io.flinkgpu.job", "io.flinkgpu.bench", "org.apache.kafka",
                "io.flinkgpu.inference.operator", "io.flinkgpu.coordinator.realize.Kafka")) {
            found.addAll(violations("fleet-simulator", none, prefix));
        }
        assertThat(found).isEmpty();
    }

    @Test
    void theLibraryKnowsNothingOfTheJobTheCoordinatorOrTheBenchmarks() {
        Pattern none = Pattern.compile("(?!)");
        List<String> found = new ArrayList<>();
        for (String prefix : List.of("io.flinkgpu.job", "io.flinkgpu.coordinator", "io.flinkgpu.bench", "io.flinkgpu.sim",
                "io.flinkgpu.sql")) {
            found.addAll(violations("gpu-operator-udf", none, prefix));
            found.addAll(violations("inference-contract", none, prefix));
        }
        assertThat(found).isEmpty();
    }

    @Test
    void theRepositoryStandsAlone() throws IOException {
        // Committed text speaks of the project only: no files outside the repository, no tracker
        // numbers, no absolute build paths in published results (JSON).
        Pattern outside = Pattern.compile("\\.\\./shared/|\\bissue #?\\d+|\\bdesign card\\b");
        Pattern absolutePath = Pattern.compile("\"/(tmp|work|home|root)/");
        List<String> found = new ArrayList<>();
        try (Stream<Path> files = Files.walk(ROOT)) {
            files.filter(Files::isRegularFile)
                    .filter(p -> !ROOT.relativize(p).toString().startsWith("."))
                    .filter(p -> !ROOT.relativize(p).toString().contains("/target/")
                            && !ROOT.relativize(p).toString().startsWith("target"))
                    .filter(p -> p.toString().matches(".*\\.(md|java|xml|json|yaml|yml|py|sh|properties)$"))
                    .filter(p -> !p.getFileName().toString().equals("ArchitectureRulesTest.java"))
                    .forEach(p -> {
                        try {
                            String text = Files.readString(p);
                            Matcher m = outside.matcher(text);
                            if (m.find()) {
                                found.add(ROOT.relativize(p) + ": " + m.group());
                            }
                            // published results (result.json, summary.json) hold no build machine's paths
                            Matcher a = absolutePath.matcher(text);
                            if (p.toString().endsWith(".json") && a.find()) {
                                found.add(ROOT.relativize(p) + ": " + a.group());
                            }
                        } catch (IOException | UncheckedIOException e) {
                            // a file that is not text (or not UTF-8) holds no such reference
                        }
                    });
        }
        assertThat(found).isEmpty();
    }

    /** Tarjan's strongly connected components of size above one (or with a self loop). */
    static List<Set<String>> cycles(Map<String, Set<String>> graph) {
        Map<String, Integer> index = new HashMap<>();
        Map<String, Integer> low = new HashMap<>();
        Deque<String> stack = new ArrayDeque<>();
        Set<String> onStack = new TreeSet<>();
        List<Set<String>> found = new ArrayList<>();
        int[] counter = {0};
        for (String v : graph.keySet()) {
            if (!index.containsKey(v)) {
                strongConnect(v, graph, index, low, stack, onStack, found, counter);
            }
        }
        return found;
    }

    private static void strongConnect(String v, Map<String, Set<String>> graph, Map<String, Integer> index,
            Map<String, Integer> low, Deque<String> stack, Set<String> onStack, List<Set<String>> found, int[] counter) {
        index.put(v, counter[0]);
        low.put(v, counter[0]);
        counter[0]++;
        stack.push(v);
        onStack.add(v);
        for (String w : graph.getOrDefault(v, Set.of())) {
            if (!index.containsKey(w)) {
                strongConnect(w, graph, index, low, stack, onStack, found, counter);
                low.put(v, Math.min(low.get(v), low.get(w)));
            } else if (onStack.contains(w)) {
                low.put(v, Math.min(low.get(v), index.get(w)));
            }
        }
        if (low.get(v).equals(index.get(v))) {
            Set<String> component = new TreeSet<>();
            String w;
            do {
                w = stack.pop();
                onStack.remove(w);
                component.add(w);
            } while (!w.equals(v));
            if (component.size() > 1) {
                found.add(component);
            }
        }
    }

    @Test
    void importsAreReadAsPackages() {
        assertThat(packageOf("io.flinkgpu.coordinator.Coordinator")).isEqualTo("io.flinkgpu.coordinator");
        assertThat(packageOf("org.assertj.core.api.Assertions.assertThat")).isEqualTo("org.assertj.core.api");
        assertThat(packageOf("io.flinkgpu.inference.model.ModelCache.Lease")).isEqualTo("io.flinkgpu.inference.model");
        assertThat(packageOf("java.util")).isEqualTo("java.util");
    }

    @Test
    void theCycleFinderFindsCycles() {
        Map<String, Set<String>> graph = new TreeMap<>(Map.of("a", Set.of("b"), "b", Set.of("c"), "c", Set.of("a"),
                "d", Set.of("a")));
        assertThat(cycles(graph)).containsExactly(Set.of("a", "b", "c"));
        assertThat(cycles(Map.of("a", Set.of("b"), "b", Set.of()))).isEmpty();
    }
}
