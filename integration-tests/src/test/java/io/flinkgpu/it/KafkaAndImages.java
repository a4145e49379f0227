package io.flinkgpu.it;

import io.flinkgpu.job.local.EmbeddedKafka;
import io.flinkgpu.job.local.FashionMnist;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * The fixture the end-to-end tests of the job share: one in-process Kafka broker for the test
 * class, the repository root and the Fashion-MNIST test images. Test classes run one at a time in
 * this module, so each subclass has the fields to itself while it runs.
 */
abstract class KafkaAndImages {
    static EmbeddedKafka kafka;
    static Path root;
    static FashionMnist images;

    @BeforeAll
    static void startKafka() throws Exception {
        kafka = EmbeddedKafka.start();
        root = FashionMnist.findRoot();
        images = FashionMnist.load(root);
    }

    @AfterAll
    static void stopKafka() throws Exception {
        kafka.close();
    }
}
