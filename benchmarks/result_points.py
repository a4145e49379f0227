"""Reading a benchmark run's result.json: its configurations, their points and each point's CPU
split by thread (``cpuPerRequest``). Shared by the scripts that tabulate published runs
(``compare-runs.py``, ``saturation.py``, ``stalls.py``), so that they read a point's parts the same way."""
import json


def load(path):
    """A run's result.json, parsed."""
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def config_of(run, scenario, config):
    """A run's result for one configuration of one scenario, or None where it has none."""
    s = next((s for s in run["scenarios"] if s["name"] == scenario), None)
    return None if s is None else s["configs"].get(config)


def sweep_points(c):
    """A configuration's sweep points (none where it failed before its sweep)."""
    return (c or {}).get("sweep") or []


def all_points(c):
    """Every point of a configuration's result: its sweep, then its extra points."""
    extra = c.get("extra_points") or {}
    return sweep_points(c) + list(extra.values() if isinstance(extra, dict) else extra)


def cpu_split(point):
    """The point's CPU per answered request by part, or None where it has none (runs from before the split,
    or a point with no answers)."""
    split = point.get("cpuPerRequest")
    return split if split and split.get("answers") else None


def part_us(split, part):
    """One part's CPU-microseconds per answered request in a split (0 where the split has no such part)."""
    return split["partsUs"].get(part) or 0.0


def job_outside_inference_us(split):
    """The job's CPU per answered request outside its inference execution threads (which run ONNX Runtime):
    source, parser, mailbox, sinks, flushers and timers."""
    return split["jobUs"] - part_us(split, "job_inference_threads")


def number(v):
    """v as a float, None where it is none (result.json writes NaN as "NaN")."""
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if f == f else None


def fmt(v, digits=0):
    """v with thousands separators and {digits} decimals, "-" where it is none or NaN."""
    v = number(v)
    return "-" if v is None else f"{v:,.{digits}f}"
