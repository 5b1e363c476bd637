#!/usr/bin/env python3
"""PyTorch's fused attention as the baseline of bench/attention_bench.cu, run by
scripts/gpu_check.sh in the same session.

torch.nn.functional.scaled_dot_product_attention forward and backward in bf16 at the shapes of
attention_bench (ELECTRA-Small, Base and Large head counts, d = 64, T = 128 and 512, 16384 tokens
per call, odd sequences with their last T/4 keys padded), dropout 0.1 and 0, with the cuDNN and
the flash backends forced in turn (torch.nn.attention.sdpa_kernel). q, k and v are strided views
of one packed [B, T, 3H] tensor, as ours reads them; the backward returns dq, dk, dv
(torch.autograd.grad, nothing accumulated).

A backend that refuses the padding mask (the flash backend takes no attn_mask) runs without it,
every key real, and its impl name says so ("_nomask"): that is at least as much work. A backend
that refuses the call altogether prints a SKIPPED line with PyTorch's reason.

Output: the RESULT lines of bench/bench_common.cuh (same op and shape names as
attention_bench, impl = baseline_sdpa_<backend>[_nomask]); roofline_pct is against the bf16
GEMM rate measured here with torch.matmul (8192^3), as attention_bench's is against cuBLASLt's.
"""
import argparse
import statistics
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

MODELS = [("small", 256, 4), ("base", 768, 12), ("large", 1024, 16)]
BACKENDS = [("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION)]


def time_ms(fn, repeats, warmup=3):
    """Median milliseconds of fn over `repeats` runs, L2 flushed before each (as ours)."""
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        flush.zero_()
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times)


def gemm_tflops():
    n = 8192
    a = torch.zeros(n, n, dtype=torch.bfloat16, device="cuda")
    b = torch.zeros(n, n, dtype=torch.bfloat16, device="cuda")
    ms = time_ms(lambda: torch.matmul(a, b), 10)
    return 2.0 * n**3 / (ms * 1e-3) / 1e12


def report(op, shape, impl, ms, nbytes, flops, peak_tflops):
    tflops = flops / (ms * 1e-3) / 1e12
    gbps = nbytes / (ms * 1e-3) / 1e9
    print(f"RESULT op={op} shape={shape} impl={impl} ms={ms:.4f} gbps={gbps:.1f} "
          f"tflops={tflops:.2f} roofline_pct={100.0 * tflops / peak_tflops:.1f}", flush=True)


def run_case(name, h, heads, t, p, backend_name, backend, peak, repeats):
    tokens = 16384
    b, d = tokens // t, h // heads
    shape = f"{name}_B{b}_T{t}_H{h}_p{p:g}"
    gen = torch.Generator(device="cuda").manual_seed(6)
    qkv = torch.randn(b, t, 3 * h, device="cuda", dtype=torch.bfloat16, generator=gen)
    dout = torch.randn(b, heads, t, d, device="cuda", dtype=torch.bfloat16, generator=gen)
    real = torch.ones(b, t, dtype=torch.bool, device="cuda")
    real[1::2, t - t // 4:] = False
    mask = real[:, None, None, :]  # True = attend

    def heads_of(part):
        x = qkv[..., part * h:(part + 1) * h].view(b, t, heads, d).transpose(1, 2)
        return x.detach().requires_grad_()

    q, k, v = heads_of(0), heads_of(1), heads_of(2)
    impl = f"baseline_sdpa_{backend_name}"
    with sdpa_kernel([backend]):
        try:
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p)
        except RuntimeError:
            mask, impl = None, impl + "_nomask"
            try:
                out = F.scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=p)
            except RuntimeError as error:
                reason = str(error).splitlines()[0] if str(error) else type(error).__name__
                print(f"SKIPPED op=attention shape={shape} impl={impl}: {reason}", flush=True)
                return

        def forward():
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p)

        fwd = time_ms(forward, repeats)
        out = forward()
        bwd = time_ms(lambda: torch.autograd.grad(out, (q, k, v), dout, retain_graph=True),
                      repeats)
    # The useful FLOPs and the bytes of attention_bench's flash rows: two GEMMs of
    # 2 B heads T^2 d forward, four backward; [B, T, 3H] and [B, T, H] tensors plus the rows' L
    # (written forward, read backward).
    gemm_flops = 2.0 * b * heads * t * t * d
    row_bytes = 4.0 * b * heads * t
    qkv_bytes, out_bytes = 2.0 * qkv.numel(), 2.0 * b * t * h
    report("attention_fwd", shape, impl, fwd, qkv_bytes + out_bytes + row_bytes, 2 * gemm_flops,
           peak)
    report("attention_bwd", shape, impl, bwd,
           2 * qkv_bytes + 2 * out_bytes + row_bytes, 4 * gemm_flops, peak)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=25)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("attention_sdpa_baseline.py: torch sees no CUDA device", file=sys.stderr)
        return 1
    print(f"torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, "
          f"{torch.cuda.get_device_name(0)}", flush=True)
    peak = gemm_tflops()
    for name, h, heads in MODELS:
        for t in (128, 512):
            for p in (0.1, 0.0):
                for backend_name, backend in BACKENDS:
                    run_case(name, h, heads, t, p, backend_name, backend, peak, args.repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
