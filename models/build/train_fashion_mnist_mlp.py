#!/usr/bin/python3
"""Train a small MLP on Fashion-MNIST and export it as ONNX: the second shipped model.

Run from anywhere with Debian's interpreter:

    /usr/bin/python3 models/build/train_fashion_mnist_mlp.py

Needs the Debian packages python3-torch, python3-onnx, python3-numpy and
dataset-fashion-mnist (the four original IDX .gz files in
/usr/share/datasets/fashion-mnist/). Nothing is downloaded.

Same interface as fashion-mnist-cnn, so one request format serves both models
(the local default's shifting traffic sends the same images to either):

Writes (paths relative to the repository root):
  models/fashion-mnist-mlp/1/model.onnx   opset 13, input "input" FP32 [N,1,28,28]
                                          (pixel/255), output "logits" FP32 [N,10]
  models/fashion-mnist-mlp/config.json    Triton-like model config + measured accuracy
"""

import json
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.dont_write_bytecode = True  # keep models/build free of __pycache__
sys.path.insert(0, HERE)
from fashion_mnist_training import (LABELS, as_tensors, check_export, export, load_dataset,  # noqa: E402
                                    seed_everything, train)

MODEL_NAME = "fashion-mnist-mlp"
MODEL_DIR = os.path.join(REPO, "models", MODEL_NAME)
ONNX_PATH = os.path.join(MODEL_DIR, "1", "model.onnx")
CONFIG_PATH = os.path.join(MODEL_DIR, "config.json")

SEED = 20240602
EPOCHS = int(os.environ.get("EPOCHS", "6"))
BATCH = 128
LR = 2e-3
OPSET = 13
HIDDEN = (128, 64)


class FashionMLP(nn.Module):
    """Input: [N,1,28,28] float in [0,1] (pixel/255). Output: logits [N,10].

    The dataset mean/std normalisation is part of the model."""

    def __init__(self, mean, std):
        super().__init__()
        self.register_buffer("mean", torch.tensor([[[[mean]]]], dtype=torch.float32))
        self.register_buffer("std", torch.tensor([[[[std]]]], dtype=torch.float32))
        self.fc1 = nn.Linear(28 * 28, HIDDEN[0])
        self.fc2 = nn.Linear(HIDDEN[0], HIDDEN[1])
        self.fc3 = nn.Linear(HIDDEN[1], 10)

    def forward(self, x):
        x = (x - self.mean) / self.std
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


def main():
    seed_everything(SEED)
    tr_x, tr_y, te_x, te_y = load_dataset()
    xtr, ytr, xte, yte, mean, std = as_tensors(tr_x, tr_y, te_x, te_y)
    model = FashionMLP(mean, std)
    params = sum(p.numel() for p in model.parameters())
    print(f"{params} parameters", flush=True)
    torch_acc = train(model, xtr, ytr, xte, yte, EPOCHS, BATCH, LR, SEED)
    m = export(model, ONNX_PATH, OPSET, "Fashion-MNIST MLP; input pixel/255 in [0,1], normalisation inside")
    size = os.path.getsize(ONNX_PATH)
    assert size < 1_000_000, size
    onnx_acc, subset_acc = check_export(m, model, xte, te_y, torch_acc)

    config = {
        "name": MODEL_NAME,
        "platform": "onnxruntime",
        "max_batch_size": 64,
        "inputs": [{"name": "input", "datatype": "FP32", "shape": [1, 28, 28], "allow_nan": False}],
        "outputs": [{"name": "logits", "datatype": "FP32", "shape": [10]}],
        "dynamic_batching": {"preferred_batch_sizes": [], "max_enqueued_batches": 4},
        "labels": LABELS,
        "description": f"Small MLP (784-{HIDDEN[0]}-{HIDDEN[1]}-10) trained on Fashion-MNIST (real weights), "
                       f"input pixel/255; test accuracy {onnx_acc:.4f}",
        "metrics": {"test_accuracy": round(onnx_acc, 4),
                    "subset_accuracy": round(subset_acc, 4),
                    "dataset": "Fashion-MNIST test split (10000 images); subset: data/fashion-mnist first 2000"},
    }
    with open(CONFIG_PATH, "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")
    print(f"wrote {CONFIG_PATH}")
    print(f"TEST_ACCURACY {onnx_acc:.4f}")
    if onnx_acc < 0.85:
        print("WARNING: test accuracy below 0.85", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
