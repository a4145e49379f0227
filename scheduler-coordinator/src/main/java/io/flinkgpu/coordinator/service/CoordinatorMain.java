package io.flinkgpu.coordinator.service;

import io.flinkgpu.coordinator.Coordinator;
import io.flinkgpu.coordinator.CoordinatorMetrics;
import io.flinkgpu.coordinator.CoordinatorOptions;
import io.flinkgpu.coordinator.collect.MetricCollector;
import io.flinkgpu.coordinator.realize.PrintingPlanRealizer;
import io.flinkgpu.coordinator.state.InMemoryStateStore;
import io.flinkgpu.coordinator.state.StateStore;
import java.io.PrintStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.GlobalConfiguration;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code coordinator run | plan --dry-run | api}: see docs/COORDINATOR.md. */
@Command(name = "coordinator", mixinStandardHelpOptions = true,
        description = "Scheduler coordinator: Flink metrics -> DRF placement -> plans on the control topic.",
        subcommands = {CoordinatorMain.Run.class, CoordinatorMain.Plan.class, CoordinatorMain.Api.class,
            CoordinatorMain.Options.class})
public final class CoordinatorMain {

    public static void main(String[] args) {
        System.exit(new CommandLine(new CoordinatorMain()).execute(args));
    }

    /** Options shared by the commands that read the configuration. */
    static class ConfigArgs {
        @Option(names = "--config-dir", description = "Directory with a config.yaml (Flink's format).")
        Path configDir;

        @Option(names = "-D", description = "key=value, overriding config.yaml.", mapFallbackValue = "")
        Map<String, String> overrides = new LinkedHashMap<>();

        Configuration configuration() {
            Configuration c = configDir == null ? new Configuration()
                    : GlobalConfiguration.loadConfiguration(configDir.toString());
            Configuration o = Configuration.fromMap(overrides);
            c.addAll(o);
            return c;
        }
    }

    @Command(name = "run", description = "Run the control loop, the admin API and /metrics until stopped.")
    static final class Run implements java.util.concurrent.Callable<Integer> {
        @CommandLine.Mixin
        ConfigArgs args = new ConfigArgs();

        @Override
        public Integer call() throws Exception {
            try (CoordinatorService service = CoordinatorService.start(args.configuration())) {
                if (service.adminPort() >= 0) {
                    System.out.println("admin API and /metrics on port " + service.adminPort());
                }
                CountDownLatch stop = new CountDownLatch(1);
                Runtime.getRuntime().addShutdownHook(new Thread(stop::countDown));
                stop.await();
            }
            return 0;
        }
    }

    @Command(name = "plan", description = "Collect twice, plan, and print the plan (with --dry-run nothing is published or stored).")
    static final class Plan implements java.util.concurrent.Callable<Integer> {
        @CommandLine.Mixin
        ConfigArgs args = new ConfigArgs();

        @Option(names = "--dry-run", description = "Print the plan instead of publishing it.")
        boolean dryRun;

        @Option(names = "--window", defaultValue = "5s", description = "Time between the two collections that rates are measured over (default ${DEFAULT-VALUE}).")
        String window;

        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public Integer call() throws Exception {
            if (!dryRun) {
                spec.commandLine().getErr().println("plans are published only by 'run'; use 'plan --dry-run'");
                return 2;
            }
            return dryRun(args.configuration(), Duration.ofMillis(org.apache.flink.util.TimeUtils.parseDuration(window)
                    .toMillis()), System.out);
        }
    }

    /** One dry-run plan on a fresh in-memory state; prints the control message (or why there is none). */
    static int dryRun(Configuration config, Duration window, PrintStream out) throws InterruptedException {
        try (StateStore store = new InMemoryStateStore()) {
            Coordinator coordinator = new Coordinator(config, collector(config), new PrintingPlanRealizer(out), store,
                    new CoordinatorMetrics(), Clock.systemUTC());
            Coordinator.CycleResult first = coordinator.runOnce(true);
            if (first.skipped() != null && first.demand() == null) {
                out.println("no plan: " + first.skipped());
                return 1;
            }
            Thread.sleep(window.toMillis());
            Coordinator.CycleResult second = coordinator.runOnce(true);
            if (second.demand() != null) {
                second.demand().models().values().forEach(m -> out.println("# DEMAND " + m.model() + ": " + m.reason()));
            }
            if (second.placement() != null) {
                second.placement().decisions().forEach(d -> out.println("# " + d.action() + " "
                        + (d.model() == null ? "" : d.model()) + (d.device() == null ? "" : "@" + d.device()) + ": "
                        + d.reason()));
            }
            return second.skipped() != null && second.demand() == null ? 1 : 0;
        }
    }

    static MetricCollector collector(org.apache.flink.configuration.ReadableConfig config) {
        return new MetricCollector(config.get(CoordinatorOptions.REST_URL), config.get(CoordinatorOptions.JOB_ID),
                config.get(CoordinatorOptions.INFERENCE_VERTEX), config.get(CoordinatorOptions.REST_TIMEOUT),
                Clock.systemUTC(), config.get(CoordinatorOptions.METRICS_SETTLE));
    }

    @Command(name = "api", description = "Call the admin API, e.g. 'api GET /api/decisions' or 'api PUT /api/tenants/shop {\"weight\":2}'.")
    static final class Api implements java.util.concurrent.Callable<Integer> {
        @Option(names = "--url", defaultValue = "http://127.0.0.1:8090", description = "Admin API base URL (default ${DEFAULT-VALUE}).")
        String url;

        @Option(names = "--token", required = true, description = "Bearer token (or the environment variable COORDINATOR_TOKEN via --token=$COORDINATOR_TOKEN).")
        String token;

        @Parameters(index = "0", description = "GET, POST, PUT or DELETE")
        String method;

        @Parameters(index = "1", description = "Path, e.g. /api/plan")
        String path;

        @Parameters(index = "2", arity = "0..1", description = "JSON body")
        String body;

        @Override
        public Integer call() throws Exception {
            HttpRequest request = HttpRequest.newBuilder(URI.create(url + path))
                    .header("Authorization", "Bearer " + token)
                    .header("Content-Type", "application/json")
                    .method(method.toUpperCase(java.util.Locale.ROOT), body == null
                            ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body))
                    .build();
            HttpResponse<String> response = HttpClient.newHttpClient().send(request, HttpResponse.BodyHandlers.ofString());
            System.out.println(response.body());
            return response.statusCode() / 100 == 2 ? 0 : 1;
        }
    }

    @Command(name = "options", description = "List every configuration option with its default.")
    static final class Options implements Runnable {
        @Override
        public void run() {
            CoordinatorOptions.all().forEach((k, o) -> System.out.println(k + " = "
                    + (!o.hasDefaultValue() ? "(none)" : o.defaultValue() instanceof Duration d
                            ? org.apache.flink.util.TimeUtils.formatWithHighestUnit(d) : o.defaultValue())
                    + "\n    " + CoordinatorOptions.describe(o)));
        }
    }
}
