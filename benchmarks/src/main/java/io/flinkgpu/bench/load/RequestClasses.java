package io.flinkgpu.bench.load;

import java.util.List;
import java.util.function.IntUnaryOperator;

/**
 * Classes of a run's requests whose latencies are also reported apart (the NLP scenario's
 * sequence-length buckets): a request's own service time depends on its class, so a service time
 * over the mix is not one.
 *
 * @param names the classes, by index
 * @param classOf request {@code seq} of a run -> its class index, or -1 for none
 */
public record RequestClasses(List<String> names, IntUnaryOperator classOf) {
    /** No classes: only the point's overall latencies. */
    public static final RequestClasses NONE = new RequestClasses(List.of(), seq -> -1);

    public RequestClasses {
        names = List.copyOf(names);
    }

    /**
     * How many requests of a run, counted from its first, hold at least {@code perClass} of every
     * class (at least {@code perClass} where there are no classes); at most {@code limit}.
     */
    public long requestsFor(int perClass, long limit) {
        if (names.isEmpty() || perClass <= 0) {
            return Math.min(Math.max(perClass, 0), limit);
        }
        long[] seen = new long[names.size()];
        int missing = names.size();
        long n = 0;
        while (missing > 0 && n < limit) {
            int c = of((int) n++);
            if (c >= 0 && ++seen[c] == perClass) {
                missing--;
            }
        }
        return n;
    }

    /** Request {@code seq}'s class index, or -1 where it has none (or an index out of range). */
    public int of(int seq) {
        int c = names.isEmpty() ? -1 : classOf.applyAsInt(seq);
        return c >= 0 && c < names.size() ? c : -1;
    }
}
