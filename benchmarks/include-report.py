#!/usr/bin/env python3
"""Copies a benchmark run's generated tables into docs/BENCHMARKS.md, so that no number there is
typed by hand. Everything between <!-- generated:NAME:begin --> and <!-- generated:NAME:end -->
is replaced by the run's header lines, and per scenario its ceiling and configuration tables,
plots and targets (the "Every point" tables stay in the run's report.md, which is linked).

With --targets it renders instead one table of the inference scenarios' pass/fail targets from
one or more summary.json files side by side (one column per file, labelled LABEL=FILE), so that a
reading across runs quotes generated values too.

Usage, from the repository root:
  python3 benchmarks/include-report.py docs/BENCHMARKS.md full docs/benchmarks/full/report.md
  python3 benchmarks/include-report.py docs/BENCHMARKS.md targets --targets \
      "CPU, full run=docs/benchmarks/summary.json" "simulated GPU=docs/benchmarks/simulated/summary.json"
"""
import json
import os
import re
import sys


def sections(text):
    """Splits markdown into (heading line, level, body lines)."""
    out, current = [], None
    for line in text.splitlines():
        m = re.match(r"^(#{1,6}) ", line)
        if m:
            current = [line, len(m.group(1)), []]
            out.append(current)
        elif current is not None:
            current[2].append(line)
        else:
            out.append([None, 0, [line]])
    return out


def render(report_path, doc_path):
    text = open(report_path, encoding="utf-8").read()
    rel = os.path.relpath(os.path.dirname(report_path), os.path.dirname(doc_path))
    lines = [f"Generated from [{os.path.relpath(report_path, os.path.dirname(doc_path))}]"
             f"({os.path.relpath(report_path, os.path.dirname(doc_path))}) by `benchmarks/include-report.py`; "
             "every point of every sweep is in that report.", ""]
    skip_level = None
    for heading, level, body in sections(text):
        if heading is None:
            continue
        title = heading.lstrip("#").strip()
        if skip_level is not None and level > skip_level:
            continue
        skip_level = None
        if title.startswith("Every point"):
            skip_level = level
            continue
        if level == 1:
            lines.append("### " + title)
        else:
            lines.append("#" * (level + 2) + " " + title)
        for b in body:
            # relative links (plots, result files) point from the report's folder; make them point from the doc's
            b = re.sub(r"(!?)\[([^\]]*)\]\((?![a-z]+://|/|#)([^)\s]+)\)",
                       lambda m: f"{m.group(1)}[{m.group(2)}]({rel}/{m.group(3)})", b)
            lines.append(b)
    return "\n".join(lines).strip() + "\n"


INFERENCE_SCENARIOS = ("image", "recommendation", "nlp")


def shown(measured, goal, passed):
    """The measured value to two decimals, or to as many more (up to four) as it takes for the
    rounded value to read on the same side of the goal as the target's pass or fail (0.989
    against >= 0.99 is not shown as 0.99)."""
    m = re.fullmatch(r"\s*(>=|<=|>|<)\s*([0-9.]+)\s*", goal) if isinstance(goal, str) else None
    for digits in (2, 3, 4):
        value = f"{measured:.{digits}f}"
        if m is None or passed is None:
            return value
        op, bound = m.group(1), float(m.group(2))
        v = float(value)
        reads = {">=": v >= bound, "<=": v <= bound, ">": v > bound, "<": v < bound}[op]
        if reads == passed:
            return value
    return value


def targets_table(labelled, doc_path):
    """One row per (scenario, target) with a pass/fail goal, one column per summary file: the
    measured value and whether it passed. The first row of a (scenario, target) in a file is
    taken (the DataStream job's; the SQL targets have names of their own)."""
    runs, rows = [], []
    for label, path in labelled:
        summary = json.load(open(path, encoding="utf-8"))
        link = os.path.relpath(path, os.path.dirname(doc_path))
        # a summary keeps targets merged in from earlier runs; a column shows its own run's only
        own = [t for t in summary["targets"]
               if t.get("scenario") in INFERENCE_SCENARIOS and t.get("run") == summary["run_id"]]
        runs.append((label, summary, link, own))
        for t in own:
            key = (t.get("scenario"), t.get("target"))
            if t.get("pass") is not None and key not in rows:
                rows.append(key)
    order = {s: i for i, s in enumerate(INFERENCE_SCENARIOS)}
    rows.sort(key=lambda k: order[k[0]])  # stable: each scenario's targets in the harness's order
    lines = ["Generated from " + ", ".join(f"[{label}]({link}) (run `{summary['run_id']}`)"
                                           for label, summary, link, _ in runs)
             + " by `benchmarks/include-report.py --targets`; **bold** is a pass. Where a"
             " roofline entry gives the range that its sweeps' grids leave the share in, it follows"
             " the value.", "",
             "| scenario | target | goal | " + " | ".join(label for label, _, _, _ in runs) + " |",
             "|---|---|---|" + "---|" * len(runs)]
    for scenario, target in rows:
        goals, cells = [], []
        for _, _, _, own in runs:
            found = next((t for t in own if t.get("scenario") == scenario and t.get("target") == target), None)
            if found is None or found.get("measured") is None:
                cells.append("not measured")
                continue
            goal = found.get("goal") or "information"
            if goal not in goals:
                goals.append(goal)
            value = shown(found["measured"], found.get("goal"), found.get("pass"))
            if found.get("pass") is None:
                cell = value + " (information)"
            else:
                cell = f"**{value}**" if found["pass"] else value + " (fail)"
            if found.get("share_low") is not None and found.get("share_high") is not None:
                cell += f"; the grids allow {found['share_low']:.2f}-{found['share_high']:.2f}"
            cells.append(cell)
        lines.append(f"| {scenario} | `{target}` | {' / '.join(goals)} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def replace_block(doc, name, body):
    content = open(doc, encoding="utf-8").read()
    begin, end = f"<!-- generated:{name}:begin -->", f"<!-- generated:{name}:end -->"
    if begin not in content or end not in content:
        sys.exit(f"{doc} has no {begin} ... {end} markers")
    head, rest = content.split(begin, 1)
    _, tail = rest.split(end, 1)
    open(doc, "w", encoding="utf-8").write(head + begin + "\n" + body + end + tail)


def main():
    if len(sys.argv) > 3 and sys.argv[3] == "--targets":
        doc, name = sys.argv[1:3]
        labelled = [arg.split("=", 1) for arg in sys.argv[4:]]
        if not labelled or any(len(pair) != 2 for pair in labelled):
            sys.exit("--targets takes LABEL=summary.json arguments")
        replace_block(doc, name, targets_table(labelled, doc))
        return
    doc, name, report = sys.argv[1:4]
    replace_block(doc, name, render(report, doc))


if __name__ == "__main__":
    main()
