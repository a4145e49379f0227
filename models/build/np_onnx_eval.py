"""Minimal NumPy interpreter for the handful of ONNX operators used by the
models in this repository.

Debian 12 ships python3-onnx 1.12 (no onnx.reference) and no onnxruntime, so
the build scripts use this to execute the exported graphs independently of
PyTorch and check their outputs. It supports exactly the ops used here
(opset 13 semantics) and raises on anything else.
"""

import numpy as np
from onnx import numpy_helper, helper


def _attrs(node):
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _conv2d(x, w, b, strides, pads, dilations, group):
    if group != 1 or any(d != 1 for d in dilations):
        raise NotImplementedError("Conv: only group=1, dilation=1")
    n, c, h, wd = x.shape
    m, c2, kh, kw = w.shape
    assert c == c2
    pt, pl, pb, pr = pads
    xp = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    sh, sw = strides
    oh = (h + pt + pb - kh) // sh + 1
    ow = (wd + pl + pr - kw) // sw + 1
    cols = np.empty((n, c, kh, kw, oh, ow), dtype=x.dtype)
    for i in range(kh):
        for j in range(kw):
            cols[:, :, i, j] = xp[:, :, i:i + sh * oh:sh, j:j + sw * ow:sw]
    cols = cols.reshape(n, c * kh * kw, oh * ow)
    y = np.einsum("mk,nkp->nmp", w.reshape(m, -1), cols, optimize=True)
    y = y.reshape(n, m, oh, ow)
    if b is not None:
        y = y + b.reshape(1, m, 1, 1)
    return y.astype(x.dtype)


def _maxpool2d(x, kernel, strides, pads):
    if any(pads):
        raise NotImplementedError("MaxPool: padding not supported")
    n, c, h, w = x.shape
    kh, kw = kernel
    sh, sw = strides
    oh = (h - kh) // sh + 1
    ow = (w - kw) // sw + 1
    out = np.full((n, c, oh, ow), -np.inf, dtype=x.dtype)
    for i in range(kh):
        for j in range(kw):
            out = np.maximum(out, x[:, :, i:i + sh * oh:sh, j:j + sw * ow:sw])
    return out


def run(model, feeds):
    """Evaluate `model` (onnx.ModelProto) on `feeds` (dict name -> ndarray).

    Returns a dict output-name -> ndarray."""
    env = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    env.update(feeds)
    for node in model.graph.node:
        a = _attrs(node)
        ins = [env[i] if i else None for i in node.input]
        op = node.op_type
        if op == "Identity":
            out = np.array(ins[0], copy=True)
        elif op == "Constant":
            out = numpy_helper.to_array(a["value"])
        elif op == "Add":
            out = ins[0] + ins[1]
        elif op == "Sub":
            out = ins[0] - ins[1]
        elif op == "Mul":
            out = ins[0] * ins[1]
        elif op == "Div":
            out = ins[0] / ins[1]
        elif op == "Relu":
            out = np.maximum(ins[0], 0).astype(ins[0].dtype)
        elif op == "MatMul":
            out = np.matmul(ins[0], ins[1])
        elif op == "Cast":
            to = helper.tensor_dtype_to_np_dtype(a["to"]) if hasattr(
                helper, "tensor_dtype_to_np_dtype") else \
                __import__("onnx").mapping.TENSOR_TYPE_TO_NP_TYPE[a["to"]]
            out = ins[0].astype(to)
        elif op == "ReduceSum":
            # opset 13: axes is an optional second *input*
            axes = ins[1] if len(ins) > 1 and ins[1] is not None else None
            keep = bool(a.get("keepdims", 1))
            if axes is None or axes.size == 0:
                if a.get("noop_with_empty_axes", 0):
                    out = ins[0]
                else:
                    out = np.sum(ins[0], keepdims=keep).astype(ins[0].dtype)
            else:
                out = np.sum(ins[0], axis=tuple(int(v) for v in axes),
                             keepdims=keep).astype(ins[0].dtype)
        elif op == "ReduceMean":
            # opset 13: axes is still an attribute
            axes = a.get("axes")
            keep = bool(a.get("keepdims", 1))
            out = np.mean(ins[0], axis=None if axes is None else tuple(axes),
                          keepdims=keep).astype(ins[0].dtype)
        elif op == "Gather":
            # negative indices count from the end; out-of-range ones raise IndexError (as ORT CPU fails)
            idx = ins[1]
            n = ins[0].shape[a.get("axis", 0)]
            if idx.size and (idx.min() < -n or idx.max() >= n):
                raise IndexError(f"Gather: indices outside [{-n}, {n - 1}]")
            out = np.take(ins[0], idx, axis=a.get("axis", 0))
        elif op == "Flatten":
            axis = a.get("axis", 1)
            s = ins[0].shape
            out = ins[0].reshape(int(np.prod(s[:axis])), -1)
        elif op == "Reshape":
            shape = [int(v) for v in ins[1]]
            shape = [ins[0].shape[i] if v == 0 else v for i, v in enumerate(shape)]
            out = ins[0].reshape(shape)
        elif op == "Gemm":
            A, B = ins[0], ins[1]
            if a.get("transA", 0):
                A = A.T
            if a.get("transB", 0):
                B = B.T
            out = a.get("alpha", 1.0) * (A @ B)
            if len(ins) > 2 and ins[2] is not None:
                out = out + a.get("beta", 1.0) * ins[2]
            out = out.astype(ins[0].dtype)
        elif op == "Conv":
            k = len(ins[1].shape) - 2
            out = _conv2d(ins[0], ins[1], ins[2] if len(ins) > 2 else None,
                          a.get("strides", [1] * k), a.get("pads", [0] * 2 * k),
                          a.get("dilations", [1] * k), a.get("group", 1))
        elif op == "MaxPool":
            k = a["kernel_shape"]
            out = _maxpool2d(ins[0], k, a.get("strides", [1] * len(k)),
                             a.get("pads", [0] * 2 * len(k)))
        else:
            raise NotImplementedError(f"op {op} not supported by np_onnx_eval")
        if len(node.output) != 1:
            raise NotImplementedError(f"multi-output {op}")
        env[node.output[0]] = out
    return {o.name: env[o.name] for o in model.graph.output}
