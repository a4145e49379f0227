#!/usr/bin/env python3
"""Writes a table comparing two configurations measured side by side in each of several benchmark
runs (their result.json files): each run's goodput of both, the ratio (second / first), and the
median ratio per scenario; then each configuration's p99 at every offered rate both measured in a
run, as the median over the runs. Pairs within one run see the same machine at the same time, so
their ratio is steadier than a comparison across runs.

Usage, from the repository root:
  python3 benchmarks/compare-configs.py "TITLE" OUT.md FIRST=LABEL SECOND=LABEL run1.json [run2.json ...]
where FIRST and SECOND are configuration names of the runs (e.g. job-tuned-2=one-thread).
"""
import json
import os
import statistics
import sys


def scenario(run, name):
    return next((s for s in run["scenarios"] if s["name"] == name), None)


def config(run, name, cfg):
    s = scenario(run, name)
    return None if s is None else s["configs"].get(cfg)


def open_points(c):
    """{offered rate: point} of a configuration's open-loop sweep points (the first try at a rate)."""
    out = {}
    for p in (c or {}).get("sweep") or []:
        if p.get("mode") == "open" and p.get("offered"):
            out.setdefault(round(p["offered"]), p)
    return out


def main():
    title, out = sys.argv[1], sys.argv[2]
    (first, first_label), (second, second_label) = (a.split("=", 1) for a in sys.argv[3:5])
    paths = sys.argv[5:]
    runs = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            runs.append((path, json.load(f)))
    base = os.path.dirname(out)
    lines = [f"# {title}", "", f"First: `{first}` ({first_label}); second: `{second}` ({second_label}), both in "
             "every run below, one after the other on the same machine.", ""]
    for path, r in runs:
        lines.append(f"- run `{r['run_id']}` at revision `{r['versions']['git']}` "
                     f"([result.json]({os.path.relpath(path, base)})), {r['contended_load_points']} of "
                     f"{r['load_points']} load points contended")
    lines += ["", "Goodput (req/s within the scenario's SLO; in quick mode the grid steps by x2 with one "
              "bisection, so a grid step is the resolution of one run):", "",
              f"| scenario | run | {first_label} | {second_label} | {second_label} / {first_label} |",
              "|---|---|---:|---:|---:|"]
    names = []
    for _, r in runs:
        for s in r["scenarios"]:
            if s["name"] not in names:
                names.append(s["name"])
    for name in names:
        ratios = []
        for _, r in runs:
            a, b = config(r, name, first), config(r, name, second)
            if a is None or b is None or not a.get("goodput") or b.get("goodput") is None:
                continue
            ratio = float(b["goodput"]) / float(a["goodput"])
            ratios.append(ratio)
            lines.append(f"| {name} | `{r['run_id']}` | {a['goodput']:.0f} | {b['goodput']:.0f} | {ratio:.2f} |")
        if ratios:
            lines.append(f"| {name} | median of {len(ratios)} | | | **{statistics.median(ratios):.2f}** |")
    lines += ["", "p99 latency (ms) at each offered rate both configurations ran in a run (their first try at "
              "it), median over those runs:", "",
              f"| scenario | offered rate (req/s) | runs | {first_label} p99 | {second_label} p99 | "
              f"{first_label} mean batch | {second_label} mean batch |", "|---|---:|---:|---:|---:|---:|---:|"]
    for name in names:
        by_rate = {}
        for _, r in runs:
            pa, pb = open_points(config(r, name, first)), open_points(config(r, name, second))
            for rate in set(pa) & set(pb):
                by_rate.setdefault(rate, []).append((pa[rate], pb[rate]))
        for rate in sorted(by_rate):
            pairs = by_rate[rate]
            med = lambda key, i: statistics.median(float(p[i][key]) for p in pairs)
            lines.append(f"| {name} | {rate} | {len(pairs)} | {med('p99', 0):.1f} | {med('p99', 1):.1f} | "
                         f"{med('meanBatch', 0):.1f} | {med('meanBatch', 1):.1f} |")
    with open(out, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
