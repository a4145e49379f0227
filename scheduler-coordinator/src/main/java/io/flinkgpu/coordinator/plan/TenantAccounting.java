package io.flinkgpu.coordinator.plan;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * Tenants and the models they share. DRF allocates whole model instances, so its claimants are
 * models; tenants come in twice:
 *
 * <ul>
 *   <li><b>Weights.</b> A tenant's weight is spread over the models it sends traffic to, in
 *       proportion to that traffic, and a model's weight is the sum of what its tenants give it.
 *       A model shared by two tenants therefore claims with both their portions, while its memory
 *       is still counted once (one session serves all of them). A weight set for the model itself
 *       wins; a model without measured tenants gets the default weight.
 *   <li><b>Cost.</b> What a model holds (its instances' memory and CPU, the device time its
 *       traffic takes) is split among its tenants in proportion to their request rates, so each
 *       tenant has a usage vector and a dominant share of the fleet, and the shares of a shared
 *       model add up to the model, never to more.
 * </ul>
 */
public final class TenantAccounting {
    /** One tenant's part of the fleet. */
    public record TenantUsage(String tenant, double weight, ResourceVector usage, double dominantShare,
            Resource dominantResource, Map<String, Double> modelShares) {}

    private TenantAccounting() {}

    /**
     * The DRF weight of each model.
     *
     * @param tenantRates model -> tenant -> requests per second
     * @param configured weights set through the admin API, by tenant or by model name
     */
    public static Map<String, Double> modelWeights(Set<String> models, Map<String, Map<String, Double>> tenantRates,
            Map<String, Double> configured, double defaultWeight) {
        Map<String, Double> tenantTotals = tenantTotals(tenantRates);
        Map<String, Double> out = new TreeMap<>();
        for (String m : models) {
            Double explicit = configured.get(m);
            Map<String, Double> tenants = tenantRates.getOrDefault(m, Map.of());
            if (explicit != null) {
                out.put(m, explicit);
            } else if (tenants.isEmpty()) {
                out.put(m, defaultWeight);
            } else {
                double w = 0;
                for (Map.Entry<String, Double> t : tenants.entrySet()) {
                    double total = tenantTotals.getOrDefault(t.getKey(), 0.0);
                    if (total > 0) {
                        w += configured.getOrDefault(t.getKey(), defaultWeight) * t.getValue() / total;
                    }
                }
                out.put(m, w > 0 ? w : defaultWeight);
            }
        }
        return out;
    }

    /**
     * Each tenant's share of what the models hold.
     *
     * @param modelUsage model -> what it holds (instances' memory and CPU, its device time)
     */
    public static Map<String, TenantUsage> split(Map<String, Map<String, Double>> tenantRates,
            Map<String, ResourceVector> modelUsage, ResourceVector capacity, Map<String, Double> configured,
            double defaultWeight) {
        Map<String, ResourceVector> usage = new TreeMap<>();
        Map<String, Map<String, Double>> shares = new TreeMap<>();
        modelUsage.forEach((model, held) -> {
            Map<String, Double> tenants = tenantRates.getOrDefault(model, Map.of());
            double total = tenants.values().stream().mapToDouble(Double::doubleValue).sum();
            if (total <= 0) {
                return; // no measured tenant: the model's cost stays with the model
            }
            tenants.forEach((t, rate) -> {
                double share = rate / total;
                usage.merge(t, held.times(share), ResourceVector::plus);
                shares.computeIfAbsent(t, k -> new TreeMap<>()).put(model, share);
            });
        });
        Map<String, TenantUsage> out = new TreeMap<>();
        usage.forEach((t, u) -> {
            Resource dominant = Resource.DEVICE_MEMORY;
            double best = -1;
            for (Resource r : Resource.values()) {
                double s = capacity.get(r) > 0 ? u.get(r) / capacity.get(r) : 0;
                if (s > best) {
                    best = s;
                    dominant = r;
                }
            }
            out.put(t, new TenantUsage(t, configured.getOrDefault(t, defaultWeight), u, Math.max(0, best), dominant,
                    shares.get(t)));
        });
        return out;
    }

    /** "shop: dominant share 0.31 of device time (0.70 of cnn, shared; 1.00 of dlrm)", one per tenant. */
    public static List<String> describe(Map<String, TenantUsage> usage, Map<String, Map<String, Double>> tenantRates) {
        List<String> out = new ArrayList<>();
        usage.values().forEach(u -> {
            List<String> parts = new ArrayList<>();
            u.modelShares().forEach((m, share) -> parts.add(String.format(Locale.ROOT, "%.2f of %s%s", share, m,
                    tenantRates.getOrDefault(m, Map.of()).size() > 1 ? " (shared)" : "")));
            out.add(String.format(Locale.ROOT, "%s (weight %.2f): dominant share %.3f of %s; cost split: %s",
                    u.tenant(), u.weight(), u.dominantShare(), u.dominantResource().label(),
                    String.join(", ", parts)));
        });
        return out;
    }

    private static Map<String, Double> tenantTotals(Map<String, Map<String, Double>> tenantRates) {
        Map<String, Double> totals = new TreeMap<>();
        tenantRates.values().forEach(byTenant -> byTenant.forEach((t, r) -> totals.merge(t, r, Double::sum)));
        return totals;
    }
}
