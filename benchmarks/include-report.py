#!/usr/bin/env python3
"""Copies a benchmark run's generated tables into docs/BENCHMARKS.md, so that no number there is
typed by hand. Everything between <!-- generated:NAME:begin --> and <!-- generated:NAME:end -->
is replaced by the run's header lines, and per scenario its ceiling and configuration tables,
plots and targets (the "Every point" tables stay in the run's report.md, which is linked).

Usage, from the repository root:
  python3 benchmarks/include-report.py docs/BENCHMARKS.md full docs/benchmarks/full/report.md
"""
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


def main():
    doc, name, report = sys.argv[1:4]
    content = open(doc, encoding="utf-8").read()
    begin, end = f"<!-- generated:{name}:begin -->", f"<!-- generated:{name}:end -->"
    if begin not in content or end not in content:
        sys.exit(f"{doc} has no {begin} ... {end} markers")
    head, rest = content.split(begin, 1)
    _, tail = rest.split(end, 1)
    open(doc, "w", encoding="utf-8").write(head + begin + "\n" + render(report, doc) + end + tail)


if __name__ == "__main__":
    main()
