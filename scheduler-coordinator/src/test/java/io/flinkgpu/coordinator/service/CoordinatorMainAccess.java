package io.flinkgpu.coordinator.service;

import java.io.PrintStream;
import java.time.Duration;
import org.apache.flink.configuration.Configuration;

/** Lets tests in other packages run {@code plan --dry-run}'s body. */
public final class CoordinatorMainAccess {
    private CoordinatorMainAccess() {}

    public static int dryRun(Configuration config, Duration window, PrintStream out) throws InterruptedException {
        return CoordinatorMain.dryRun(config, window, out);
    }
}
