"""What the two Fashion-MNIST training scripts share: the dataset's IDX files, seeding, the
training loop, the ONNX export and its check against an independent NumPy interpreter.

Each script keeps its own model, hyper-parameters and config.json; with the same seed and the
same PyTorch build a script writes the same bytes again.
"""

import gzip
import io
import os
import random
import struct
import time

import numpy as np
import onnx
import torch
import torch.nn.functional as F

import np_onnx_eval

DATASET_DIR = os.environ.get("FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist")
SUBSET = 2000

LABELS = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
          "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"]


# --------------------------------------------------------------------------- IDX I/O
def read_idx(path):
    """Read an IDX file (optionally gzipped). Returns a uint8 ndarray."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        raw = f.read()
    zero, dtype_code, ndim = struct.unpack(">HBB", raw[:4])
    if zero != 0 or dtype_code != 0x08:
        raise ValueError(f"{path}: not an unsigned-byte IDX file")
    dims = struct.unpack(">" + "I" * ndim, raw[4:4 + 4 * ndim])
    data = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim)
    if data.size != int(np.prod(dims)):
        raise ValueError(f"{path}: size mismatch {data.size} vs {dims}")
    return data.reshape(dims)


def write_idx_gz(path, arr):
    """Write a uint8 array as gzipped IDX, byte-for-byte reproducible."""
    arr = np.ascontiguousarray(arr, dtype=np.uint8)
    header = struct.pack(">HBB", 0, 0x08, arr.ndim) + struct.pack(">" + "I" * arr.ndim, *arr.shape)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    buf = io.BytesIO()
    # filename="" and mtime=0 keep the gzip header free of build-specific data.
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, compresslevel=9, mtime=0) as gz:
        gz.write(header)
        gz.write(arr.tobytes())
    with open(path, "wb") as f:
        f.write(buf.getvalue())


def seed_everything(seed):
    torch.set_num_threads(2)
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.use_deterministic_algorithms(True)


def load_dataset():
    """The four original IDX files: (train images, train labels, test images, test labels) as uint8."""
    tr_x = read_idx(os.path.join(DATASET_DIR, "train-images-idx3-ubyte.gz"))
    tr_y = read_idx(os.path.join(DATASET_DIR, "train-labels-idx1-ubyte.gz"))
    te_x = read_idx(os.path.join(DATASET_DIR, "t10k-images-idx3-ubyte.gz"))
    te_y = read_idx(os.path.join(DATASET_DIR, "t10k-labels-idx1-ubyte.gz"))
    assert tr_x.shape == (60000, 28, 28) and tr_y.shape == (60000,)
    assert te_x.shape == (10000, 28, 28) and te_y.shape == (10000,)
    print(f"train {tr_x.shape} test {te_x.shape}", flush=True)
    return tr_x, tr_y, te_x, te_y


def as_tensors(tr_x, tr_y, te_x, te_y):
    """Inputs pixel/255 as [N,1,28,28], labels int64, and the training pixels' mean and std."""
    xtr = torch.from_numpy(tr_x.astype(np.float32) / 255.0).unsqueeze(1)
    ytr = torch.from_numpy(tr_y.astype(np.int64))
    xte = torch.from_numpy(te_x.astype(np.float32) / 255.0).unsqueeze(1)
    yte = torch.from_numpy(te_y.astype(np.int64))
    mean = float(xtr.mean())
    std = float(xtr.std())
    print(f"train pixel mean {mean:.6f} std {std:.6f}", flush=True)
    return xtr, ytr, xte, yte, mean, std


def accuracy_torch(model, x, y, bs=1000):
    model.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, len(x), bs):
            correct += (model(x[i:i + bs]).argmax(1) == y[i:i + bs]).sum().item()
    return correct / len(x)


def train(model, xtr, ytr, xte, yte, epochs, batch, lr, seed):
    """Adam with a one-cycle schedule; one shuffled pass per epoch; returns the final test accuracy."""
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    steps_per_epoch = (len(xtr) + batch - 1) // batch
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, epochs=epochs,
                                                steps_per_epoch=steps_per_epoch)
    gen = torch.Generator().manual_seed(seed)
    t0 = time.time()
    for epoch in range(epochs):
        model.train()
        perm = torch.randperm(len(xtr), generator=gen)
        total = 0.0
        for i in range(0, len(xtr), batch):
            idx = perm[i:i + batch]
            opt.zero_grad()
            loss = F.cross_entropy(model(xtr[idx]), ytr[idx])
            loss.backward()
            opt.step()
            sched.step()
            total += loss.item() * len(idx)
        acc = accuracy_torch(model, xte, yte)
        print(f"epoch {epoch + 1}/{epochs} loss {total / len(xtr):.4f} "
              f"test_acc {acc:.4f} ({time.time() - t0:.0f}s)", flush=True)
    model.eval()
    return accuracy_torch(model, xte, yte)


def export(model, onnx_path, opset, doc):
    """Exports input "input" FP32 [N,1,28,28] -> "logits" [N,10] with weights inline; returns the loaded model."""
    os.makedirs(os.path.dirname(onnx_path), exist_ok=True)
    dummy = torch.zeros(1, 1, 28, 28)
    buf = io.BytesIO()
    torch.onnx.export(model, dummy, buf,
                      input_names=["input"], output_names=["logits"],
                      dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}},
                      opset_version=opset, do_constant_folding=True,
                      export_params=True)
    m = onnx.load_from_string(buf.getvalue())
    m.doc_string = doc
    onnx.checker.check_model(m, full_check=True)
    for t in m.graph.initializer:
        assert t.data_location != onnx.TensorProto.EXTERNAL and not t.external_data, t.name
    with open(onnx_path, "wb") as f:
        f.write(m.SerializeToString())
    m = onnx.load(onnx_path)
    onnx.checker.check_model(onnx_path)
    opsets = {o.domain or "ai.onnx": o.version for o in m.opset_import}
    ops = sorted({n.op_type for n in m.graph.node})
    print(f"exported {onnx_path} ({os.path.getsize(onnx_path)} bytes) "
          f"ir_version {m.ir_version} opset {opsets} ops {ops}", flush=True)
    return m


def check_export(m, model, xte, te_y, torch_acc):
    """Runs the exported graph in the NumPy interpreter on the full test set: (accuracy, first-SUBSET accuracy)."""
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
    return onnx_acc, subset_acc
