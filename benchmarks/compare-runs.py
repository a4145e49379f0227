#!/usr/bin/env python3
"""Writes a side-by-side table of pairs of benchmark runs (their result.json files): goodput per
scenario and configuration, and each pair's ratio (second / first), so that a before/after
comparison in the docs is generated from the runs rather than typed.

Usage, from the repository root (runs in pairs: before, after, before, after, ...):
  python3 benchmarks/compare-runs.py "TITLE" OUT.md LABEL=before.json LABEL=after.json [LABEL=... LABEL=...]

With three or more pairs it also writes the median goodput of the first runs of the pairs and of
the second ones, and their ratio: interleaved runs on one machine see the same drift, so the
medians' ratio is steadier than any single pair's.
"""
import os
import statistics
import sys

import result_points


def main():
    title, out = sys.argv[1], sys.argv[2]
    runs = []
    for arg in sys.argv[3:]:
        label, path = arg.split("=", 1)
        runs.append((label, path, result_points.load(path)))
    base_dir = os.path.dirname(out)
    lines = [f"# {title}", ""]
    for label, path, r in runs:
        rel = os.path.relpath(path, base_dir)
        lines.append(f"- **{label}**: run `{r['run_id']}` at revision `{r['versions']['git']}` "
                     f"([result.json]({rel})), {r['contended_load_points']} of {r['load_points']} load points "
                     "contended")
    lines += ["", "Goodput (req/s within the scenario's SLO; the sweep's grid is coarse in quick mode, x2 with "
              "one bisection step, so a step of the grid is the resolution):", ""]
    header = "| scenario | configuration | " + " | ".join(label for label, _, _ in runs)
    pairs = [(i - 1, i) for i in range(1, len(runs), 2)]
    header += "".join(f" | {runs[b][0]} / {runs[a][0]}" for a, b in pairs) + " |"
    lines.append(header)
    lines.append("|---|---|" + "---:|" * (len(runs) + len(pairs)))
    names = [s["name"] for s in runs[0][2]["scenarios"]]
    medians = []
    for name in names:
        configs = list(next(s for s in runs[0][2]["scenarios"] if s["name"] == name)["configs"].keys())
        for config in configs:
            values = []
            for _, _, r in runs:
                c = config_of(r, name, config)
                values.append(None if c is None or c.get("goodput") is None else float(c["goodput"]))
            if all(v is None for v in values[1:]):
                continue
            row = f"| {name} | {config} | " + " | ".join("-" if v is None else f"{v:.0f}" for v in values)
            for a, b in pairs:
                before, after = values[a], values[b]
                row += " | " + ("-" if before is None or after is None or not before else f"{after / before:.2f}")
            lines.append(row + " |")
            medians.append((name, config, [values[a] for a, _ in pairs], [values[b] for _, b in pairs]))
    if len(pairs) >= 3:
        lines += ["", f"Medians over the {len(pairs)} pairs (first runs of the pairs, second runs, and second / first):",
                  "", "| scenario | configuration | median, first | median, second | second / first |",
                  "|---|---|---:|---:|---:|"]
        for name, config, firsts, seconds in medians:
            firsts = [v for v in firsts if v is not None]
            seconds = [v for v in seconds if v is not None]
            if not firsts or not seconds:
                continue
            a, b = statistics.median(firsts), statistics.median(seconds)
            lines.append(f"| {name} | {config} | {a:.0f} | {b:.0f} | " + ("-" if not a else f"{b / a:.2f}") + " |")
    lines += attainment_table(runs, pairs)
    if len(pairs) >= 3:
        lines += cpu_table(runs, pairs)
    lines += job_cpu_table(runs, pairs)
    lines += timer_cpu_table(runs, pairs)
    lines += harness_cpu_table(runs, pairs)
    lines += latency_table(runs, pairs)
    lines += low_load_table(runs)
    lines += send_lag_table(runs)
    lines += pause_table(runs, pairs)
    lines += pause_totals(runs)
    with open(out, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


config_of = result_points.config_of
all_points = result_points.all_points


def points(run, scenario, config):
    """(offered rate, CPU microseconds per answered request) of every open-loop point of a sweep."""
    c = config_of(run, scenario, config)
    if c is None:
        return []
    out = []
    for p in all_points(c):
        if p.get("mode") == "open" and p.get("throughput") and p.get("benchmarkCores") is not None:
            out.append((round(p["offered"]), p["benchmarkCores"] * 1e6 / p["throughput"]))
    return out


def slo_points(run, scenario, config):
    """(offered rate, (SLO attainment, p99 ms)) of every open-loop sweep point of a configuration."""
    return [(round(p["offered"]), (p["attainment"], p["p99"]))
            for p in result_points.sweep_points(config_of(run, scenario, config))
            if p.get("mode") == "open" and p.get("attainment") is not None and p.get("p99") is not None]


def pooled_by_rate(runs, pairs, read):
    """For every scenario and configuration of the first run: offered rate -> the values read(run,
    scenario, configuration) gives as (rate, value) over the first runs of the pairs, and the same over
    the second runs."""
    names = [s["name"] for s in runs[0][2]["scenarios"]]
    for name in names:
        configs = list(next(s for s in runs[0][2]["scenarios"] if s["name"] == name)["configs"].keys())
        for config in configs:
            firsts, seconds = {}, {}
            for a, b in pairs:
                for side, i in ((firsts, a), (seconds, b)):
                    for rate, value in read(runs[i][2], name, config):
                        side.setdefault(rate, []).append(value)
            yield name, config, firsts, seconds


def attainment_table(runs, pairs):
    """SLO attainment and p99 at each offered rate, the first runs' points and the second runs' pooled
    over the pairs: where a sweep's goodput turns on one point over the SLO (a few hundred requests per
    point at tens of requests per second), the points at the rates both sides ran say more."""
    rows = []
    for name, config, firsts, seconds in pooled_by_rate(runs, pairs, slo_points):
        for rate in sorted(set(firsts) & set(seconds)):
            att = [statistics.median(x[0] for x in side[rate]) * 100 for side in (firsts, seconds)]
            p99 = [statistics.median(x[1] for x in side[rate]) for side in (firsts, seconds)]
            rows.append(f"| {name} | {config} | {rate} | {len(firsts[rate])} / {len(seconds[rate])} | "
                        f"{att[0]:.1f}% | {att[1]:.1f}% | {p99[0]:.1f} | {p99[1]:.1f} |")
    if not rows:
        return []
    return ["", "SLO attainment (share of requests answered without error within the SLO) and p99 (ms) at each "
            "offered rate both sides measured, median over the sweep points of the first runs of the pairs and "
            "over those of the second runs:", "", "| scenario | configuration | offered rate (req/s) | points, "
            "first / second | attainment, first | attainment, second | p99, first | p99, second |",
            "|---|---|---:|---:|---:|---:|---:|---:|"] + rows


def cpu_table(runs, pairs):
    """CPU per answered request at the offered rates both sides ran: steadier than goodput on a host
    whose other tenants take CPU time (stolen time is not charged to the benchmark's process)."""
    lines = ["", "CPU time per answered request (microseconds of every core the benchmark's JVM used: broker, "
             "Flink job and load generator together), median over all points at each offered rate that both the "
             "first and the second runs of the pairs measured:", "",
             "| scenario | configuration | offered rate (req/s) | points, first / second | CPU us/request, first "
             "| CPU us/request, second | second / first |", "|---|---|---:|---:|---:|---:|---:|"]
    for name, config, firsts, seconds in pooled_by_rate(runs, pairs, points):
        ratios = []
        for rate in sorted(set(firsts) & set(seconds)):
            a, b = statistics.median(firsts[rate]), statistics.median(seconds[rate])
            ratios.append(b / a)
            lines.append(f"| {name} | {config} | {rate} | {len(firsts[rate])} / {len(seconds[rate])} | "
                         f"{a:.0f} | {b:.0f} | {b / a:.2f} |")
        if ratios:
            lines.append(f"| {name} | {config} | median over rates | | | | **{statistics.median(ratios):.2f}** |")
    return lines


def split_points(run, scenario, config, read):
    """offered rate -> [read(the point's per-thread CPU split)] of every open-loop sweep point with such a
    split (runs from before the split have none)."""
    out = {}
    for p in result_points.sweep_points(config_of(run, scenario, config)):
        split = result_points.cpu_split(p)
        if p.get("mode") == "open" and split:
            out.setdefault(round(p["offered"]), []).append(read(split))
    return out


def pair_configs(runs, pairs):
    """(first run's index, second's, scenario, configuration) for every configuration of each pair's first run."""
    for a, b in pairs:
        for s in runs[a][2]["scenarios"]:
            for config in s["configs"]:
                yield a, b, s["name"], config


def paired_split_table(runs, pairs, read, intro, columns):
    """For each pair, scenario and configuration, at each offered rate both runs measured: the medians of
    two values read from each point's CPU split (read(split) -> (value, second value)), the first value's
    ratio (second run / first) and a median of those ratios over the rates."""
    rows = []
    for a, b, name, config in pair_configs(runs, pairs):
        first, second = (split_points(runs[i][2], name, config, read) for i in (a, b))
        ratios = []
        for rate in sorted(set(first) & set(second)):
            fa, fb, ma, mb = (statistics.median(v[k] for v in side[rate])
                              for k, side in ((0, first), (0, second), (1, first), (1, second)))
            if fa > 0:
                ratios.append(fb / fa)
            rows.append(f"| {runs[b][0]} / {runs[a][0]} | {name} | {config} | {rate} | {fa:.0f} | {fb:.0f} | "
                        f"{fb / fa if fa > 0 else float('nan'):.2f} | {ma:.0f} | {mb:.0f} |")
        if ratios:
            rows.append(f"| {runs[b][0]} / {runs[a][0]} | {name} | {config} | median over rates | | | "
                        f"**{statistics.median(ratios):.2f}** | | |")
    if not rows:
        return []
    return ["", intro, "", "| pair | scenario | configuration | offered rate (req/s) | " + columns,
            "|---|---|---|---:|---:|---:|---:|---:|---:|"] + rows


def job_cpu_table(runs, pairs):
    """The job's own CPU per request (its threads except the inference execution threads) at each
    offered rate both runs of a pair measured: what a change to the pipeline's code saves, without
    the broker's and the load generator's share."""
    return paired_split_table(runs, pairs, lambda split: (
        result_points.job_outside_inference_us(split), result_points.part_us(split, "job_operator_mailbox")),
        "The job's own CPU per answered request (microseconds: the job's threads except the inference "
        "execution threads, i.e. source, mailbox, sinks, flushers and timers), median over the points at each "
        "offered rate both runs of a pair measured, and the operator's mailbox thread alone:",
        "job outside inference, first | second | second / first | mailbox, first | mailbox, second |")


def timer_cpu_table(runs, pairs):
    """The job's timer and buffer-flusher threads' CPU per request (part job_other: Flink's "Time Trigger"
    and "OutputFlusher" threads) at each offered rate both runs of a pair measured, beside the source's:
    what a change to the operator's timers saves."""
    return paired_split_table(runs, pairs, lambda split: (
        result_points.part_us(split, "job_other"), result_points.part_us(split, "job_source")),
        "The job's timer and buffer-flusher threads' CPU per answered request (microseconds: Flink's \"Time "
        "Trigger\" and \"OutputFlusher\" threads), median over the points at each offered rate both runs of a "
        "pair measured, and the source's threads:",
        "timers and flushers, first | second | second / first | source, first | source, second |")


def harness_cpu_table(runs, pairs):
    """The load generator's and the broker's CPU per request at each offered rate both runs of a pair
    measured: what the harness itself takes of the cores it shares with the job."""
    return paired_split_table(runs, pairs, lambda split: (
        result_points.part_us(split, "load_generator"), result_points.part_us(split, "broker")),
        "The load generator's and the broker's CPU per answered request (microseconds), median over the "
        "points at each offered rate both runs of a pair measured:",
        "load generator, first | second | second / first | broker, first | broker, second |")

def latency_points(run, scenario, config):
    """offered rate -> [(p50, p99)] of the open-loop sweep points, and the closed loop's (p50, p99)."""
    c = config_of(run, scenario, config)
    out = {}
    for p in (c or {}).get("sweep") or []:
        if p.get("mode") == "open" and p.get("answered"):
            out.setdefault(round(p["offered"]), []).append((p["p50"], p["p99"]))
    unloaded = (c or {}).get("unloaded_closed_loop_1")
    return out, None if not unloaded else (unloaded["p50"], unloaded["p99"])


LOW_RATES = 3


def latency_table(runs, pairs):
    """Latency at low load: one request at a time (closed loop) and the lowest offered rates both
    runs of a pair measured (p50 and p99, ms), where the pipeline's fixed delays show rather than
    queueing."""
    rows = []
    for a, b, name, config in pair_configs(runs, pairs):
        (first, ua), (second, ub) = latency_points(runs[a][2], name, config), \
            latency_points(runs[b][2], name, config)
        if ua and ub:
            rows.append(f"| {runs[b][0]} / {runs[a][0]} | {name} | {config} | one at a time | "
                        f"{ua[0]:.2f} | {ub[0]:.2f} | {ua[1]:.2f} | {ub[1]:.2f} |")
        for rate in sorted(set(first) & set(second))[:LOW_RATES]:
            p50a = statistics.median(v[0] for v in first[rate])
            p50b = statistics.median(v[0] for v in second[rate])
            p99a = statistics.median(v[1] for v in first[rate])
            p99b = statistics.median(v[1] for v in second[rate])
            rows.append(f"| {runs[b][0]} / {runs[a][0]} | {name} | {config} | {rate} | {p50a:.2f} | "
                        f"{p50b:.2f} | {p99a:.2f} | {p99b:.2f} |")
    if not rows:
        return []
    return ["", f"Latency at low load (ms): one request at a time (the closed loop before each sweep) and the "
            f"{LOW_RATES} lowest offered rates both runs of a pair measured (median over the points at a rate):",
            "", "| pair | scenario | configuration | offered rate (req/s) | p50, first | p50, second | p99, first | "
            "p99, second |", "|---|---|---|---:|---:|---:|---:|---:|"] + rows


def low_load_table(runs):
    """Each run's low_load_p99_vs_service_time entries, with the collector's pauses during the
    10%-of-capacity point they were read from (runs from before the pause fields show -)."""
    rows = []
    for label, _, r in runs:
        for t in r.get("targets") or []:
            if t.get("target") != "low_load_p99_vs_service_time" or t.get("measured") is None:
                continue
            config = t["config"].split(" (")[0]
            c = config_of(r, t["scenario"], config)
            point = ((c or {}).get("extra_points") or {}).get("at_10pct_of_capacity") or {}
            pauses = (point.get("cpuPerRequest") or {}).get("gcPauses")
            floor = t.get("passthrough_floor") or {}
            relay = t.get("kafka_relay_floor") or {}
            rows.append(f"| {label} | {t['scenario']} | {config} | "
                        + (f"{point['offered']:.0f} | {point['p50']:.2f} | {point['p99']:.2f}" if point else "- | - | -")
                        + f" | {t['measured']:.2f} | "
                        + (f"{floor['ratio']:.2f}" if floor.get("ratio") is not None else "-") + " | "
                        + (f"{relay['ratio']:.2f}" if relay.get("ratio") is not None else "-") + " | "
                        + (f"{pauses['count']} / {pauses['longestMs']:.0f}" if pauses else "-") + " |")
    if not rows:
        return []
    return ["", "The low-load target of each run (`low_load_p99_vs_service_time`: p99 at 10% of capacity over the "
            "single-request service time, goal <= 1.5), that point's p50 and p99 (ms), the passthrough's own ratio at "
            "the nearest rate, Kafka alone's (the kafka-relay configuration; - in runs without it), and the "
            "collector's stop-the-world pauses during the point (count / longest ms):", "",
            "| run | scenario | configuration | rate (req/s) | p50 | p99 | ratio | passthrough's ratio | "
            "Kafka alone's ratio | GC pauses |",
            "|---|---|---|---:|---:|---:|---:|---:|---:|---:|"] + rows


def send_lag_table(runs):
    """For runs that record it, how late the load generator's sender sent its requests at each
    configuration's lowest offered rates, beside the point's p99 counted from the intended send and
    from the actual send."""
    rows = []
    seen = set()
    for label, path, r in runs:
        if path in seen:
            continue
        seen.add(path)
        for s in r["scenarios"]:
            for name, c in s["configs"].items():
                pts = sorted((p for p in result_points.all_points(c or {}) if p.get("mode") == "open"
                              and p.get("sendLag") and p.get("answered") and p["offered"] <= c.get("goodput", 0) / 2),
                             key=lambda p: p["offered"])
                for p in pts[:LOW_RATES]:
                    lag = p["sendLag"]
                    rows.append(f"| {label} | {s['name']} | {name} | {p['offered']:.0f} | {p['p50']:.2f} | "
                                f"{p['p99']:.2f} | {lag['lagP99']:.2f} | {lag['lagMax']:.1f} | "
                                f"{lag['fromSendP99']:.2f} |")
    if not rows:
        return []
    return ["", f"How late the load generator's sender was at each configuration's {LOW_RATES} lowest offered rates "
            "(below half its goodput), in runs that record it: the point's p50 and p99 from the intended send time, "
            "the sender's lateness (intended send time until the send call returned) p99 and max, and the p99 "
            "counted from the actual send (ms):", "",
            "| run | scenario | configuration | rate (req/s) | p50 | p99 | sent late p99 | sent late max | "
            "p99 from the actual send |", "|---|---|---|---:|---:|---:|---:|---:|---:|"] + rows


def low_points(run, scenario, config):
    """(p50, p99, pauses) of the open-loop points (sweep and extra points) below half the
    configuration's goodput that recorded the collector's pauses."""
    c = config_of(run, scenario, config)
    if not c or not c.get("goodput"):
        return []
    out = []
    for p in all_points(c):
        pauses = (p.get("cpuPerRequest") or {}).get("gcPauses")
        if p.get("mode") == "open" and p.get("answered") and pauses is not None \
                and p["offered"] <= c["goodput"] / 2:
            out.append((p["p50"], p["p99"], pauses))
    return out


def pause_table(runs, pairs):
    """Below half of goodput, how often the collector paused during a point and what a point's
    p99 / p50 was with and without a pause: where the low-load tail is the collector's."""
    rows = []
    for a, b, name, config in pair_configs(runs, pairs):
        cells = []
        for i in (a, b):
            pts = low_points(runs[i][2], name, config)
            quiet = [p99 / p50 for p50, p99, g in pts if g["count"] == 0 and p50]
            paused = [p99 / p50 for p50, p99, g in pts if g["count"] > 0 and p50]
            longest = max((g["longestMs"] for _, _, g in pts), default=0)
            cells.append((len(pts), len(paused), quiet, paused, longest))
        if not cells[0][0] or not cells[1][0]:
            continue
        row = f"| {runs[b][0]} / {runs[a][0]} | {name} | {config}"
        for n, k, quiet, paused, longest in cells:
            row += (f" | {k} of {n} | " + (f"{statistics.median(quiet):.2f}" if quiet else "-") + " | "
                    + (f"{statistics.median(paused):.2f}" if paused else "-") + f" | {longest:.0f}")
        rows.append(row + " |")
    if not rows:
        return []
    return ["", "Open-loop points below half of each configuration's goodput: how many had a stop-the-world pause of "
            "the collector, the median p99 / p50 of the points without one and with one, and the longest pause (ms), "
            "first run of the pair, then second:", "",
            "| pair | scenario | configuration | paused points, first | p99/p50 quiet | p99/p50 paused | longest ms "
            "| paused points, second | p99/p50 quiet | p99/p50 paused | longest ms |",
            "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"] + rows


def pause_totals(runs):
    """Every run's stop-the-world pauses summed over all its points (runs from before the pause
    fields are left out)."""
    rows = []
    for label, _, r in runs:
        count, total, longest, points = 0, 0.0, 0.0, 0
        for s in r["scenarios"]:
            for c in s["configs"].values():
                for p in all_points(c):
                    g = (p.get("cpuPerRequest") or {}).get("gcPauses")
                    if g is None:
                        continue
                    points += 1
                    count += g["count"]
                    total += g["totalMs"]
                    longest = max(longest, g["longestMs"])
        if points:
            rows.append(f"| {label} | {' '.join(r['machine']['jvm_args'])} | {points} | {count} | {total:.0f} | "
                        f"{longest:.0f} |")
    if not rows:
        return []
    return ["", "The collector's stop-the-world pauses during all the points of each run (sweeps and extra points; "
            "not the warm-ups or the closed loops):", "",
            "| run | JVM options | points | pauses | total ms | longest ms |", "|---|---|---:|---:|---:|---:|"] + rows


if __name__ == "__main__":
    main()
