package io.flinkgpu.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

class ReproducibleArgsTest {
    static final Path ROOT = Path.of("/build/flink-gpu-inference");

    @Test
    void anOutFolderOutsideTheRepositoryIsLeftOutOfTheReproduceLine() {
        assertThat(BenchmarkMain.reproducibleArgs(List.of("--mode=full", "--scenarios=nlp", "--out=/tmp/nlp-threads2",
                "-Dinference.execution-threads=2"), ROOT))
                .containsExactly("--mode=full", "--scenarios=nlp", "-Dinference.execution-threads=2");
        assertThat(BenchmarkMain.reproducibleArgs(List.of("--out", "/tmp/x", "--mode=quick"), ROOT))
                .containsExactly("--mode=quick");
    }

    @Test
    void anOutFolderInsideTheRepositoryIsGivenRelativeToItsRootAndARelativeOneAsItWas() {
        assertThat(BenchmarkMain.reproducibleArgs(List.of("--out=/build/flink-gpu-inference/benchmarks/target/run1"),
                ROOT)).containsExactly("--out=benchmarks/target/run1");
        assertThat(BenchmarkMain.reproducibleArgs(List.of("--out", "/build/flink-gpu-inference/docs/x"), ROOT))
                .containsExactly("--out=docs/x");
        assertThat(BenchmarkMain.reproducibleArgs(List.of("--out=benchmarks/target/q", "--outliers"), ROOT))
                .containsExactly("--out=benchmarks/target/q", "--outliers");
    }

    @Test
    void jvmOptionsOtherThanTheDefaultsAreNamedInTheReproduceLine() {
        assertThat(BenchmarkMain.reproducibleJvm(List.of("-Xms2g", "-Xmx4g",
                "-Xlog:gc:file=benchmarks/target/bench-gc.log", "-Djava.awt.headless=true"))).isEmpty();
        assertThat(BenchmarkMain.reproducibleJvm(List.of("-XX:+UseZGC", "-Xms2g", "-Xmx4g",
                "-Xlog:gc:file=benchmarks/target/bench-gc.log", "-Djava.awt.headless=true")))
                .isEqualTo(" -Dbench.jvm=\"-XX:+UseZGC -Xms2g -Xmx4g -Xlog:gc:file=benchmarks/target/bench-gc.log\"");
        // another heap (run.sh's BENCH_HEAP) is an option the rerun needs too
        assertThat(BenchmarkMain.reproducibleJvm(List.of("-Xms8g", "-Xmx8g",
                "-Xlog:gc:file=benchmarks/target/bench-gc.log", "-Djava.awt.headless=true")))
                .contains("-Xms8g -Xmx8g");
    }

    @Test
    void theDefaultsAreThePomsAndRunShs() throws IOException {
        Path repository = Path.of("").toAbsolutePath().getParent();
        assertThat(Files.readString(repository.resolve("benchmarks/pom.xml")))
                .contains("<bench.jvm>" + String.join(" ", BenchmarkMain.DEFAULT_JVM) + "</bench.jvm>");
        assertThat(Files.readString(repository.resolve("benchmarks/run.sh")))
                .contains("${BENCH_HEAP:-" + String.join(" ", BenchmarkMain.DEFAULT_JVM.subList(0, 2)) + "} "
                        + BenchmarkMain.DEFAULT_JVM.get(2) + " ");
    }

    /**
     * The harness resolves the project's modules from the local Maven repository, so the install it documents has to
     * bring the parent and every module the harness depends on: installing three named modules left the parent and
     * inference-contract out, and a fresh machine could not build the harness.
     */
    @Test
    void theDocumentedInstallBuildsWhatTheHarnessNeedsAndIsTheOneRunShAndTheGuideName() throws IOException {
        assertThat(BenchmarkMain.BUILD).contains(" install ", "-pl benchmarks", "-am");
        Path repository = Path.of("").toAbsolutePath().getParent();
        assertThat(Files.readString(repository.resolve("docs/BENCHMARKS.md"))).contains("\n" + BenchmarkMain.BUILD + "\n");
        assertThat(Files.readString(repository.resolve("benchmarks/run.sh"))).contains(BenchmarkMain.BUILD);
    }
}
