#!/usr/bin/python3
"""Generate the tiny ONNX test models used by gpu-operator-udf's unit tests.

    /usr/bin/python3 models/build/make_test_models.py

Needs Debian's python3-onnx and python3-numpy. Writes, for every model,
    gpu-operator-udf/src/test/resources/models/<name>/1/model.onnx
    gpu-operator-udf/src/test/resources/models/<name>/config.json
All models: opset 13, ir_version 8, dim 0 is the symbolic batch axis "batch".
Output is byte-for-byte reproducible (fixed RNG seed, no timestamps).
"""

import json
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.dont_write_bytecode = True  # keep models/build free of __pycache__
sys.path.insert(0, HERE)
import np_onnx_eval  # noqa: E402

OUT_ROOT = os.path.join(REPO, "gpu-operator-udf", "src", "test", "resources", "models")
OPSET = 13
IR_VERSION = 8
MAX_BATCH = 16
SEED = 1234

# KServe v2 datatype -> (ONNX elem type, numpy dtype)
TYPES = {
    "FP32": (TensorProto.FLOAT, np.float32),
    "FP16": (TensorProto.FLOAT16, np.float16),
    "INT64": (TensorProto.INT64, np.int64),
    "INT32": (TensorProto.INT32, np.int32),
    "BOOL": (TensorProto.BOOL, np.bool_),
    "BYTES": (TensorProto.STRING, object),
}


def vinfo(name, datatype, dims):
    return helper.make_tensor_value_info(name, TYPES[datatype][0], ["batch"] + list(dims))


