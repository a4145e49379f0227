package io.flinkgpu.bench.report;

import io.flinkgpu.bench.sut.Ceiling;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;
import java.util.SplittableRandom;

/**
 * What the SLO itself allows: the highest Poisson arrival rate at which an ideal server with the
 * job's batching policy keeps the p99 of a request's time in the queue and in its batch within a
 * budget (the SLO less what the pipeline takes unloaded). The server is the ceiling's ONNX Runtime
 * and nothing else: {@code servers} execution threads, each taking, when free, the oldest queued
 * request's shape group and up to {@code maxBatch} queued requests of that group (the batcher's
 * cut at queue delay 0), and running the batch for the ceiling's mean batch time at that size.
 * No pipeline cost, no jitter, no scheduling delay: an upper bound on what any implementation of
 * that policy can serve within the SLO on this machine.
 *
 * <p>{@code goodput_vs_roofline} assumes that a job can run at its roofline R. Where the service
 * time is long against the SLO (NLP: tens of milliseconds per request and no gain from batching)
 * a queue cannot: its p99 grows without bound as the load nears capacity, so the bound here,
 * divided by R, is the highest share of R any FIFO batcher can reach within the SLO.
 *
 * <p>Deterministic: the arrivals' exponential gaps and shape groups are drawn once from a fixed
 * seed and scaled with the rate (common random numbers), so the p99 is monotone in the rate and
 * the bisection converges.
 */
public final class QueueBound {
    /** Arrivals simulated per rate; the first tenth is warm-up and not counted. */
    static final int ARRIVALS = 200_000;
    private static final long SEED = 20261204L;

    /**
     * One shape group of the traffic: its share of the requests and its mean batch time at the
     * measured batch sizes (ascending).
     */
    public record Group(String label, double share, int[] batches, double[] batchSeconds) {
        public Group {
            if (batches.length == 0 || batches.length != batchSeconds.length) {
                throw new IllegalArgumentException("a group needs a batch time at one batch size at least");
            }
        }

        /**
         * Mean batch time at {@code b} requests: linear between the measured batch sizes, the
         * smallest's time per request below it, the largest's time per request above it.
         */
        double seconds(int b) {
            if (b <= batches[0]) {
                return batchSeconds[0] * b / batches[0];
            }
            for (int i = 1; i < batches.length; i++) {
                if (b <= batches[i]) {
                    double f = (double) (b - batches[i - 1]) / (batches[i] - batches[i - 1]);
                    return batchSeconds[i - 1] + f * (batchSeconds[i] - batchSeconds[i - 1]);
                }
            }
            int last = batches.length - 1;
            return batchSeconds[last] * b / batches[last];
        }

        @Override
        public String toString() {
            return label + " " + share + " " + Arrays.toString(batches) + " " + Arrays.toString(batchSeconds);
        }
    }

    /** Which queued shape group a free thread takes. */
    public enum Order {
        /** The group whose first queued request arrived first: the job's policy (FIFO across shapes). */
        OLDEST_FIRST,
        /**
         * The group of the shortest batch-1 time (shortest job first, not preempting a running batch):
         * the order that minimises the mean wait, for the question whether another order than the
         * job's would raise the p99 bound.
         */
        SHORTEST_FIRST
    }

    /**
     * What one simulated rate gave: the p99 and mean of the requests' time from arrival to answer,
     * the mean batch, and each group's own p99 (NaN for a group no counted request had).
     */
    public record Stats(double p99Seconds, double meanSeconds, double meanBatch, double[] groupP99Seconds) {}

    private QueueBound() {}

