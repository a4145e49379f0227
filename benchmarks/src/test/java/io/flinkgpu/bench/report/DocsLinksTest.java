package io.flinkgpu.bench.report;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Every relative link in the repository's Markdown (the docs, the published runs' reports and comparisons) names a
 * file that is there: a comparison once linked its run to {@code quick/}, which a later published run replaced.
 */
class DocsLinksTest {
    private static final Pattern LINK = Pattern.compile("\\]\\(([^)\\s]+)\\)");

    static List<String> brokenLinks(Path root) throws IOException {
        List<String> broken = new ArrayList<>();
        try (Stream<Path> files = Files.walk(root)) {
            for (Path md : files.filter(p -> p.toString().endsWith(".md"))
                    .filter(p -> !root.relativize(p).toString().matches("(.*/)?(target|\\.git|node_modules)/.*"))
                    .toList()) {
                Matcher m = LINK.matcher(Files.readString(md));
                while (m.find()) {
                    String target = m.group(1).split("#", 2)[0];
                    if (target.isEmpty() || target.matches("^[a-z]+:.*")) {
                        continue; // an anchor in the same file, or http(s):, mailto:
                    }
                    if (!Files.exists(md.getParent().resolve(target).normalize())) {
                        broken.add(root.relativize(md) + " -> " + m.group(1));
                    }
                }
            }
        }
        return broken;
    }

    @Test
    void everyRelativeLinkInTheRepositorysMarkdownNamesAFileThatIsThere() throws IOException {
        Path repository = Path.of("").toAbsolutePath().getParent();
        assertThat(repository.resolve("docs/BENCHMARKS.md")).exists();
        assertThat(brokenLinks(repository)).isEmpty();
    }

    @Test
    void aLinkToAMissingFileIsFoundAndAnAnchorOrAWebAddressIsNot() throws IOException {
        Path dir = Files.createTempDirectory("docs-links");
        Files.createDirectories(dir.resolve("runs/a"));
        Files.writeString(dir.resolve("runs/a/result.json"), "{}");
        Files.writeString(dir.resolve("README.md"), "[run](runs/a/result.json) [gone](runs/b/result.json#x) "
                + "[up](#how-to-run) [web](https://flink.apache.org/) ![plot](runs/a/p50.png)");
        assertThat(brokenLinks(dir)).containsExactly("README.md -> runs/b/result.json#x", "README.md -> runs/a/p50.png");
    }
}
