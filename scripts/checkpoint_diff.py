#!/usr/bin/env python3
"""Whether two checkpoints hold the same bytes, and if not, the first tensor that differs.

    scripts/checkpoint_diff.py DIR_A DIR_B

Compares every *.safetensors file below DIR_A with the file of the same relative path below DIR_B
(a file missing from either side is a difference). Prints "identical: N files, M tensors" and exits
0, or names the first differing file and tensor (in the file's storage order) with the number of
differing elements and, for float tensors, the largest absolute difference, and exits 1. Exit 2 for
a missing folder or a file that is not a safetensors file. scripts/gpu_check.sh uses it for the
bit-exact resume check on the GPU.
"""
import array
import json
import os
import struct
import sys

DECODE = {"F32": ("f", 4), "F64": ("d", 8), "I32": ("i", 4), "I64": ("q", 8), "U8": ("B", 1)}


def bf16_to_floats(raw):
    # bf16 is the top half of an f32: widen each 2-byte value into an f32's high bytes.
    halves = array.array("H", raw)
    return array.array("f", struct.pack(f"<{len(halves)}I", *(h << 16 for h in halves)))


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 8:
        raise ValueError(f"{path}: too short for a safetensors header")
    (size,) = struct.unpack("<Q", data[:8])
    if 8 + size > len(data):
        raise ValueError(f"{path}: header of {size} bytes runs past the end of the file")
    header = json.loads(data[8:8 + size])
    header.pop("__metadata__", None)
    body = data[8 + size:]
    tensors = sorted(header.items(), key=lambda item: item[1]["data_offsets"][0])
    return [(name, info["dtype"], body[info["data_offsets"][0]:info["data_offsets"][1]])
            for name, info in tensors]


def describe(name, dtype, a, b):
    if len(a) != len(b):
        return f"tensor {name} ({dtype}): {len(a)} bytes against {len(b)}"
    if dtype == "BF16":
        va, vb = bf16_to_floats(a), bf16_to_floats(b)
    elif dtype in DECODE:
        code, _ = DECODE[dtype]
        va, vb = array.array(code, a), array.array(code, b)
    else:
        return f"tensor {name} ({dtype}): the bytes differ"
    diffs = [abs(x - y) for x, y in zip(va, vb) if x != y]
    return (f"tensor {name} ({dtype}, {len(va)} elements): {len(diffs)} differ, "
            f"largest absolute difference {max(diffs):.6g}")


def files_below(root):
    found = set()
    for folder, _, names in os.walk(root):
        for name in names:
            if name.endswith(".safetensors"):
                found.add(os.path.relpath(os.path.join(folder, name), root))
    return found


def main(a_dir, b_dir):
    for d in (a_dir, b_dir):
        if not os.path.isdir(d):
            print(f"checkpoint_diff: {d}: no such folder")
            return 2
    a_files, b_files = files_below(a_dir), files_below(b_dir)
    if not a_files:
        print(f"checkpoint_diff: {a_dir}: no .safetensors file")
        return 2
    only = sorted(a_files ^ b_files)
    if only:
        print(f"differ: {only[0]} is only in {a_dir if only[0] in a_files else b_dir}")
        return 1
    count = 0
    for rel in sorted(a_files):
        try:
            ta = read_safetensors(os.path.join(a_dir, rel))
            tb = dict((n, (d, raw)) for n, d, raw in read_safetensors(os.path.join(b_dir, rel)))
        except (ValueError, KeyError, json.JSONDecodeError) as e:
            print(f"checkpoint_diff: {e}")
            return 2
        for name, dtype, raw in ta:
            count += 1
            if name not in tb:
                print(f"differ: {rel}: tensor {name} is only in {a_dir}")
                return 1
            if tb[name][1] != raw or tb[name][0] != dtype:
                print(f"differ: {rel}: {describe(name, dtype, raw, tb[name][1])}")
                return 1
        if len(tb) != len(ta):
            print(f"differ: {rel}: {len(ta)} tensors against {len(tb)}")
            return 1
    print(f"identical: {len(a_files)} files, {count} tensors")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print("usage: checkpoint_diff.py DIR_A DIR_B")
        sys.exit(2)
    sys.exit(main(sys.argv[1], sys.argv[2]))