    /**
     * The groups of a scenario from its raw ceiling points: each shape group's own points
     * ({@code raw [label]}) with {@code shares} by label, or, where the ceiling has one group only,
     * its {@code raw} points with share 1. Mean batch time = batch / samples per second.
     */
    public static List<Group> groups(List<Ceiling.Point> ceiling, Map<String, Double> shares) {
        Map<String, List<Ceiling.Point>> byLabel = new LinkedHashMap<>();
        for (Ceiling.Point p : ceiling) {
            if (p.path().startsWith("raw [") && p.path().endsWith("]")) {
                byLabel.computeIfAbsent(p.path().substring("raw ".length()), k -> new ArrayList<>()).add(p);
            }
        }
        if (byLabel.isEmpty()) {
            List<Ceiling.Point> raw = new ArrayList<>();
            for (Ceiling.Point p : ceiling) {
                if (p.path().equals("raw")) {
                    raw.add(p);
                }
            }
            return raw.isEmpty() ? List.of() : List.of(group("all", 1, raw));
        }
        double total = 0;
        for (String label : byLabel.keySet()) {
            Double share = shares.get(label);
            if (share == null || !(share > 0)) {
                throw new IllegalArgumentException("no share for the ceiling's group " + label + " in " + shares);
            }
            total += share;
        }
        List<Group> out = new ArrayList<>();
        for (Map.Entry<String, List<Ceiling.Point>> e : byLabel.entrySet()) {
            out.add(group(e.getKey(), shares.get(e.getKey()) / total, e.getValue()));
        }
        return out;
    }

    private static Group group(String label, double share, List<Ceiling.Point> points) {
        List<Ceiling.Point> sorted = new ArrayList<>(points);
        sorted.sort((a, b) -> Integer.compare(a.batch(), b.batch()));
        int[] batches = new int[sorted.size()];
        double[] seconds = new double[sorted.size()];
        for (int i = 0; i < batches.length; i++) {
            batches[i] = sorted.get(i).batch();
            seconds[i] = sorted.get(i).batch() / sorted.get(i).samplesPerSecond();
        }
        return new Group(label, share, batches, seconds);
    }

    /**
     * The highest arrival rate (requests/s) whose p99 time from arrival to answer is at most
     * {@code budgetSeconds}, to about 0.1%; 0 when not even a lone request fits in the budget.
     */
    public static double maxRate(List<Group> groups, int servers, int maxBatch, double budgetSeconds) {
        return maxRate(groups, servers, maxBatch, budgetSeconds, Order.OLDEST_FIRST);
    }

