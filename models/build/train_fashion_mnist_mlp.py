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

import io
import json
import os
import random
import sys
import time

import numpy as np
import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.dont_write_bytecode = True  # keep models/build free of __pycache__
sys.path.insert(0, HERE)
import np_onnx_eval  # noqa: E402
from train_fashion_mnist import LABELS, SUBSET, accuracy_torch, read_idx  # noqa: E402

DATASET_DIR = os.environ.get("FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist")
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
    torch.set_num_threads(2)
    random.seed(SEED)
    np.random.seed(SEED)
    torch.manual_seed(SEED)
    torch.use_deterministic_algorithms(True)

    tr_x = read_idx(os.path.join(DATASET_DIR, "train-images-idx3-ubyte.gz"))
    tr_y = read_idx(os.path.join(DATASET_DIR, "train-labels-idx1-ubyte.gz"))
    te_x = read_idx(os.path.join(DATASET_DIR, "t10k-images-idx3-ubyte.gz"))
    te_y = read_idx(os.path.join(DATASET_DIR, "t10k-labels-idx1-ubyte.gz"))
    assert tr_x.shape == (60000, 28, 28) and tr_y.shape == (60000,)
    assert te_x.shape == (10000, 28, 28) and te_y.shape == (10000,)
    print(f"train {tr_x.shape} test {te_x.shape}", flush=True)

    xtr = torch.from_numpy(tr_x.astype(np.float32) / 255.0).unsqueeze(1)
    ytr = torch.from_numpy(tr_y.astype(np.int64))
    xte = torch.from_numpy(te_x.astype(np.float32) / 255.0).unsqueeze(1)
    yte = torch.from_numpy(te_y.astype(np.int64))
    mean = float(xtr.mean())
    std = float(xtr.std())
    print(f"train pixel mean {mean:.6f} std {std:.6f}", flush=True)

    model = FashionMLP(mean, std)
    params = sum(p.numel() for p in model.parameters())
    print(f"{params} parameters", flush=True)
    opt = torch.optim.Adam(model.parameters(), lr=LR)
    steps_per_epoch = (len(xtr) + BATCH - 1) // BATCH
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=LR, epochs=EPOCHS,
                                                steps_per_epoch=steps_per_epoch)
    gen = torch.Generator().manual_seed(SEED)
    t0 = time.time()
    for epoch in range(EPOCHS):
        model.train()
        perm = torch.randperm(len(xtr), generator=gen)
        total = 0.0
        for i in range(0, len(xtr), BATCH):
            idx = perm[i:i + BATCH]
            opt.zero_grad()
            loss = F.cross_entropy(model(xtr[idx]), ytr[idx])
            loss.backward()
            opt.step()
            sched.step()
            total += loss.item() * len(idx)
        acc = accuracy_torch(model, xte, yte)
        print(f"epoch {epoch + 1}/{EPOCHS} loss {total / len(xtr):.4f} "
              f"test_acc {acc:.4f} ({time.time() - t0:.0f}s)", flush=True)

    model.eval()
    torch_acc = accuracy_torch(model, xte, yte)

    # ---------------------------------------------------------------- export
    os.makedirs(os.path.dirname(ONNX_PATH), exist_ok=True)
    dummy = torch.zeros(1, 1, 28, 28)
    buf = io.BytesIO()
    torch.onnx.export(model, dummy, buf,
                      input_names=["input"], output_names=["logits"],
                      dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}},
                      opset_version=OPSET, do_constant_folding=True,
                      export_params=True)
    m = onnx.load_from_string(buf.getvalue())
    m.doc_string = "Fashion-MNIST MLP; input pixel/255 in [0,1], normalisation inside"
    onnx.checker.check_model(m, full_check=True)
    for t in m.graph.initializer:
        assert t.data_location != onnx.TensorProto.EXTERNAL and not t.external_data, t.name
    with open(ONNX_PATH, "wb") as f:
        f.write(m.SerializeToString())
    m = onnx.load(ONNX_PATH)
    onnx.checker.check_model(ONNX_PATH)
    opsets = {o.domain or "ai.onnx": o.version for o in m.opset_import}
    ops = sorted({n.op_type for n in m.graph.node})
    size = os.path.getsize(ONNX_PATH)
    print(f"exported {ONNX_PATH} ({size} bytes) ir_version {m.ir_version} opset {opsets} ops {ops}", flush=True)
    assert size < 1_000_000, size

    # Check the exported graph independently of PyTorch (NumPy interpreter)
    # and measure the accuracy of the artifact itself on the full test set.
    logits = []
    for i in range(0, len(xte), 500):
        logits.append(np_onnx_eval.run(m, {"input": xte[i:i + 500].numpy()})["logits"])
    logits = np.concatenate(logits)
    with torch.no_grad():
        ref = model(xte).numpy()
    max_diff = float(np.abs(logits - ref).max())
    onnx_pred = logits.argmax(1)
    onnx_acc = float((onnx_pred == te_y).mean())
    subset_acc = float((onnx_pred[:SUBSET] == te_y[:SUBSET]).mean())
    print(f"torch test acc {torch_acc:.4f}; ONNX (numpy) test acc {onnx_acc:.4f}; "
          f"first-{SUBSET} acc {subset_acc:.4f}; max |logit diff| {max_diff:.2e}", flush=True)
    assert max_diff < 1e-3, max_diff
    assert abs(onnx_acc - torch_acc) < 1e-3

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
