package io.flinkgpu.inference.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import io.flinkgpu.inference.protocol.DataType;
import io.flinkgpu.inference.protocol.ErrorCode;
import io.flinkgpu.inference.protocol.ProtocolException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ModelRepositoryTest {
    static final Path MODELS = Path.of("src/test/resources/models");
    static final Path ECHO = MODELS.resolve("echo-fp32");

    @TempDir
    Path temp;

    /** Copies echo-fp32 into {@code root/name} with the given versions. */
    private static Path copyEcho(Path root, String name, String... versions) throws IOException {
        Path dir = root.resolve(name);
        Files.createDirectories(dir);
        Files.writeString(dir.resolve("config.json"),
                Files.readString(ECHO.resolve("config.json")).replace("\"echo-fp32\"", "\"" + name + "\""));
        for (String v : versions) {
            Files.createDirectories(dir.resolve(v));
            Files.copy(ECHO.resolve("1/model.onnx"), dir.resolve(v).resolve("model.onnx"));
        }
        return dir;
    }

    private static ErrorCode resolveError(ModelRepository repo, String name, String version) {
        ProtocolException e = catchThrowableOfType(ProtocolException.class, () -> repo.resolve(name, version));
        assertThat(e).as("resolving %s:%s must fail", name, version).isNotNull();
        return e.code();
    }

    @Test
    void servesEveryTestModelWithItsConfig() throws Exception {
        ModelRepository repo = ModelRepository.open(MODELS);

        assertThat(repo.modelNames()).contains("echo-fp32", "echo-fp16", "echo-int64", "echo-int32", "echo-bool",
                "echo-bytes", "affine-fp32", "seq-sum", "two-inputs");
        ModelRepository.ResolvedModel affine = repo.resolve("affine-fp32", null);
        assertThat(affine.id()).isEqualTo(new ModelId("affine-fp32", "1"));
        assertThat(affine.config().maxBatchSize()).isEqualTo(16);
        assertThat(affine.config().input("x").datatype()).isEqualTo(DataType.FP32);
        assertThat(affine.config().input("x").shape()).containsExactly(4);
        assertThat(affine.config().outputs()).extracting(TensorSpec::name).containsExactly("y", "norm");
        assertThat(affine.file()).isRegularFile().hasFileName("model.onnx");
        assertThat(affine.file().startsWith(repo.root())).isTrue();
        assertThat(repo.resolve("seq-sum", "1").config().input("tokens").hasVariableDimension()).isTrue();
    }

    @Test
    void latestVersionIsTheDefault() throws Exception {
        copyEcho(temp, "multi", "1", "2", "10", "9");
        ModelRepository repo = ModelRepository.open(temp);

        assertThat(repo.model("multi").orElseThrow().defaultVersion()).isEqualTo("10");
        assertThat(repo.resolve("multi", null).id()).isEqualTo(new ModelId("multi", "10"));
        assertThat(repo.resolve("multi", "2").id()).isEqualTo(new ModelId("multi", "2"));
        assertThat(repo.resolve("multi", "2").file()).isEqualTo(temp.toRealPath().resolve("multi/2/model.onnx"));
        assertThat(repo.model("multi").orElseThrow().versionFiles()).containsOnlyKeys("1", "2", "9", "10");
    }

    @Test
    void directoriesThatAreNotVersionsAreIgnored() throws Exception {
        Path dir = copyEcho(temp, "m", "3");
        for (String notAVersion : List.of("0", "01", "latest", "-1")) {
            Files.createDirectories(dir.resolve(notAVersion));
            Files.copy(ECHO.resolve("1/model.onnx"), dir.resolve(notAVersion).resolve("model.onnx"));
        }
        Files.createDirectories(dir.resolve("7")); // a version without a model file

        ModelRepository repo = ModelRepository.open(temp);

        assertThat(repo.model("m").orElseThrow().versionFiles()).containsOnlyKeys("3");
        assertThat(repo.resolve("m", null).id().version()).isEqualTo("3");
        assertThat(resolveError(repo, "m", "7")).isEqualTo(ErrorCode.UNKNOWN_VERSION);
        assertThat(resolveError(repo, "m", "latest")).isEqualTo(ErrorCode.UNKNOWN_VERSION);
        assertThat(resolveError(repo, "m", "03")).as("same number, different name").isEqualTo(ErrorCode.UNKNOWN_VERSION);
    }

    @Test
    void modelWithBrokenConfigIsSkippedNotFatal() throws Exception {
        copyEcho(temp, "good", "1");
        Path notJson = copyEcho(temp, "not-json", "1");
        Files.writeString(notJson.resolve("config.json"), "{\"name\": \"not-json\", \"max_batch_size\": ");
        Path zeroBatch = copyEcho(temp, "zero-batch", "1");
        Files.writeString(zeroBatch.resolve("config.json"),
                Files.readString(zeroBatch.resolve("config.json")).replace("\"max_batch_size\": 16",
                        "\"max_batch_size\": 0"));
        Path noInputs = copyEcho(temp, "no-inputs", "1");
        Files.writeString(noInputs.resolve("config.json"),
                "{\"name\": \"no-inputs\", \"max_batch_size\": 4, \"inputs\": []}");
        Path badType = copyEcho(temp, "bad-type", "1");
        Files.writeString(badType.resolve("config.json"),
                Files.readString(badType.resolve("config.json")).replace("\"FP32\"", "\"FLOAT99\""));
        Path wrongName = copyEcho(temp, "wrong-name", "1");
        Files.writeString(wrongName.resolve("config.json"),
                Files.readString(wrongName.resolve("config.json")).replace("\"wrong-name\"", "\"someone-else\""));
        copyEcho(temp, "no-versions");

        ModelRepository repo = ModelRepository.open(temp);

        assertThat(repo.modelNames()).containsExactly("good");
        assertThat(repo.resolve("good", null).id()).isEqualTo(new ModelId("good", "1"));
        for (String broken : List.of("not-json", "zero-batch", "no-inputs", "bad-type", "wrong-name", "no-versions")) {
            assertThat(resolveError(repo, broken, null)).as(broken).isEqualTo(ErrorCode.UNKNOWN_MODEL);
        }
    }

    @Test
    void modelDirectorySymlinkEscapingTheRootIsNotServed() throws Exception {
        Path root = Files.createDirectories(temp.resolve("repo"));
        Path outside = Files.createDirectories(temp.resolve("outside"));
        copyEcho(root, "inside", "1");
        Path escaped = copyEcho(outside, "escaper", "1");
        Files.createSymbolicLink(root.resolve("escaper"), escaped);

        ModelRepository repo = ModelRepository.open(root);

        assertThat(repo.modelNames()).containsExactly("inside");
        assertThat(resolveError(repo, "escaper", null)).isEqualTo(ErrorCode.UNKNOWN_MODEL);
    }

    @Test
    void modelFileSymlinkEscapingTheRootIsNotServed() throws Exception {
        Path root = Files.createDirectories(temp.resolve("repo"));
        Path outsideFile = temp.resolve("secret.onnx");
        Files.copy(ECHO.resolve("1/model.onnx"), outsideFile);
        Path dir = copyEcho(root, "linked");
        Files.createDirectories(dir.resolve("1"));
        Files.createSymbolicLink(dir.resolve("1/model.onnx"), outsideFile);
        Path config = copyEcho(root, "linked-config", "1");
        Files.delete(config.resolve("config.json"));
        Path outsideConfig = temp.resolve("config.json");
        Files.writeString(outsideConfig, Files.readString(ECHO.resolve("config.json"))
                .replace("\"echo-fp32\"", "\"linked-config\""));
        Files.createSymbolicLink(config.resolve("config.json"), outsideConfig);

        ModelRepository repo = ModelRepository.open(root);

        assertThat(repo.modelNames()).doesNotContain("linked", "linked-config");
        assertThat(resolveError(repo, "linked", "1")).isEqualTo(ErrorCode.UNKNOWN_MODEL);
        assertThat(resolveError(repo, "linked-config", "1")).isEqualTo(ErrorCode.UNKNOWN_MODEL);
    }

    @Test
    void symlinkThatStaysInsideTheRootIsServed() throws Exception {
        Path dir = copyEcho(temp, "original", "1");
        Path alias = copyEcho(temp, "alias");
        Files.createDirectories(alias.resolve("1"));
        Files.createSymbolicLink(alias.resolve("1/model.onnx"), dir.resolve("1/model.onnx").toAbsolutePath());

        ModelRepository repo = ModelRepository.open(temp);

        assertThat(repo.resolve("alias", null).file()).isEqualTo(temp.toRealPath().resolve("original/1/model.onnx"));
    }

    @Test
    void unsafeModelNamesAreNeverResolved() throws Exception {
        copyEcho(temp, "m", "1");
        ModelRepository repo = ModelRepository.open(temp);

        for (String name : List.of("..", ".", "../m", "m/../m", "", "/etc")) {
            assertThat(resolveError(repo, name, null)).as(name).isEqualTo(ErrorCode.UNKNOWN_MODEL);
        }
        for (String version : List.of("..", "../1", "1/../1", "0", "-1", "01", "+1", "1.0", " 1", "99999999999")) {
            assertThat(resolveError(repo, "m", version)).as(version).isEqualTo(ErrorCode.UNKNOWN_VERSION);
        }
    }

    @Test
    void missingRepositoryFailsToOpen() {
        assertThatThrownBy(() -> ModelRepository.open(temp.resolve("does-not-exist")))
                .isInstanceOf(UncheckedIOException.class);
    }
}
