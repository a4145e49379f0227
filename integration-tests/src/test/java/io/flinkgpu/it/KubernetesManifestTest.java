package io.flinkgpu.it;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import io.flinkgpu.job.InferenceJobMain;
import io.flinkgpu.job.local.FashionMnist;
import java.nio.file.Path;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * No Kubernetes cluster exists here, so deploy/kubernetes/flink-deployment.yaml is checked
 * statically: it parses, its Flink configuration agrees with deploy/conf/config.yaml on every key
 * both set (except those that differ on purpose between one machine and pods), it sets every
 * inference.* option the cluster config sets, and the GPU, metrics and upgrade settings fit together.
 */
class KubernetesManifestTest {
    private static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());

    /** Differ on purpose: addresses and ports, directories, slots and memory, per-environment endpoints. */
    private static final Set<String> DIFFERENT_ON_PURPOSE = Set.of(
            "taskmanager.numberOfTaskSlots", // one GPU per TaskManager pod
            "execution.checkpointing.dir", "execution.checkpointing.savepoint-dir", // a volume, not /tmp
            "metrics.reporter.prom.port", // one process per pod: a single port, not a range
            "inference.kafka.bootstrap-servers", // the cluster's Kafka service
            "inference.model-repository"); // the models volume

    @Test
    void flinkDeploymentAgreesWithTheClusterConfiguration() throws Exception {
        Path root = FashionMnist.findRoot();
        Map<String, String> conf = flatten(YAML.readTree(root.resolve("deploy/conf/config.yaml").toFile()));
        JsonNode deployment = YAML.readTree(root.resolve("deploy/kubernetes/flink-deployment.yaml").toFile());
        assertThat(deployment.path("kind").asText()).isEqualTo("FlinkDeployment");
        Map<String, String> k8s = flatten(deployment.path("spec").path("flinkConfiguration"));

        for (String key : new String[] {"state.backend.type", "classloader.parent-first-patterns.additional",
                "metrics.reporter.prom.factory.class", "execution.checkpointing.externalized-checkpoint-retention"}) {
            assertThat(k8s).as("FlinkDeployment sets %s", key).containsKey(key);
        }
        conf.keySet().stream().filter(k -> k.startsWith("inference."))
                .forEach(k -> assertThat(k8s).as("FlinkDeployment sets %s like config.yaml", k).containsKey(k));
        for (Map.Entry<String, String> e : k8s.entrySet()) {
            if (conf.containsKey(e.getKey()) && !DIFFERENT_ON_PURPOSE.contains(e.getKey())) {
                assertThat(e.getValue()).as("%s in flink-deployment.yaml vs config.yaml", e.getKey())
                        .isEqualTo(conf.get(e.getKey()));
            }
        }

        JsonNode spec = deployment.path("spec");
        JsonNode job = spec.path("job");
        assertThat(job.path("entryClass").asText()).isEqualTo(InferenceJobMain.class.getName());
        assertThat(job.path("upgradeMode").asText()).isEqualTo("savepoint");
        assertThat(job.path("parallelism").asText()).isEqualTo(k8s.get("inference.parallelism"));
        JsonNode gpuLimit = spec.path("taskManager").path("podTemplate").path("spec").path("containers").get(0)
                .path("resources").path("limits").path("nvidia.com/gpu");
        assertThat(gpuLimit.asText()).as("TaskManager nvidia.com/gpu limit").isEqualTo(k8s.get("external-resource.gpu.amount"));
        assertThat(k8s.get("external-resource.gpu.kubernetes.config-key")).isEqualTo("nvidia.com/gpu");
        assertThat(spec.path("podTemplate").path("metadata").path("annotations").path("prometheus.io/port").asText())
                .isEqualTo(k8s.get("metrics.reporter.prom.port"));
        String checkpoints = k8s.get("execution.checkpointing.dir");
        assertThat(checkpoints).startsWith("file:///flink-data/");
        assertThat(spec.path("podTemplate").toString()).contains("/flink-data").contains("/models");
    }

    private static Map<String, String> flatten(JsonNode node) {
        Map<String, String> out = new LinkedHashMap<>();
        for (Iterator<Map.Entry<String, JsonNode>> it = node.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            out.put(e.getKey(), e.getValue().asText());
        }
        return out;
    }
}
