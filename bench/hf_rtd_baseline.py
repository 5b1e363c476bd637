#!/usr/bin/env python3
"""HF transformers' ELECTRA pre-trained in PyTorch on the demo's text with the engine's recipe, to
tell whether a replaced-token-detection figure is the engine's or the recipe's (docs/QUALITY.md,
"Investigation: replaced-token detection of electra-tiny"). It never calls the engine.

usage: hf_rtd_baseline.py --vocab vocab.txt --train train.txt --heldout heldout.txt
                          [--steps 1000] [--batch 16] [--seq-len 128] [--lr 5e-4] [--warmup 100]
                          [--disc-weight 50] [--gen-multiplier 0.5] [--dropout 0.1] [--seed 1]
                          [--eval-sequences 512] [--threads 1]

Recipe (configs/electra-tiny.yaml): discriminator hidden 128, 2 layers, 2 heads, FFN 512,
embedding 64; generator hidden = multiplier x 128 (heads = hidden / 64, FFN 4 x hidden) sharing
the token, position and type embeddings; 15% of the text tokens masked, 85% of those replaced by
[MASK]; the generator's sample (temperature 1) replaces them; loss = generator MLM (mean over the
masked) + disc_weight x BCE (mean over the tokens); AdamW (bias correction, as torch has it),
weight decay 0.01 except LayerNorm and biases, clip 1.0, linear warm-up then linear decay.
Text: WordPiece with the given vocabulary (lowercased), each paragraph's tokens concatenated within
a document (a blank line ends one) and cut into [CLS] 126 tokens [SEP] sequences.

Prints one line every 100 updates and at the end the held-out figures (the models in eval mode,
the same masking and sampling): replaced-token recall and precision at p > 0.5, accuracy against
the "everything original" constant, BCE against the best constant.
"""
import argparse
import math
import random
import time

import torch
from tokenizers import BertWordPieceTokenizer
from transformers import ElectraConfig, ElectraForMaskedLM, ElectraForPreTraining


class Tok:
    """The special ids of the vocabulary and a WordPiece tokenizer (HF tokenizers) over it."""

    def __init__(self, vocab):
        self.wordpiece = BertWordPieceTokenizer(vocab, lowercase=True)
        ids = self.wordpiece.get_vocab()
        self.size = len(ids)
        self.pad_token_id, self.cls_token_id = ids["[PAD]"], ids["[CLS]"]
        self.sep_token_id, self.mask_token_id = ids["[SEP]"], ids["[MASK]"]


