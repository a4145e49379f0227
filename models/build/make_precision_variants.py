#!/usr/bin/python3
"""Writes the FP16 and INT8 variants of models/fashion-mnist-cnn/1/model.onnx.

- model.fp16.onnx: weights and biases stored as FP16 (half the bytes), each followed by a Cast
  back to FP32, so every runtime can execute it; on a GPU ONNX Runtime's graph optimiser can keep
  the FP16 path, on the CPU it computes in FP32.
- model.int8.onnx: post-training static quantisation with PyTorch (engine qnnpack; Debian's
  torch has no FBGEMM), calibrated on 2,000 Fashion-MNIST *training* images, exported as ONNX
  QDQ (QuantizeLinear/DequantizeLinear around Conv and Gemm), which ONNX Runtime fuses into
  QLinearConv / QGemm.

The FP32 weights are read back from the shipped model.onnx, so this reproduces the variants of
exactly that model. Accuracy of all three on the shipped held-out images is measured in Java
(PrecisionVariantsTest) and recorded in models/README.md.

Needs Debian's python3-torch, python3-onnx, python3-numpy, dataset-fashion-mnist; run with
/usr/bin/python3 from the repository root.
"""
import gzip
import io
import os
import struct

import numpy as np
import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F
from onnx import helper, numpy_helper, TensorProto

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODEL_DIR = os.path.join(ROOT, "models", "fashion-mnist-cnn", "1")
FP32 = os.path.join(MODEL_DIR, "model.onnx")
TRAIN_IMAGES = "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"
TEST_IMAGES = "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz"
TEST_LABELS = "/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz"
SEED = 7


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    magic, = struct.unpack(">I", data[:4])
    dims = magic & 0xFF
    shape = struct.unpack(">" + "I" * dims, data[4:4 + 4 * dims])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def write_fp16(model):
    m = onnx.ModelProto()
    m.CopyFrom(model)
    g = m.graph
    keep_fp32 = {"mean", "std"}  # scalars of the normalisation: no gain, and exactness matters
    new_inits = []
    casts = []
    for init in g.initializer:
        arr = numpy_helper.to_array(init)
        if init.name in keep_fp32 or arr.dtype != np.float32:
            new_inits.append(init)
            continue
        half_name = init.name + "_fp16"
        new_inits.append(numpy_helper.from_array(arr.astype(np.float16), half_name))
        casts.append(helper.make_node("Cast", [half_name], [init.name], to=TensorProto.FLOAT,
                                      name="cast_" + init.name))
    del g.initializer[:]
    g.initializer.extend(new_inits)
    nodes = list(g.node)
    del g.node[:]
    g.node.extend(casts + nodes)
    m.doc_string = "Fashion-MNIST CNN, FP16 weights (Cast to FP32 at load); input pixel/255"
    onnx.checker.check_model(m, full_check=True)
    path = os.path.join(MODEL_DIR, "model.fp16.onnx")
    onnx.save(m, path)
    print(f"wrote {path} ({os.path.getsize(path)} bytes)")


class QuantizableCNN(nn.Module):
    def __init__(self, mean, std):
        super().__init__()
        self.mean = mean
        self.std = std
        self.quant = torch.quantization.QuantStub()
        self.conv1 = nn.Conv2d(1, 16, 3)
        self.relu1 = nn.ReLU()
        self.conv2 = nn.Conv2d(16, 32, 3)
        self.relu2 = nn.ReLU()
        self.fc1 = nn.Linear(32 * 5 * 5, 64)
        self.relu3 = nn.ReLU()
        self.fc2 = nn.Linear(64, 10)
        self.dequant = torch.quantization.DeQuantStub()

    def forward(self, x):
        x = (x - self.mean) / self.std
        x = self.quant(x)
        x = F.max_pool2d(self.relu1(self.conv1(x)), 2)
        x = F.max_pool2d(self.relu2(self.conv2(x)), 2)
        x = torch.flatten(x, 1)
        x = self.relu3(self.fc1(x))
        return self.dequant(self.fc2(x))


def accuracy(net, x, y):
    with torch.no_grad():
        return sum((net(x[i:i + 1000]).argmax(1) == y[i:i + 1000]).sum().item() for i in range(0, len(x), 1000)) / len(x)


def report_accuracy(weights, quantized):
    """Top-1 accuracy of FP32, FP16-weight and INT8 on the full 10,000-image test split."""
    x = torch.from_numpy(read_idx(TEST_IMAGES).astype(np.float32) / 255.0).unsqueeze(1)
    y = torch.from_numpy(read_idx(TEST_LABELS).astype(np.int64))
    mean, std = float(weights["mean"].flatten()[0]), float(weights["std"].flatten()[0])
    results = {}
    for name, cast in (("FP32", lambda t: t), ("FP16", lambda t: t.half().float())):
        net = QuantizableCNN(mean, std)
        net.load_state_dict({k: cast(v) for k, v in weights.items() if k not in ("mean", "std")})
        net.eval()
        results[name] = accuracy(net, x, y)
    results["INT8"] = accuracy(quantized, x, y)
    for name, acc in results.items():
        print(f"{name} top-1 accuracy on the 10,000 test images: {acc:.4f} (cost {results['FP32'] - acc:+.4f})")


def write_int8(model):
    weights = {i.name: torch.from_numpy(numpy_helper.to_array(i).copy()) for i in model.graph.initializer}
    net = QuantizableCNN(float(weights["mean"].flatten()[0]), float(weights["std"].flatten()[0]))
    net.load_state_dict({k: v for k, v in weights.items() if k not in ("mean", "std")})
    net.eval()
    torch.backends.quantized.engine = "qnnpack"
    net.qconfig = torch.quantization.get_default_qconfig("qnnpack")
    fused = torch.quantization.fuse_modules(net, [["conv1", "relu1"], ["conv2", "relu2"]])
    prepared = torch.quantization.prepare(fused)
    rng = np.random.default_rng(SEED)
    train = read_idx(TRAIN_IMAGES)
    calib = train[rng.choice(len(train), 2000, replace=False)].astype(np.float32) / 255.0
    with torch.no_grad():
        for i in range(0, len(calib), 200):
            prepared(torch.from_numpy(calib[i:i + 200]).unsqueeze(1))
    quantized = torch.quantization.convert(prepared)
    report_accuracy(weights, quantized)
    buf = io.BytesIO()
    torch.onnx.export(quantized, torch.zeros(1, 1, 28, 28), buf, input_names=["input"], output_names=["logits"],
                      dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}}, opset_version=13)
    m = onnx.load_from_string(buf.getvalue())
    m.doc_string = "Fashion-MNIST CNN, INT8 post-training static quantisation (QDQ); input pixel/255"
    onnx.checker.check_model(m)
    path = os.path.join(MODEL_DIR, "model.int8.onnx")
    onnx.save(m, path)
    print(f"wrote {path} ({os.path.getsize(path)} bytes); ops: {sorted({n.op_type for n in m.graph.node})}")


def main():
    torch.manual_seed(SEED)
    torch.set_num_threads(2)
    model = onnx.load(FP32)
    write_fp16(model)
    write_int8(model)


if __name__ == "__main__":
    main()
