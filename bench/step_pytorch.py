#!/usr/bin/env python3
"""The PyTorch baseline of bench/train_step: one ELECTRA pre-training update with HF
transformers (ElectraForMaskedLM generator + ElectraForPreTraining discriminator sharing their
embeddings, dropout 0.1; eager or torch.compile; f32 or bf16 autocast on the GPU), the same
sizes, batch and sequence layout as train_step.cpp:
masking of 15% of the non-special tokens (85% [MASK]), Gumbel-max sampling, the discriminator on
the corrupted ids, loss = MLM + 50 x BCE, backward, AdamW.

Usage: step_pytorch.py --model tiny|small|base [--device cpu|cuda] [--bf16] [--compile]
                       [--batch 8] [--seq-len 128] [--threads 1] [--warmup 2] [--repeats 7]
Prints: RESULT impl=pytorch[-compile] model=<m> device=<d> batch=<b> seq=<t> median_ms=<x> ...
"""
import argparse
import time

import torch
from transformers import ElectraConfig, ElectraForMaskedLM, ElectraForPreTraining

# The engine's presets (models/electra_config.cpp): E, H, layers, heads, FFN, generator multiplier.
PRESETS = {
    "tiny": dict(e=64, h=128, layers=2, heads=2, ffn=512, mult=0.5),
    "small": dict(e=128, h=256, layers=12, heads=4, ffn=1024, mult=0.25),
    "base": dict(e=768, h=768, layers=12, heads=12, ffn=3072, mult=1 / 3),
}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="tiny", choices=PRESETS)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq-len", type=int, default=128)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--bf16", action="store_true", help="bf16 autocast (GPU)")
    parser.add_argument("--compile", action="store_true", help="torch.compile both models")
    args = parser.parse_args()
    dev = torch.device(args.device)
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    p = PRESETS[args.model]
    vocab = 30522
    gen_h = max(1, round(p["h"] * p["mult"]))

    def config(h, heads, ffn):
        return ElectraConfig(vocab_size=vocab, embedding_size=p["e"], hidden_size=h,
                             num_hidden_layers=p["layers"], num_attention_heads=heads,
                             intermediate_size=ffn, max_position_embeddings=512,
                             hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1,
                             layer_norm_eps=1e-12)

    disc = ElectraForPreTraining(config(p["h"], p["heads"], p["ffn"]))
    gen = ElectraForMaskedLM(config(gen_h, max(1, gen_h // 64), 4 * gen_h))
    gen.electra.embeddings = disc.electra.embeddings
    gen.generator_lm_head.weight = disc.electra.embeddings.word_embeddings.weight
    disc.to(dev)
    gen.to(dev)
    params = {id(q): q for q in list(disc.parameters()) + list(gen.parameters())}.values()
    opt = torch.optim.AdamW(params, lr=5e-4, eps=1e-6, weight_decay=0.01)
    disc.train()
    gen.train()
    run_gen, run_disc = (torch.compile(gen), torch.compile(disc)) if args.compile else (gen, disc)

    b, t = args.batch, args.seq_len
    length = t - t // 10
    middle = length // 2
    ids = torch.randint(1000, vocab, (b, t))
    ids[:, length:] = 0
    ids[:, 0] = 101
    ids[:, middle] = 102
    ids[:, length - 1] = 102
    segments = torch.zeros_like(ids)
    segments[:, middle + 1:length] = 1
    attention = (ids != 0).long()
    candidates = (ids != 0) & (ids != 101) & (ids != 102)
    k = max(1, round(0.15 * length))
    ids, segments, attention, candidates = (x.to(dev) for x in (ids, segments, attention, candidates))
    autocast = torch.autocast(device_type=args.device, dtype=torch.bfloat16, enabled=args.bf16)

    def update():
        opt.zero_grad(set_to_none=True)
        # Masking: k random candidates per sequence, 85% become [MASK].
        scores = torch.rand(b, t, device=dev).masked_fill(~candidates, 2.0)
        positions = scores.topk(k, dim=1, largest=False).indices
        masked = torch.zeros(b, t, dtype=torch.bool, device=dev).scatter_(1, positions, True)
        to_mask = masked & (torch.rand(b, t, device=dev) < 0.85)
        gen_ids = ids.masked_fill(to_mask, 103)
        labels = ids.masked_fill(~masked, -100)
        with autocast:
            gen_out = run_gen(input_ids=gen_ids, attention_mask=attention,
                              token_type_ids=segments, labels=labels)
        with torch.no_grad():
            logits = gen_out.logits[masked].float()
            gumbel = -torch.log(-torch.log(torch.rand_like(logits).clamp_(1e-9, 1.0)))
            sampled = (logits + gumbel).argmax(-1)
        disc_ids = ids.clone()
        disc_ids[masked] = sampled
        disc_labels = (disc_ids != ids).long()
        with autocast:
            disc_out = run_disc(input_ids=disc_ids, attention_mask=attention,
                                token_type_ids=segments, labels=disc_labels)
        loss = gen_out.loss.float() + 50.0 * disc_out.loss.float()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(list(params), 1.0)
        opt.step()
        return loss.item()

    times = []
    loss = 0.0
    for i in range(args.warmup + args.repeats):
        start = time.perf_counter()
        loss = update()  # .item() synchronises
        if i >= args.warmup:
            times.append((time.perf_counter() - start) * 1e3)
    times.sort()
    median = times[len(times) // 2]
    impl = "pytorch-compile" if args.compile else "pytorch"
    print(f"RESULT impl={impl} model={args.model} device={args.device} "
          f"precision={'bf16' if args.bf16 else 'f32'} batch={b} seq={t} threads={args.threads} "
          f"median_ms={median:.2f} min_ms={times[0]:.2f} seq_per_s={b / (median * 1e-3):.1f} "
          f"loss={loss:.4f} torch={torch.__version__}")


if __name__ == "__main__":
    main()
