"""Writes flink-gpu-inference.json, the Grafana dashboard (python3 deploy/grafana/make_dashboard.py).

Metric names: docs/METRICS.md. PrometheusDashboardTest checks that every expression returns data.
"""
import json
import os
P = "flink_taskmanager_job_task_operator_gpu_inference_"
M = 'model=~"$model"'
RI = "$__rate_interval"
DS = {"type": "prometheus", "uid": "${datasource}"}

panels = []
pid = [0]
y = [0]

def row(title):
    pid[0] += 1
    panels.append({"type": "row", "title": title, "id": pid[0], "collapsed": False,
                   "gridPos": {"h": 1, "w": 24, "x": 0, "y": y[0]}, "panels": []})
    y[0] += 1

x = [0]
def panel(title, desc, targets, unit="short", w=8, h=8, kind="timeseries"):
    pid[0] += 1
    if x[0] + w > 24:
        x[0] = 0
        y[0] += h
    p = {
        "type": kind, "title": title, "description": desc, "id": pid[0], "datasource": DS,
        "gridPos": {"h": h, "w": w, "x": x[0], "y": y[0]},
        "fieldConfig": {"defaults": {"unit": unit, "custom": {"lineWidth": 1, "fillOpacity": 10}}, "overrides": []},
        "options": {"legend": {"displayMode": "list", "placement": "bottom", "showLegend": True},
                    "tooltip": {"mode": "multi", "sort": "none"}},
        "targets": [{"datasource": DS, "expr": e, "legendFormat": l, "refId": chr(65 + i), "range": True}
                    for i, (e, l) in enumerate(targets)],
    }
    panels.append(p)
    x[0] += w

def endrow(h=8):
    x[0] = 0
    y[0] += h

row("Traffic")
panel("Requests and responses / s", "Requests into and responses out of the inference operator, all subtasks.",
      [(f"sum(rate({P}requestsIn[{RI}]))", "requests in"),
       (f"sum(rate({P}responsesOut[{RI}]))", "responses out")], "reqps")
panel("Responses / s by model version", "Responses (successes and errors) per model version.",
      [(f"sum by (model, version) (rate({P}model_version_responsesOut{{{M}}}[{RI}]))", "{{model}} v{{version}}")], "reqps")
panel("Errors / s by code", "Error responses of the inference operator by error code (docs/PROTOCOL.md), and records "
      "dead-lettered (by the parser: undecodable; by the inference operator: refused as bad input or INTERNAL).",
      [(f"sum by (error) (rate({P}error_errors[{RI}]))", "{{error}}"),
       (f"sum(rate({P}deadLetters[{RI}]))", "dead-lettered")], "reqps")
endrow()
row("Batching")
panel("Batch size (samples)", "Samples per batch over the last 1,024 batches, per model version.",
      [(f"max by (model, version) ({P}model_version_batchSize{{{M},quantile=\"0.5\"}})", "p50 {{model}} v{{version}}"),
       (f"max by (model, version) ({P}model_version_batchSize{{{M},quantile=\"0.99\"}})", "p99 {{model}} v{{version}}"),
       (f"max by (model, version) ({P}model_version_batchCap{{{M}}})", "cap {{model}} v{{version}}")])
panel("Batches / s", "Batches executed per model version.",
      [(f"sum by (model, version) (rate({P}model_version_batches{{{M}}}[{RI}]))", "{{model}} v{{version}}")], "ops")
panel("Queued requests and batches in flight", "Requests waiting in the batchers and batches executing, all subtasks.",
      [(f"sum({P}queuedRequests)", "queued requests"),
       (f"sum({P}inFlightBatches)", "batches executing")])
endrow()
row("Latency")
panel("Queue latency", "Time requests waited in the batcher (p50, p95, p99 over the last 1,024 requests).",
      [(f"max by (model, version) ({P}model_version_queueLatencyUs{{{M},quantile=\"{q}\"}}) / 1000",
        f"p{int(float(q)*100)} {{{{model}}}} v{{{{version}}}}") for q in ("0.5", "0.95", "0.99")], "ms", w=12)
panel("Inference latency", "Batch execution time on the device (p50, p95, p99 over the last 1,024 batches).",
      [(f"max by (model, version) ({P}model_version_inferenceLatencyUs{{{M},quantile=\"{q}\"}}) / 1000",
        f"p{int(float(q)*100)} {{{{model}}}} v{{{{version}}}}") for q in ("0.5", "0.95", "0.99")], "ms", w=12)
endrow()
row("Models and devices")
panel("Models loaded", "Model versions loaded per TaskManager (operator view) and resident per device (model cache).",
      [(f"sum by (tm_id) ({P}loadedModels)", "{{tm_id}}"),
       (f"max by (device) ({P}device_modelsLoaded)", "device {{device}}")])
panel("Model loads, swap-ins, evictions / min", "Cold loads from the repository, swap-ins from host memory and "
      "evictions (LRU, idle, retired, out-of-memory) per device.",
      [(f"sum by (device) (rate({P}device_modelLoads[{RI}])) * 60", "loads {{device}}"),
       (f"sum by (device) (rate({P}device_modelSwapIns[{RI}])) * 60", "swap-ins {{device}}"),
       (f"sum by (device) (rate({P}device_modelEvictions[{RI}])) * 60", "evictions {{device}}")], "short")
panel("Device memory", "Device memory accounted to loaded models, and what models may use.",
      [(f"max by (device) ({P}device_memoryUsedBytes)", "used {{device}}"),
       (f"max by (device) ({P}device_memoryTotalBytes)", "total {{device}}")], "bytes")
endrow()
panel("Device utilisation", "Busy fraction of each device (nvidia-smi on CUDA, execution time on the CPU, modelled "
      "time on simulated GPUs).",
      [(f"max by (device) ({P}device_utilization)", "{{device}}")], "percentunit", w=12)
panel("Device temperature", "GPU temperature from nvidia-smi (CUDA devices only; no value on CPU and simulated "
      "devices).",
      [(f"max by (device) ({P}device_temperatureCelsius)", "{{device}}")], "celsius", w=12)
endrow()

dash = {
    "__inputs": [], "title": "flink-gpu-inference", "uid": "flink-gpu-inference",
    "description": "Dynamically batched model inference on Flink: traffic, batching, latency, models and devices. "
                   "Metric names: docs/METRICS.md.",
    "tags": ["flink", "inference"], "timezone": "browser", "schemaVersion": 39, "version": 1, "editable": True,
    "refresh": "10s", "time": {"from": "now-30m", "to": "now"}, "graphTooltip": 1,
    "templating": {"list": [
        {"name": "datasource", "label": "Data source", "type": "datasource", "query": "prometheus",
         "current": {}, "hide": 0, "refresh": 1},
        {"name": "model", "label": "Model", "type": "query", "datasource": DS,
         "query": {"query": f"label_values({P}model_version_requestsIn, model)", "refId": "model"},
         "definition": f"label_values({P}model_version_requestsIn, model)",
         "includeAll": True, "multi": True, "allValue": ".*", "current": {"text": "All", "value": "$__all"},
         "refresh": 2, "sort": 1, "hide": 0},
    ]},
    "annotations": {"list": []},
    "panels": panels,
}
out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "flink-gpu-inference.json")
with open(out, "w") as f:
    json.dump(dash, f, indent=2)
    f.write("\n")
print(sum(len(p.get("targets", [])) for p in panels), "expressions")