def make_model(name, nodes, inputs, outputs, initializers=()):
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=list(initializers))
    model = helper.make_model(graph, producer_name="flink-gpu-inference/make_test_models.py",
                              opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = IR_VERSION
    model.model_version = 1
    onnx.checker.check_model(model, full_check=True)
    return model


def config(name, inputs, outputs, description, max_batch=MAX_BATCH):
    """inputs/outputs: lists of (name, datatype, shape-without-batch)."""
    return {
        "name": name,
        "platform": "onnxruntime",
        "max_batch_size": max_batch,
        "inputs": [{"name": n, "datatype": d, "shape": list(s), "allow_nan": False}
                   for n, d, s in inputs],
        "outputs": [{"name": n, "datatype": d, "shape": list(s)} for n, d, s in outputs],
        "dynamic_batching": {"max_queue_delay_ms": 5, "preferred_batch_sizes": [],
                             "max_enqueued_batches": 4},
        "description": description,
    }


def save(name, model, cfg):
    d = os.path.join(OUT_ROOT, name)
    os.makedirs(os.path.join(d, "1"), exist_ok=True)
    path = os.path.join(d, "1", "model.onnx")
    with open(path, "wb") as f:
        f.write(model.SerializeToString())
    onnx.checker.check_model(path)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")
    loaded = onnx.load(path)
    print(f"{name:12s} {os.path.getsize(path):5d} bytes  ir_version {loaded.ir_version} "
          f"opset {loaded.opset_import[0].version}")
    return loaded


def check(model, feeds, expected):
    got = np_onnx_eval.run(model, feeds)
    assert set(got) == set(expected), (got.keys(), expected.keys())
    for k, v in expected.items():
        g = got[k]
        assert g.shape == v.shape and g.dtype == v.dtype, (k, g.shape, g.dtype, v.shape, v.dtype)
        if np.issubdtype(v.dtype, np.floating):
            np.testing.assert_allclose(g, v, rtol=1e-6, atol=1e-6)
        else:
            assert np.array_equal(g, v), (k, g, v)


def main():
    os.makedirs(OUT_ROOT, exist_ok=True)
    rng = np.random.default_rng(SEED)

    # ------------------------------------------------------------ echo-*
    samples = {
        "FP32": np.array([[1.5, -2.25, 3.0], [0.0, 1e-3, -7.0]], dtype=np.float32),
        "FP16": np.array([[1.5, -2.25, 3.0], [0.0, 0.5, -7.0]], dtype=np.float16),
        "INT64": np.array([[1, -2, 2**40], [0, 5, -(2**40)]], dtype=np.int64),
        "INT32": np.array([[1, -2, 2**30], [0, 5, -(2**30)]], dtype=np.int32),
        "BOOL": np.array([[True, False, True], [False, False, True]]),
        "BYTES": np.array([["a", "", "héllo"], ["x y", "z", "0"]], dtype=object),
    }
    for dt, sample in samples.items():
        name = "echo-" + dt.lower()
        m = make_model(name, [helper.make_node("Identity", ["x"], ["y"])],
                       [vinfo("x", dt, [3])], [vinfo("y", dt, [3])])
        cfg = config(name, [("x", dt, [3])], [("y", dt, [3])],
                     f"Test model: y = Identity(x), {dt} [N,3]")
        m = save(name, m, cfg)
        check(m, {"x": sample}, {"y": sample})

    # ------------------------------------------------------------ affine-fp32
    # Small multiples of 1/4 so every value is exact in FP32 and easy to hard-code.
    W = (rng.integers(-8, 9, size=(4, 3)) / 4.0).astype(np.float32)
    b = (rng.integers(-8, 9, size=(3,)) / 4.0).astype(np.float32)
    axes1 = np.array([1], dtype=np.int64)
    nodes = [
        helper.make_node("MatMul", ["x", "W"], ["xw"]),
        helper.make_node("Add", ["xw", "b"], ["y"]),
        helper.make_node("Mul", ["x", "x"], ["x2"]),
        helper.make_node("ReduceSum", ["x2", "axes"], ["norm"], keepdims=1),
    ]
    inits = [numpy_helper.from_array(W, "W"), numpy_helper.from_array(b, "b"),
             numpy_helper.from_array(axes1, "axes")]
    m = make_model("affine-fp32", nodes, [vinfo("x", "FP32", [4])],
                   [vinfo("y", "FP32", [3]), vinfo("norm", "FP32", [1])], inits)
    cfg = config("affine-fp32", [("x", "FP32", [4])],
                 [("y", "FP32", [3]), ("norm", "FP32", [1])],
                 "Test model: y = x @ W + b (W 4x3, b 3 fixed), norm = sum(x*x, axis=1, keepdims)")
    m = save("affine-fp32", m, cfg)
    x = rng.standard_normal((5, 4)).astype(np.float32)
    check(m, {"x": x}, {"y": x @ W + b, "norm": (x * x).sum(1, keepdims=True)})
    print("  W =", W.tolist())
    print("  b =", b.tolist())

    # ------------------------------------------------------------ seq-sum
    nodes = [helper.make_node("ReduceSum", ["tokens", "axes"], ["total"], keepdims=1)]
    m = make_model("seq-sum", nodes,
                   [helper.make_tensor_value_info("tokens", TensorProto.INT64, ["batch", "seq"])],
                   [vinfo("total", "INT64", [1])],
                   [numpy_helper.from_array(axes1, "axes")])
    cfg = config("seq-sum", [("tokens", "INT64", [-1])], [("total", "INT64", [1])],
                 "Test model: total = sum(tokens, axis=1, keepdims); variable-length dim 'seq'")
    m = save("seq-sum", m, cfg)
    for t in (1, 3, 7):
        tok = rng.integers(-100, 100, size=(4, t)).astype(np.int64)
        check(m, {"tokens": tok}, {"total": tok.sum(1, keepdims=True)})

    # ------------------------------------------------------------ two-inputs
    nodes = [
        helper.make_node("Cast", ["b"], ["bf"], to=TensorProto.FLOAT),
        helper.make_node("Add", ["a", "bf"], ["sum"]),
    ]
    m = make_model("two-inputs", nodes, [vinfo("a", "FP32", [2]), vinfo("b", "INT64", [2])],
                   [vinfo("sum", "FP32", [2])])
    cfg = config("two-inputs", [("a", "FP32", [2]), ("b", "INT64", [2])],
                 [("sum", "FP32", [2])], "Test model: sum = a + float(b)")
    m = save("two-inputs", m, cfg)
    a = np.array([[0.5, -1.0], [2.0, 3.25], [0.0, 0.0]], dtype=np.float32)
    bb = np.array([[1, 2], [-3, 4], [0, 100]], dtype=np.int64)
    check(m, {"a": a, "b": bb}, {"sum": a + bb.astype(np.float32)})

    # ------------------------------------------------------------ embedding-int64
    # Token embedding lookup, mean-pooled over the sequence. Multiples of 1/4 like affine-fp32.
    # Ids outside [-16, 15] (Gather allows negative indices from the end) make ONNX Runtime's
    # CPU Gather fail the whole run: a real poison input for batch-failure isolation.
    table = (rng.integers(-8, 9, size=(16, 4)) / 4.0).astype(np.float32)
    nodes = [
        helper.make_node("Gather", ["table", "input_ids"], ["embeddings"], axis=0),
        helper.make_node("ReduceMean", ["embeddings"], ["pooled"], axes=[1], keepdims=0),
    ]
    m = make_model("embedding-int64", nodes,
                   [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"])],
                   [vinfo("pooled", "FP32", [4])],
                   [numpy_helper.from_array(table, "table")])
    cfg = config("embedding-int64", [("input_ids", "INT64", [-1])], [("pooled", "FP32", [4])],
                 "Test model: pooled = mean(Gather(table, input_ids), axis=1), table FP32 16x4 fixed; "
                 "variable-length dim 'seq'; ids outside [-16, 15] fail the run", max_batch=64)
    m = save("embedding-int64", m, cfg)
    for t in (1, 3, 7):
        ids = rng.integers(-16, 16, size=(4, t)).astype(np.int64)
        check(m, {"input_ids": ids}, {"pooled": table[ids].mean(1)})
    for bad in (16, 99, -17, -100):
        try:
            np_onnx_eval.run(m, {"input_ids": np.array([[0, bad]], dtype=np.int64)})
        except IndexError:
            pass
        else:
            raise AssertionError(f"id {bad} should be out of range")
    print("  table =", table.tolist())

    # ------------------------------------------------------------ slow-square
    # Milliseconds of work per sample from a few bytes of model: x broadcast to an N x N matrix E
    # (ones column @ x @ ones row), then E @ E, N^3 multiply-adds per sample; y = mean(E @ E) = N x^2.
    # For tests of what a long batch does on the CPU (ExecutionThreadsTest).
    n = 768
    ones_col = np.ones((n, 1), dtype=np.float32)
    ones_row = np.ones((1, n), dtype=np.float32)
    nodes = [
        helper.make_node("Reshape", ["x", "shape3"], ["x3"]),
        helper.make_node("MatMul", ["x3", "ones_row"], ["row"]),
        helper.make_node("MatMul", ["ones_col", "row"], ["e"]),
        helper.make_node("MatMul", ["e", "e"], ["ee"]),
        helper.make_node("ReduceMean", ["ee"], ["mean"], axes=[1, 2], keepdims=0),
        helper.make_node("Reshape", ["mean", "shape2"], ["y"]),
    ]
    inits = [numpy_helper.from_array(np.array([-1, 1, 1], dtype=np.int64), "shape3"),
             numpy_helper.from_array(np.array([-1, 1], dtype=np.int64), "shape2"),
             numpy_helper.from_array(ones_col, "ones_col"), numpy_helper.from_array(ones_row, "ones_row")]
    m = make_model("slow-square", nodes, [vinfo("x", "FP32", [1])], [vinfo("y", "FP32", [1])], inits)
    cfg = config("slow-square", [("x", "FP32", [1])], [("y", "FP32", [1])],
                 f"Test model: y = mean(E @ E) = {n} x^2, E the {n}x{n} matrix of x; {n}^3 multiply-adds per "
                 "sample (milliseconds on one core)")
    m = save("slow-square", m, cfg)
    xs = np.array([[0.5], [-2.0], [0.0]], dtype=np.float32)
    check(m, {"x": xs}, {"y": (n * xs * xs).astype(np.float32)})

    print("all test models written and verified")


if __name__ == "__main__":
    main()
