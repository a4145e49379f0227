package io.flinkgpu.coordinator.realize;

import io.flinkgpu.contract.control.ControlMessage;
import io.flinkgpu.contract.control.ControlMessageCodec;
import java.io.PrintStream;

/** Prints the plan instead of publishing it: {@code plan --dry-run}. */
public final class PrintingPlanRealizer implements PlanRealizer {
    private final PrintStream out;

    public PrintingPlanRealizer(PrintStream out) {
        this.out = out;
    }

    @Override
    public void publish(ControlMessage plan) {
        out.println(ControlMessageCodec.toJson(plan));
    }
}