def sequences(path, tok, seq_len):
    body = seq_len - 2
    out = []
    with open(path, encoding="utf-8", errors="replace") as f:
        docs = f.read().split("\n\n")
    for doc in docs:
        paragraphs = [p for p in doc.split("\n") if p.strip()]
        ids = [i for e in tok.wordpiece.encode_batch(paragraphs, add_special_tokens=False)
               for i in e.ids]
        for i in range(0, len(ids) - body // 4, body):  # drops a short tail
            out.append([tok.cls_token_id] + ids[i:i + body] + [tok.sep_token_id])
    return out


def batch_of(rows, seq_len):
    ids = torch.zeros(len(rows), seq_len, dtype=torch.long)
    for i, r in enumerate(rows):
        ids[i, :len(r)] = torch.tensor(r)
    return ids


def corrupt(ids, tok, gen, generator_rng):
    special = (ids == tok.cls_token_id) | (ids == tok.sep_token_id) | (ids == tok.pad_token_id)
    masked = (torch.rand(ids.shape, generator=generator_rng) < 0.15) & ~special
    use_mask = masked & (torch.rand(ids.shape, generator=generator_rng) < 0.85)
    gen_in = torch.where(use_mask, torch.full_like(ids, tok.mask_token_id), ids)
    attention = (ids != tok.pad_token_id).long()
    logits = gen(input_ids=gen_in, attention_mask=attention).logits
    with torch.no_grad():
        u = torch.rand(logits.shape, generator=generator_rng).clamp_(1e-9, 1 - 1e-9)
        sample = (logits - torch.log(-torch.log(u))).argmax(-1)  # Gumbel-max, temperature 1
    disc_in = torch.where(masked, sample, ids)
    labels = (disc_in != ids).float()
    return logits, masked, disc_in, labels, attention


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--vocab", required=True)
    p.add_argument("--train", required=True)
    p.add_argument("--heldout", required=True)
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--seq-len", type=int, default=128)
    p.add_argument("--lr", type=float, default=5e-4)
    p.add_argument("--warmup", type=int, default=100)
    p.add_argument("--disc-weight", type=float, default=50.0)
    p.add_argument("--gen-multiplier", type=float, default=0.5)
    p.add_argument("--dropout", type=float, default=0.1)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--eval-sequences", type=int, default=512)
    p.add_argument("--threads", type=int, default=1)
    a = p.parse_args()
    torch.manual_seed(a.seed)
    torch.set_num_threads(a.threads)
    tok = Tok(a.vocab)
    train = sequences(a.train, tok, a.seq_len)
    heldout = sequences(a.heldout, tok, a.seq_len)[:a.eval_sequences]
    print(f"hf_rtd_baseline: {len(train)} training and {len(heldout)} held-out sequences")

    common = dict(vocab_size=tok.size, embedding_size=64, max_position_embeddings=a.seq_len,
                  hidden_dropout_prob=a.dropout, attention_probs_dropout_prob=a.dropout)
    gh = int(128 * a.gen_multiplier)
    disc = ElectraForPreTraining(ElectraConfig(hidden_size=128, num_hidden_layers=2,
                                               num_attention_heads=2, intermediate_size=512,
                                               **common))
    gen = ElectraForMaskedLM(ElectraConfig(hidden_size=gh, num_hidden_layers=2,
                                           num_attention_heads=max(1, gh // 64),
                                           intermediate_size=4 * gh, **common))
    gen.electra.embeddings = disc.electra.embeddings  # shared token/position/type tables
    gen.generator_lm_head.weight = disc.electra.embeddings.word_embeddings.weight
    params = {id(q): (n, q) for m in (disc, gen) for n, q in m.named_parameters()}.values()
    decay = [q for n, q in params if not ("LayerNorm" in n or n.endswith("bias"))]
    no_decay = [q for n, q in params if "LayerNorm" in n or n.endswith("bias")]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=a.lr, betas=(0.9, 0.999), eps=1e-6)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min((s + 1) / max(1, a.warmup), max(0.0, (a.steps - s) / a.steps)))
    rng = torch.Generator().manual_seed(a.seed)
    order = random.Random(a.seed)
    bce = torch.nn.functional.binary_cross_entropy_with_logits
    start = time.time()
    for step in range(1, a.steps + 1):
        gen.train(), disc.train()
        ids = batch_of(order.sample(train, a.batch), a.seq_len)
        logits, masked, disc_in, labels, attention = corrupt(ids, tok, gen, rng)
        gen_loss = torch.nn.functional.cross_entropy(logits[masked], ids[masked])
        d = disc(input_ids=disc_in, attention_mask=attention).logits
        w = attention.float()
        disc_loss = (bce(d, labels, reduction="none") * w).sum() / w.sum()
        opt.zero_grad()
        (gen_loss + a.disc_weight * disc_loss).backward()
        torch.nn.utils.clip_grad_norm_([q for _, q in params], 1.0)
        opt.step()
        sched.step()
        if step % 100 == 0 or step == a.steps:
            print(f"step {step} gen_loss {gen_loss.item():.3f} disc_loss {disc_loss.item():.4f} "
                  f"({(time.time() - start) / step:.3f} s/update)", flush=True)

    gen.eval(), disc.eval()
    tp = fp = fn = tokens = replaced = 0
    loss_sum = 0.0
    rng = torch.Generator().manual_seed(12345)
    with torch.no_grad():
        for i in range(0, len(heldout), 64):
            ids = batch_of(heldout[i:i + 64], a.seq_len)
            _, _, disc_in, labels, attention = corrupt(ids, tok, gen, rng)
            d = disc(input_ids=disc_in, attention_mask=attention).logits
            valid = attention.bool()
            pred = (d > 0) & valid
            truth = labels.bool() & valid
            tp += (pred & truth).sum().item()
            fp += (pred & ~truth).sum().item()
            fn += (~pred & truth & valid).sum().item()
            tokens += valid.sum().item()
            replaced += truth.sum().item()
            loss_sum += (bce(d, labels, reduction="none") * valid).sum().item()
    f = replaced / tokens
    constant = -(f * math.log(f) + (1 - f) * math.log(1 - f))
    print(f"held-out ({tokens} tokens, {f:.4f} replaced): recall {tp / max(1, tp + fn):.3f} "
          f"precision {tp / max(1, tp + fp):.3f} accuracy {1 - (fp + fn) / tokens:.4f} "
          f"(constant {1 - f:.4f}) BCE {loss_sum / tokens:.4f} (constant {constant:.4f})")


if __name__ == "__main__":
    main()
