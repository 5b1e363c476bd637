#!/usr/bin/env python3
"""Compares two `electra pretrain` run directories update by update (test/dist/dist_e2e.sh).

    compare_runs.py RUN_A RUN_B --steps FIRST LAST [--loss-tol 1e-6] [--param-tol 1e-5]

For every update in [FIRST, LAST] both runs must have a checkpoint (checkpoint.every=1): the
losses recorded in trainer_state.json ("last_update", full precision) must agree within
loss-tol relative, and at LAST every tensor of both models and of the optimizer state within
param-tol, measured per tensor as the normwise error max_i |a_i - b_i| / max_i |b_i| (the
measure of test/common/test_util.h). The runs differ only in the order in which float32
gradients are summed, and Adam turns a gradient that is zero up to rounding into an update of
its own size, so single small entries are not comparable elementwise. The attention key biases
are not compared, only checked to stay below 1e-4 in both runs: their gradient is exactly zero
in exact arithmetic (softmax is shift invariant), so they hold accumulated rounding noise that
differs between any two summation orders. Prints the worst errors; exit 0 when within
tolerance, 1 otherwise. Standard library only (no numpy).
"""
import argparse
import array
import json
import struct
import sys
from pathlib import Path

LOSSES = ("gen_loss", "disc_loss", "total_loss")
TENSOR_FILES = ("discriminator/model.safetensors", "generator/model.safetensors",
                "trainer_state.safetensors")


def checkpoint(run, step):
    return Path(run) / f"checkpoint-{step:08d}"


def read_safetensors(path):
    data = Path(path).read_bytes()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    out = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        if entry["dtype"] != "F32":
            raise SystemExit(f"{path}: {name} is {entry['dtype']}, expected F32")
        begin, end = entry["data_offsets"]
        values = array.array("f")
        values.frombytes(data[8 + n + begin:8 + n + end])
        out[name] = values
    return out


NOISE_ONLY = "attention.self.key.bias"
NOISE_BOUND = 1e-4


def normwise_error(a, b):
    if len(a) != len(b):
        return float("inf")
    scale = max((abs(y) for y in b), default=0.0)
    err = max((abs(x - y) for x, y in zip(a, b)), default=0.0)
    if err != err:
        return float("inf")
    return err / scale if scale > 0 else (0.0 if err == 0 else float("inf"))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("run_a")
    parser.add_argument("run_b")
    parser.add_argument("--steps", nargs=2, type=int, required=True)
    parser.add_argument("--loss-tol", type=float, default=1e-6)
    parser.add_argument("--param-tol", type=float, default=1e-5)
    args = parser.parse_args()
    first, last = args.steps
    ok = True

    worst_loss = 0.0
    for step in range(first, last + 1):
        states = []
        for run in (args.run_a, args.run_b):
            path = checkpoint(run, step) / "trainer_state.json"
            if not path.exists():
                print(f"missing {path}")
                return 1
            states.append(json.loads(path.read_text())["last_update"])
        for key in LOSSES:
            a, b = states[0][key], states[1][key]
            err = abs(a - b) / max(abs(b), 1e-30)
            worst_loss = max(worst_loss, err)
            if not err <= args.loss_tol:
                print(f"update {step}: {key} {a!r} vs {b!r} (relative {err:.3g})")
                ok = False
    print(f"losses of updates {first}..{last}: worst relative difference {worst_loss:.3g} "
          f"(tolerance {args.loss_tol:g})")

    worst_param, worst_name = 0.0, ""
    for name in TENSOR_FILES:
        a = read_safetensors(checkpoint(args.run_a, last) / name)
        b = read_safetensors(checkpoint(args.run_b, last) / name)
        if sorted(a) != sorted(b):
            print(f"{name}: different tensors")
            ok = False
            continue
        for tensor in a:
            if tensor.endswith(NOISE_ONLY):
                largest = max(abs(x) for x in list(a[tensor]) + list(b[tensor]))
                if not largest < NOISE_BOUND:
                    print(f"{name}:{tensor}: |value| up to {largest:.3g}, expected noise only")
                    ok = False
                continue
            err = normwise_error(a[tensor], b[tensor])
            if err > worst_param:
                worst_param, worst_name = err, f"{name}:{tensor}"
    print(f"parameters and optimizer moments after update {last}: worst relative difference "
          f"{worst_param:.3g} in {worst_name or '-'} (tolerance {args.param_tol:g})")
    if not worst_param <= args.param_tol:
        ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
