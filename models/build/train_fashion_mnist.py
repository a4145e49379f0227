#!/usr/bin/python3
"""Train a small CNN on Fashion-MNIST and export it as ONNX.

Run from anywhere with Debian's interpreter:

    /usr/bin/python3 models/build/train_fashion_mnist.py

Needs the Debian packages python3-torch, python3-onnx, python3-numpy and
dataset-fashion-mnist (which ships the four original IDX .gz files in
/usr/share/datasets/fashion-mnist/). Nothing is downloaded.

Writes (paths relative to the repository root):
  models/fashion-mnist-cnn/1/model.onnx   opset 13, input "input" FP32 [N,1,28,28]
                                          (pixel/255), output "logits" FP32 [N,10]
  models/fashion-mnist-cnn/config.json    Triton-like model config + measured accuracy
  data/fashion-mnist/test-images-2000.idx3-ubyte.gz  first 2000 test images (IDX)
  data/fashion-mnist/test-labels-2000.idx1-ubyte.gz  first 2000 test labels (IDX)
"""

import json
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.dont_write_bytecode = True  # keep models/build free of __pycache__
sys.path.insert(0, HERE)
from fashion_mnist_training import (LABELS, SUBSET, as_tensors, check_export, export,  # noqa: E402
                                    load_dataset, read_idx, seed_everything, train, write_idx_gz)

MODEL_NAME = "fashion-mnist-cnn"
MODEL_DIR = os.path.join(REPO, "models", MODEL_NAME)
ONNX_PATH = os.path.join(MODEL_DIR, "1", "model.onnx")
CONFIG_PATH = os.path.join(MODEL_DIR, "config.json")
DATA_DIR = os.path.join(REPO, "data", "fashion-mnist")
SEED = 20240601
EPOCHS = int(os.environ.get("EPOCHS", "10"))
BATCH = 128
LR = 3e-3
OPSET = 13


# --------------------------------------------------------------------------- model
class FashionCNN(nn.Module):
    """Input: [N,1,28,28] float in [0,1] (pixel/255). Output: logits [N,10].

    The dataset mean/std normalisation is part of the model."""

    def __init__(self, mean, std):
        super().__init__()
        self.register_buffer("mean", torch.tensor([[[[mean]]]], dtype=torch.float32))
        self.register_buffer("std", torch.tensor([[[[std]]]], dtype=torch.float32))
        self.conv1 = nn.Conv2d(1, 16, 3)    # 28 -> 26, pool -> 13
        self.conv2 = nn.Conv2d(16, 32, 3)   # 13 -> 11, pool -> 5
        self.fc1 = nn.Linear(32 * 5 * 5, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        x = (x - self.mean) / self.std
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        return self.fc2(x)


def main():
    seed_everything(SEED)
    tr_x, tr_y, te_x, te_y = load_dataset()

    # Test subset for the Java side, in the original IDX format.
    os.makedirs(DATA_DIR, exist_ok=True)
    write_idx_gz(os.path.join(DATA_DIR, "test-images-2000.idx3-ubyte.gz"), te_x[:SUBSET])
    write_idx_gz(os.path.join(DATA_DIR, "test-labels-2000.idx1-ubyte.gz"), te_y[:SUBSET])
    # Round-trip check.
    assert np.array_equal(read_idx(os.path.join(DATA_DIR, "test-images-2000.idx3-ubyte.gz")), te_x[:SUBSET])
    assert np.array_equal(read_idx(os.path.join(DATA_DIR, "test-labels-2000.idx1-ubyte.gz")), te_y[:SUBSET])

    xtr, ytr, xte, yte, mean, std = as_tensors(tr_x, tr_y, te_x, te_y)
    model = FashionCNN(mean, std)
    torch_acc = train(model, xtr, ytr, xte, yte, EPOCHS, BATCH, LR, SEED)
    m = export(model, ONNX_PATH, OPSET, "Fashion-MNIST CNN; input pixel/255 in [0,1], normalisation inside")
    onnx_acc, _ = check_export(m, model, xte, te_y, torch_acc)

    config = {
        "name": MODEL_NAME,
        "platform": "onnxruntime",
        "max_batch_size": 64,
        "inputs": [{"name": "input", "datatype": "FP32", "shape": [1, 28, 28], "allow_nan": False}],
        "outputs": [{"name": "logits", "datatype": "FP32", "shape": [10]}],
        "dynamic_batching": {"max_queue_delay_ms": 5, "preferred_batch_sizes": [], "max_enqueued_batches": 4},
        "labels": LABELS,
        "description": "Small CNN trained on Fashion-MNIST (real weights), input pixel/255",
        "metrics": {"test_accuracy": round(onnx_acc, 4),
                    "dataset": "Fashion-MNIST test split (10000 images)"},
    }
    with open(CONFIG_PATH, "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")
    print(f"wrote {CONFIG_PATH}")
    print(f"TEST_ACCURACY {onnx_acc:.4f}")
    if onnx_acc < 0.88:
        print("WARNING: test accuracy below 0.88", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
