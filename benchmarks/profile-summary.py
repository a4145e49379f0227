#!/usr/bin/env python3
"""Attributes the benchmark JVM's CPU time to thread groups, from profile-threads.sh output.

    python3 benchmarks/profile-summary.py benchmarks/target/threads.tsv [MIN_CORES]

Prints CPU shares per group over the whole run and over the saturated samples only (those where
the JVM used at least MIN_CORES cores, default 1.6 of the 2), i.e. where the time goes when the
machine is the bottleneck. Thread names are the 15 characters Linux keeps.
"""
import collections
import os
import re
import sys

GROUPS = [
    ("ONNX Runtime (job execution thread)", r"^gpu-inference-"),
    ("Flink task: inference operator (mailbox)", r"^GPU inference"),
    ("Flink task: Kafka source + parse/validate", r"^(Source: Kafka|Source Data Fet|Parse)"),
    ("Flink task: Kafka sink", r"^(Kafka respons|Kafka dead)"),
    ("Flink task: per-record map/async", r"^(Map ONNX|Async I/O|pool-)"),
    ("Kafka producer I/O threads (client and Flink sinks)", r"^kafka-producer"),
    ("Kafka broker", r"^(data-plane|kafka-|broker|controller|Log|ReplicaFetcher|ExpirationReap|"
                     r"group-coordinat|transaction|raft|quorum|share-|metadata|event-process|"
                     r"ReplicaAlter|Controller|log-cleaner|kafka-log|TxnMarker|executor-|"
                     r"ThrottledChann|LogDirFailure|feature-)"),
    ("load generator and response consumer", r"^(load-open-loop|load-closed-lo|bench-responses|main)"),
    ("JVM: GC", r"^(G1 |GC Thread|VM Periodic|VM Thread)"),
    ("JVM: JIT compilers", r"^(C1 |C2 )"),
    ("Flink runtime (RPC, timers, checkpoints, other)", r"^(flink-|Flink|pekko|jobmanager|Checkpoint|"
                                                         r"AsyncOperation|Time Trigger|OutputFlusher|"
                                                         r"Timer|mini-cluster|Legacy|cluster-io|"
                                                         r"rocksdb|ForkJoin)"),
]


def group(name):
    for label, pattern in GROUPS:
        if re.match(pattern, name):
            return label
    return "other: " + name


def main():
    path = sys.argv[1]
    min_cores = float(sys.argv[2]) if len(sys.argv) > 2 else 1.6
    hz = os.sysconf(os.sysconf_names["SC_CLK_TCK"])
    samples = collections.OrderedDict()
    for line in open(path):
        parts = line.rstrip("\n").split("\t")
        if len(parts) != 4:
            continue
        t, tid, name, ticks = int(parts[0]), parts[1], parts[2], int(parts[3])
        samples.setdefault(t, {})[tid] = (name, ticks)
    times = list(samples)
    total = collections.Counter()
    saturated = collections.Counter()
    seconds = 0
    saturated_seconds = 0
    for a, b in zip(times, times[1:]):
        delta = collections.Counter()
        for tid, (name, ticks) in samples[b].items():
            before = samples[a].get(tid, (name, 0))[1]
            delta[group(name)] += max(0, ticks - before)
        used = sum(delta.values()) / hz / (b - a)
        total.update(delta)
        seconds += b - a
        if used >= min_cores:
            saturated.update(delta)
            saturated_seconds += b - a
    for title, counter, secs in (("whole run", total, seconds),
                                 ("samples using >= %.1f cores" % min_cores, saturated, saturated_seconds)):
        all_ticks = sum(counter.values()) or 1
        print("## %s: %d s, %.2f cores used on average" % (title, secs, all_ticks / hz / max(secs, 1)))
        print("| thread group | share of CPU |")
        print("|---|---:|")
        for label, ticks in counter.most_common():
            if ticks * 100.0 / all_ticks >= 0.5:
                print("| %s | %.1f%% |" % (label, ticks * 100.0 / all_ticks))
        print()


if __name__ == "__main__":
    main()
