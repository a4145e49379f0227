#!/usr/bin/env python3
"""Exports a DLRM-shaped recommendation model (random weights, fixed seed) to ONNX.

    dense FP32 [B, 13] -> bottom MLP 13-256-128-32
    sparse INT64 [B, 26] -> 26 embedding tables (Criteo-like skewed row counts), dim 32
    pairwise dot-product interaction of the 27 vectors (351) ++ bottom output (32)
    -> top MLP 383-512-256-1 -> sigmoid -> "probability" FP32 [B, 1]

The weights are RANDOM: this is the shape and cost of a DLRM, not a trained recommender. There
is no public recommendation data set on this machine; the benchmark drives it with synthetic
Zipf-distributed ids.

Usage (Debian's interpreter, which sees python3-torch):
    /usr/bin/python3 benchmarks/models/make_dlrm.py OUT_DIR
writes OUT_DIR/model.onnx and prints the table sizes as JSON.
"""
import json
import os
import sys

import torch
from torch import nn

DENSE = 13
DIM = 32
# 26 tables, skewed like Criteo's categorical features but scaled down (~1.1M rows would be
# ~140 MB; these add up to 92,170 rows, ~11.8 MB at dim 32).
ROWS = [40000, 15000, 10000, 6000, 4000, 3000, 2500, 2000, 1500, 1200, 1000, 800, 700,
        600, 500, 400, 300, 250, 200, 150, 100, 60, 40, 30, 20, 20]
assert len(ROWS) == 26


class Dlrm(nn.Module):
    def __init__(self):
        super().__init__()
        self.bottom = nn.Sequential(nn.Linear(DENSE, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(),
                                    nn.Linear(128, DIM), nn.ReLU())
        self.tables = nn.ModuleList([nn.Embedding(r, DIM) for r in ROWS])
        n = len(ROWS) + 1
        self.pairs = n * (n - 1) // 2
        idx = torch.triu_indices(n, n, offset=1)
        self.register_buffer("li", idx[0] * n + idx[1], persistent=False)
        self.top = nn.Sequential(nn.Linear(self.pairs + DIM, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(),
                                 nn.Linear(256, 1))

    def forward(self, dense, sparse):
        x = self.bottom(dense)                                   # [B, D]
        embs = [t(sparse[:, i]) for i, t in enumerate(self.tables)]
        t = torch.stack([x] + embs, dim=1)                       # [B, 27, D]
        z = torch.bmm(t, t.transpose(1, 2))                      # [B, 27, 27]
        flat = z.reshape(z.shape[0], -1)[:, self.li]             # [B, 351]
        return torch.sigmoid(self.top(torch.cat([x, flat], dim=1)))


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(20240611)
    torch.set_num_threads(1)
    model = Dlrm().eval()
    dense = torch.rand(4, DENSE)
    sparse = torch.stack([torch.randint(0, r, (4,)) for r in ROWS], dim=1)
    path = os.path.join(out, "model.onnx")
    torch.onnx.export(model, (dense, sparse), path, input_names=["dense", "sparse"],
                      output_names=["probability"], opset_version=13,
                      dynamic_axes={"dense": {0: "batch"}, "sparse": {0: "batch"}, "probability": {0: "batch"}})
    params = sum(p.numel() for p in model.parameters())
    print(json.dumps({"file": path, "bytes": os.path.getsize(path), "parameters": params, "rows": ROWS,
                      "dim": DIM, "dense": DENSE, "torch": torch.__version__}))


if __name__ == "__main__":
    main()
