package io.flinkgpu.coordinator.realize;

import io.flinkgpu.contract.control.ControlMessage;

/** Realize step: makes a plan take effect (publishes it to the job). */
public interface PlanRealizer extends AutoCloseable {
    /** Returns once the plan is durably handed over; throws if it could not be. */
    void publish(ControlMessage plan) throws Exception;

    @Override
    default void close() {}
}
