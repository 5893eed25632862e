#!/usr/bin/env python3
"""ONNX Runtime baseline of scripts/bench-baselines.sh (not part of the
library or its tests): one ONNX opset-23 Attention node (Q, K, V in BHSD,
f32, GQA through Hq != Hkv, is_causal for causal shapes) run by ONNX
Runtime's CPU execution provider with 2 intra-op threads (--threads), timed
like sdpa-bench (warm-up, then the median of the timed runs).

    ort_attention.py B Hq Hkv Sq Skv D Dv causal repeat warmup [--threads N]

Prints "median_ms min_ms". Needs onnx, onnxruntime and numpy (PyPI; the
`--baselines` block of scripts/install-deps.sh puts them in a venv). ONNX's
is_causal is top-left aligned; sdpa-bench's causal rows are bottom-right,
which is the same for the square prefill shapes the script passes.
"""
import argparse
import sys
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper


def main():
    ap = argparse.ArgumentParser()
    for name in ("B", "Hq", "Hkv", "Sq", "Skv", "D", "Dv", "causal", "repeat", "warmup"):
        ap.add_argument(name, type=int)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    if a.causal and a.Sq != a.Skv:
        print("ort_attention: causal only for Sq == Skv (ONNX is_causal is top-left)",
              file=sys.stderr)
        return 2
    f = TensorProto.FLOAT
    inputs = [
        helper.make_tensor_value_info("Q", f, [a.B, a.Hq, a.Sq, a.D]),
        helper.make_tensor_value_info("K", f, [a.B, a.Hkv, a.Skv, a.D]),
        helper.make_tensor_value_info("V", f, [a.B, a.Hkv, a.Skv, a.Dv]),
    ]
    out = helper.make_tensor_value_info("Y", f, [a.B, a.Hq, a.Sq, a.Dv])
    node = helper.make_node("Attention", ["Q", "K", "V"], ["Y"], is_causal=int(a.causal))
    graph = helper.make_graph([node], "attention", inputs, [out])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    onnx.checker.check_model(model)
    so = ort.SessionOptions()
    so.intra_op_num_threads = a.threads
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), so,
                                providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(1)
    feeds = {
        "Q": rng.uniform(-1, 1, (a.B, a.Hq, a.Sq, a.D)).astype(np.float32),
        "K": rng.uniform(-1, 1, (a.B, a.Hkv, a.Skv, a.D)).astype(np.float32),
        "V": rng.uniform(-1, 1, (a.B, a.Hkv, a.Skv, a.Dv)).astype(np.float32),
    }
    times = []
    for rep in range(a.warmup + a.repeat):
        t0 = time.perf_counter()
        sess.run(["Y"], feeds)
        if rep >= a.warmup:
            times.append((time.perf_counter() - t0) * 1e3)
    times.sort()
    n = len(times)
    med = times[n // 2] if n % 2 else 0.5 * (times[n // 2 - 1] + times[n // 2])
    print(f"{med:.4f} {times[0]:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