    /** {@link #maxRate(List, int, int, double)} with the given order of the shape groups. */
    public static double maxRate(List<Group> groups, int servers, int maxBatch, double budgetSeconds, Order order) {
        if (groups.isEmpty() || servers < 1 || maxBatch < 1) {
            throw new IllegalArgumentException("groups, servers and max batch must be given");
        }
        Traffic traffic = Traffic.draw(groups, ARRIVALS, SEED);
        double hi = 1.5 * servers * capacity(groups, maxBatch);
        if (simulate(groups, servers, maxBatch, hi, traffic, order).p99Seconds() <= budgetSeconds) {
            return hi; // the queue never grows past the budget even over capacity: the batch time decides
        }
        if (simulate(groups, servers, maxBatch, hi * 1e-6, traffic, order).p99Seconds() > budgetSeconds) {
            return 0;
        }
        double lo = hi * 1e-6;
        while (hi / lo > 1.001) {
            double mid = Math.sqrt(lo * hi);
            if (simulate(groups, servers, maxBatch, mid, traffic, order).p99Seconds() <= budgetSeconds) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        return lo;
    }

    /** Requests/s one server runs at {@code maxBatch} over the traffic mix (the most it can). */
    static double capacity(List<Group> groups, int maxBatch) {
        double secondsPerRequest = 0;
        for (Group g : groups) {
            secondsPerRequest += g.share() * g.seconds(maxBatch) / maxBatch;
        }
        return 1 / secondsPerRequest;
    }

    /** Simulates {@link #ARRIVALS} Poisson arrivals at {@code rate} (seeded). */
    public static Stats simulate(List<Group> groups, int servers, int maxBatch, double rate) {
        return simulate(groups, servers, maxBatch, rate, Order.OLDEST_FIRST);
    }

    /** {@link #simulate(List, int, int, double)} with the given order of the shape groups. */
    public static Stats simulate(List<Group> groups, int servers, int maxBatch, double rate, Order order) {
        return simulate(groups, servers, maxBatch, rate, Traffic.draw(groups, ARRIVALS, SEED), order);
    }

    /** The arrivals at rate 1 (exponential gaps) and each one's group. */
    record Traffic(double[] unitTimes, int[] group) {
        static Traffic draw(List<Group> groups, int n, long seed) {
            SplittableRandom random = new SplittableRandom(seed);
            double[] cumulative = new double[groups.size()];
            double c = 0;
            for (int g = 0; g < cumulative.length; g++) {
                c += groups.get(g).share();
                cumulative[g] = c;
            }
            double[] times = new double[n];
            int[] group = new int[n];
            double t = 0;
            for (int i = 0; i < n; i++) {
                t += -Math.log(1 - random.nextDouble());
                times[i] = t;
                double u = random.nextDouble() * c;
                int g = 0;
                while (g < cumulative.length - 1 && u > cumulative[g]) {
                    g++;
                }
                group[i] = g;
            }
            return new Traffic(times, group);
        }
    }

    static Stats simulate(List<Group> groups, int servers, int maxBatch, double rate, Traffic traffic, Order order) {
        int n = traffic.unitTimes().length;
        double[] arrival = new double[n];
        for (int i = 0; i < n; i++) {
            arrival[i] = traffic.unitTimes()[i] / rate;
        }
        List<ArrayDeque<Integer>> queues = new ArrayList<>();
        for (int g = 0; g < groups.size(); g++) {
            queues.add(new ArrayDeque<>());
        }
        PriorityQueue<Double> free = new PriorityQueue<>();
        for (int s = 0; s < servers; s++) {
            free.add(0.0);
        }
        int warmUp = n / 10;
        double[] sojourn = new double[n - warmUp];
        int[] perGroupCount = new int[groups.size()];
        for (int i = warmUp; i < n; i++) {
            perGroupCount[traffic.group()[i]]++;
        }
        double[][] perGroup = new double[groups.size()][];
        for (int g = 0; g < perGroup.length; g++) {
            perGroup[g] = new double[perGroupCount[g]];
        }
        int[] filled = new int[groups.size()];
        double sum = 0;
        long batches = 0;
        long batched = 0;
        int next = 0;
        int queued = 0;
        while (next < n || queued > 0) {
            double at = free.poll();
            while (next < n && arrival[next] <= at) {
                queues.get(traffic.group()[next]).add(next++);
                queued++;
            }
            if (queued == 0) {
                // idle until the next request, which starts a batch of its own at once
                at = arrival[next];
                queues.get(traffic.group()[next]).add(next++);
                queued++;
            }
            int g = order == Order.OLDEST_FIRST ? oldest(queues, arrival) : shortest(queues, groups);
            ArrayDeque<Integer> q = queues.get(g);
            int b = Math.min(maxBatch, q.size());
            double done = at + groups.get(g).seconds(b);
            for (int i = 0; i < b; i++) {
                int r = q.poll();
                if (r >= warmUp) {
                    double s = done - arrival[r];
                    sojourn[r - warmUp] = s;
                    perGroup[g][filled[g]++] = s;
                    sum += s;
                }
            }
            queued -= b;
            batches++;
            batched += b;
            free.add(done);
        }
        double[] groupP99 = new double[groups.size()];
        for (int g = 0; g < groupP99.length; g++) {
            groupP99[g] = p99(perGroup[g]);
        }
        return new Stats(p99(sojourn), sum / sojourn.length, (double) batched / batches, groupP99);
    }

    private static double p99(double[] values) {
        if (values.length == 0) {
            return Double.NaN;
        }
        Arrays.sort(values);
        return values[(int) Math.ceil(0.99 * values.length) - 1];
    }

    /** The non-empty group with the shortest batch-1 time. */
    private static int shortest(List<ArrayDeque<Integer>> queues, List<Group> groups) {
        int best = -1;
        for (int g = 0; g < queues.size(); g++) {
            if (!queues.get(g).isEmpty() && (best < 0 || groups.get(g).seconds(1) < groups.get(best).seconds(1))) {
                best = g;
            }
        }
        return best;
    }

    /** The group whose first queued request arrived first. */
    private static int oldest(List<ArrayDeque<Integer>> queues, double[] arrival) {
        int best = -1;
        for (int g = 0; g < queues.size(); g++) {
            Integer head = queues.get(g).peek();
            if (head != null && (best < 0 || arrival[head] < arrival[queues.get(best).peek()])) {
                best = g;
            }
        }
        return best;
    }
}
