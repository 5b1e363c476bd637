#!/usr/bin/env python3
"""Baseline for bench/build_data_bench.sh: HF tokenizers' BertWordPieceTokenizer (Rust) encoding
the same text single-threaded. Prints one line: bytes, lines, tokens, seconds, MB/s.

Usage: python3 bench/hf_tokenizers_baseline.py VOCAB TEXT_FILE
Needs: pip install tokenizers
"""
import os
import sys
import time

# Single-threaded: encode_batch uses a rayon pool unless parallelism is off.
os.environ["TOKENIZERS_PARALLELISM"] = "false"
os.environ["RAYON_NUM_THREADS"] = "1"

from tokenizers import BertWordPieceTokenizer  # noqa: E402


def main():
    vocab, path = sys.argv[1], sys.argv[2]
    tok = BertWordPieceTokenizer(vocab, lowercase=True, clean_text=True,
                                 handle_chinese_chars=True, strip_accents=None)
    with open(path, "rb") as f:
        data = f.read()
    lines = data.decode("utf-8", errors="replace").split("\n")
    batch = 10000
    tokens = 0
    start = time.perf_counter()
    for i in range(0, len(lines), batch):
        for enc in tok.encode_batch(lines[i:i + batch], add_special_tokens=False):
            tokens += len(enc.ids)
    seconds = time.perf_counter() - start
    print("hf tokenizers BertWordPieceTokenizer (1 thread): %d bytes, %d lines, %d tokens, "
          "%.2f s, %.1f MB/s" % (len(data), len(lines), tokens, seconds, len(data) / seconds / 1e6))


if __name__ == "__main__":
    main()
