package io.flinkgpu.coordinator.service;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code coordinator rollout start|pause|resume|abort|status|remove}: gray releases through the
 * admin API ({@code /api/rollouts}), with the connection options of {@code coordinator api}.
 * Exit 0 for a 2xx answer, 1 otherwise or when the call fails, 2 for bad options.
 */
@Command(name = "rollout", mixinStandardHelpOptions = true, description = "Gray releases: start, pause, resume, abort, status or remove a model's rollout "
        + "(the admin API's /api/rollouts).",
        subcommands = {RolloutCommand.Start.class, RolloutCommand.Pause.class, RolloutCommand.Resume.class,
            RolloutCommand.Abort.class, RolloutCommand.Status.class, RolloutCommand.Remove.class})
final class RolloutCommand implements Callable<Integer> {
    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() {
        spec.commandLine().usage(spec.commandLine().getErr());
        return 2;
    }

    /** The admin API's address and credentials, as {@code coordinator api} takes them. */
    static final class Connection {
        @Option(names = "--url", defaultValue = "http://127.0.0.1:8090", description = "Admin API base URL (default ${DEFAULT-VALUE}).")
        String url;

        @Option(names = "--token", description = "Bearer token (visible in the process list: prefer --token-file or "
                + CoordinatorMain.Api.TOKEN_ENV + ").")
        String token;

        @Option(names = "--token-file", description = "File holding the bearer token (one line).")
        Path tokenFile;

        @Option(names = "--truststore", description = "Truststore (PKCS12 or JKS) for https.")
        Path truststore;

        @Option(names = "--truststore-password", description = "Password of --truststore: file:/path, env:NAME or the password itself.")
        String truststorePassword;

        @Option(names = "--cacert", description = "PEM file with the admin API's certificate or its CA, for https.")
        Path cacert;

        @Option(names = "--timeout", defaultValue = "30s", description = "Connect and request timeout (default ${DEFAULT-VALUE}).")
        String timeout;

        /** The process environment; tests set another. */
        java.util.function.Function<String, String> env = System::getenv;

        int call(CommandLine.Model.CommandSpec spec, String method, String path, String body) throws Exception {
            CoordinatorMain.Api api = new CoordinatorMain.Api();
            api.url = url;
            api.token = token;
            api.tokenFile = tokenFile;
            api.truststore = truststore;
            api.truststorePassword = truststorePassword;
            api.cacert = cacert;
            api.timeout = timeout;
            api.env = env;
            api.method = method;
            api.path = path;
            api.body = body;
            api.spec = spec;
            return api.call();
        }
    }

    abstract static class OnModel implements Callable<Integer> {
        @CommandLine.Mixin
        Connection connection = new Connection();

        @Parameters(index = "0", description = "The model.")
        String model;

        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        abstract String action();

        @Override
        public Integer call() throws Exception {
            return connection.call(spec, "POST", RolloutPaths.of(model) + "/" + action(), null);
        }
    }

    @Command(name = "start", description = "Start a rollout of --model from version --from to --to.")
    static final class Start implements Callable<Integer> {
        @CommandLine.Mixin
        Connection connection = new Connection();

        @Option(names = "--model", required = true, description = "The model.")
        String model;

        @Option(names = "--from", required = true, description = "The version serving now (A).")
        String from;

        @Option(names = "--to", required = true, description = "The new version (B).")
        String to;

        @Option(names = "--steps", split = ",", description = "B's share per canary step in percent, ascending, "
                + "the last 100, e.g. 5,25,50,100 (default: coordinator.rollout.steps).")
        List<Double> steps;

        @Option(names = "--mode", defaultValue = "canary", description = "canary or shadow (default ${DEFAULT-VALUE}).")
        String mode;

        @Option(names = "--shadow-fraction", description = "Shadow mode: share of requests copied to B, in (0, 1] "
                + "(default: coordinator.rollout.shadow-fraction).")
        Double shadowFraction;

        @Option(names = "--after-shadow", description = "Shadow mode: canary or finish (default: "
                + "coordinator.rollout.after-shadow).")
        String afterShadow;

        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public Integer call() throws Exception {
            ObjectNode body = new ObjectMapper().createObjectNode();
            body.put("model", model);
            body.put("from", from);
            body.put("to", to);
            body.put("mode", mode);
            if (steps != null) {
                steps.forEach(body.putArray("steps")::add);
            }
            if (shadowFraction != null) {
                body.put("shadow_fraction", shadowFraction);
            }
            if (afterShadow != null) {
                body.put("after_shadow", afterShadow);
            }
            return connection.call(spec, "POST", RolloutPaths.PREFIX, body.toString());
        }
    }

    @Command(name = "pause", description = "Hold MODEL's rollout at its step.")
    static final class Pause extends OnModel {
        @Override
        String action() {
            return "pause";
        }
    }

    @Command(name = "resume", description = "Continue MODEL's paused rollout (the step's dwell and samples start again).")
    static final class Resume extends OnModel {
        @Override
        String action() {
            return "resume";
        }
    }

    @Command(name = "abort", description = "End MODEL's rollout with the old version serving 100%%.")
    static final class Abort extends OnModel {
        @Override
        String action() {
            return "abort";
        }
    }

    @Command(name = "status", description = "Show MODEL's rollout, or every model's without MODEL.")
    static final class Status implements Callable<Integer> {
        @CommandLine.Mixin
        Connection connection = new Connection();

        @Parameters(index = "0", arity = "0..1", description = "The model (all without).")
        String model;

        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public Integer call() throws Exception {
            return connection.call(spec, "GET", model == null ? RolloutPaths.PREFIX : RolloutPaths.of(model), null);
        }
    }

    @Command(name = "remove", description = "Remove MODEL's finished rollout and its split (its version policy chooses again).")
    static final class Remove implements Callable<Integer> {
        @CommandLine.Mixin
        Connection connection = new Connection();

        @Parameters(index = "0", description = "The model.")
        String model;

        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public Integer call() throws Exception {
            return connection.call(spec, "DELETE", RolloutPaths.of(model), null);
        }
    }

    /** The API's paths; a model name is put in the path as it is (the API refuses names outside its alphabet). */
    static final class RolloutPaths {
        static final String PREFIX = "/api/rollouts";

        static String of(String model) {
            return PREFIX + "/" + java.net.URLEncoder.encode(model, java.nio.charset.StandardCharsets.UTF_8);
        }
    }
}
