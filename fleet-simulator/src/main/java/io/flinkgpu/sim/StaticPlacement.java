package io.flinkgpu.sim;

import java.util.List;

/**
 * The static baseline's allocation: one model per GPU, every model at least one GPU, the rest of
 * the GPUs shared in proportion to each model's mean load (largest remainder). It knows the trace's
 * mean rates in advance, which favours it. With more models than GPUs only the most popular get one.
 */
final class StaticPlacement {
    private StaticPlacement() {}

    static int[] replicas(List<SimModel> models, int devices, Calibration calibration, String kind) {
        int m = models.size();
        int[] out = new int[m];
        double[] load = new double[m];
        double total = 0;
        for (SimModel s : models) {
            load[s.index()] = s.meanRate() * Workload.requestCostSeconds(s.arch(), calibration, kind);
            total += load[s.index()];
        }
        int left = devices;
        for (int i = 0; i < m && left > 0; i++) { // models are in popularity order
            out[i] = 1;
            left--;
        }
        if (left == 0 || total <= 0) {
            return out;
        }
        // D'Hondt: each further GPU to the model with the highest load per GPU it already has
        while (left > 0) {
            int best = 0;
            for (int i = 1; i < m; i++) {
                if (load[i] / out[i] > load[best] / out[best]) {
                    best = i;
                }
            }
            out[best]++;
            left--;
        }
        return out;
    }
}
