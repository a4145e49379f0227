package io.flinkgpu.bench.load;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class MachineLoadTest {
    @Test
    void stealCountsAsAnotherUseOfTheMachineAndTheKernelsNetworkSoftInterruptsDoNot() {
        //                          user nice system idle iowait irq softirq steal guest guest_nice
        String[] line = "cpu 1000 10 500 9000 40 3 700 200 0 0".split(" ");
        assertThat(MachineLoad.busyTicks(line)).isEqualTo(1000 + 10 + 500 + 3 + 200);
        // a kernel without the steal column
        assertThat(MachineLoad.busyTicks("cpu 1000 10 500 9000 40 3 700".split(" "))).isEqualTo(1513);
    }
}
