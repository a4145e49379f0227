package io.flinkgpu.contract.control;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import com.fasterxml.jackson.annotation.JsonProperty;
import java.util.List;
import java.util.Optional;

/**
 * A plan from the scheduler coordinator, as it travels on the control topic: which inference
 * subtasks serve each model (with routing weights), which subtasks should load or unload which
 * models, and why. Plans are totally ordered by {@code epoch}; a job applies a plan only if its
 * epoch is newer than the one it holds.
 *
 * @param schemaVersion layout version of this record ({@link #SCHEMA_VERSION}); readers ignore
 *     unknown fields, so additions do not need a new version
 * @param epoch strictly increasing plan number, from 1
 * @param issuedAtMillis when the coordinator made the plan (epoch milliseconds)
 * @param parallelism the inference parallelism the plan was made for (0: not stated)
 * @param routes the routing table, one entry per model
 * @param commands load/unload commands for individual subtasks
 * @param reason why this plan exists (what changed)
 * @param versionSplits per model, how requests that pin no version are split between versions
 *     (a rollout in progress); absent for models served by their version policy
 */
@JsonIgnoreProperties(ignoreUnknown = true)
public record ControlMessage(
        @JsonProperty(required = true) int schemaVersion,
        @JsonProperty(required = true) long epoch,
        long issuedAtMillis,
        int parallelism,
        List<ModelRoute> routes,
        List<SubtaskCommand> commands,
        String reason,
        List<VersionSplit> versionSplits) {
    public static final int SCHEMA_VERSION = 1;

    public ControlMessage {
        routes = routes == null ? List.of() : List.copyOf(routes);
        commands = commands == null ? List.of() : List.copyOf(commands);
        versionSplits = versionSplits == null ? List.of() : List.copyOf(versionSplits);
    }

    /** A plan in the current schema. */
    public static ControlMessage of(long epoch, long issuedAtMillis, int parallelism, List<ModelRoute> routes,
            List<SubtaskCommand> commands, String reason) {
        return new ControlMessage(SCHEMA_VERSION, epoch, issuedAtMillis, parallelism, routes, commands, reason,
                List.of());
    }

    /** This plan with {@code splits} as its version splits. */
    public ControlMessage withVersionSplits(List<VersionSplit> splits) {
        return new ControlMessage(schemaVersion, epoch, issuedAtMillis, parallelism, routes, commands, reason, splits);
    }

    public Optional<VersionSplit> versionSplit(String model) {
        return versionSplits.stream().filter(v -> v.model().equals(model)).findFirst();
    }

    public Optional<ModelRoute> route(String model) {
        return routes.stream().filter(r -> r.model().equals(model)).findFirst();
    }

    /** The same plan under another epoch (a coordinator re-publishing after a restart). */
    public ControlMessage withEpoch(long newEpoch) {
        return new ControlMessage(schemaVersion, newEpoch, issuedAtMillis, parallelism, routes, commands, reason,
                versionSplits);
    }
}
