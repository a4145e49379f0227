package io.flinkgpu.coordinator.plan;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

class TenantAccountingTest {
    // shop sends 300/s to cnn and 100/s to dlrm; search sends 100/s to cnn: cnn is shared 3:1
    static final Map<String, Map<String, Double>> RATES = Map.of(
            "cnn", Map.of("shop", 300.0, "search", 100.0),
            "dlrm", Map.of("shop", 100.0));

    @Test
    void aTenantsWeightIsSpreadOverItsModelsByTrafficAndASharedModelSumsItsTenantsPortions() {
        Map<String, Double> w = TenantAccounting.modelWeights(Set.of("cnn", "dlrm", "idle"), RATES,
                Map.of("shop", 2.0), 1.0);
        // shop (2.0): 3/4 to cnn, 1/4 to dlrm; search (default 1.0): all to cnn
        assertThat(w.get("cnn")).isCloseTo(2.0 * 0.75 + 1.0, within(1e-9));
        assertThat(w.get("dlrm")).isCloseTo(2.0 * 0.25, within(1e-9));
        assertThat(w.get("idle")).as("no measured tenant: the default").isEqualTo(1.0);
        // the total weight is the tenants' total: sharing neither creates nor destroys weight
        assertThat(w.get("cnn") + w.get("dlrm")).isCloseTo(3.0, within(1e-9));
    }

    @Test
    void aWeightSetForTheModelItselfWins() {
        Map<String, Double> w = TenantAccounting.modelWeights(Set.of("cnn", "dlrm"), RATES, Map.of("dlrm", 5.0), 1.0);
        assertThat(w.get("dlrm")).isEqualTo(5.0);
        assertThat(w.get("cnn")).isCloseTo(0.75 + 1.0, within(1e-9));
    }

    @Test
    void aSharedModelsCostIsSplitByRequestRateAndCountedOnce() {
        long gib = 1L << 30;
        ResourceVector capacity = new ResourceVector(16.0 * gib, 2.0, 2.0);
        Map<String, ResourceVector> held = Map.of(
                "cnn", new ResourceVector(2.0 * gib, 0.8, 0.2), // two instances of 1 GiB
                "dlrm", new ResourceVector(4.0 * gib, 0.2, 0.1));
        Map<String, TenantAccounting.TenantUsage> u = TenantAccounting.split(RATES, held, capacity, Map.of("shop", 2.0),
                1.0);

        TenantAccounting.TenantUsage shop = u.get("shop");
        TenantAccounting.TenantUsage search = u.get("search");
        assertThat(shop.usage().deviceMemory()).isCloseTo(1.5 * gib + 4.0 * gib, within(1.0));
        assertThat(search.usage().deviceMemory()).isCloseTo(0.5 * gib, within(1.0));
        // the shared model's memory is counted once: the tenants' parts add up to what the models hold
        assertThat(shop.usage().deviceMemory() + search.usage().deviceMemory()).isCloseTo(6.0 * gib, within(1.0));
        assertThat(shop.usage().deviceTime() + search.usage().deviceTime()).isCloseTo(1.0, within(1e-9));
        assertThat(shop.dominantShare()).isCloseTo((0.6 + 0.2) / 2.0, within(1e-9));
        assertThat(shop.dominantResource()).isEqualTo(Resource.DEVICE_TIME);
        assertThat(search.dominantShare()).isCloseTo(0.2 / 2.0, within(1e-9));
        assertThat(shop.modelShares()).containsEntry("cnn", 0.75).containsEntry("dlrm", 1.0);
        assertThat(shop.weight()).isEqualTo(2.0);

        assertThat(TenantAccounting.describe(u, RATES)).anySatisfy(line -> assertThat(line)
                .startsWith("shop (weight 2.00): dominant share 0.400 of device time")
                .contains("0.75 of cnn (shared)", "1.00 of dlrm"));
    }
}
