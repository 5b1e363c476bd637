#!/usr/bin/env python3
"""make_tiny_glue.py DATA CORPUS: a data folder laid out as ../shared/data for the scripts that
pre-train and fine-tune on all five tasks (bench/table1_window.sh, bench/ablation.sh): DATA/corpus/
holds a copy of the text file CORPUS, DATA/glue/ tiny synthetic CoLA, SST-2, MRPC, STS-B and RTE in
the real files' layouts (CoLA without a header, MRPC's header with a byte-order mark, STS-B's ten
columns, RTE's string labels), 48 training and 24 dev rows each. The label is a keyword of the
sentence, so the tasks can be learned."""
import os
import random
import shutil
import sys

data, corpus = sys.argv[1], sys.argv[2]
os.makedirs(f"{data}/corpus", exist_ok=True)
shutil.copy(corpus, f"{data}/corpus/")
glue = f"{data}/glue"
sizes = (("train", 48), ("dev", 24))
random.seed(7)
fill = "the man woman house river city king ship sea night day road horse letter friend door".split()


def sentence(key):
    return " ".join(random.sample(fill, 5) + [key])


def write(task, split, header, rows):
    os.makedirs(f"{glue}/{task}", exist_ok=True)
    with open(f"{glue}/{task}/{split}.tsv", "w") as f:
        if header:
            f.write(header + "\n")
        f.write("\n".join(rows) + "\n")


for split, n in sizes:
    labels = [random.randint(0, 1) for _ in range(n)]
    key = ["bad", "good"]
    write("CoLA", split, None, [f"src\t{y}\t\t{sentence(key[y])}" for y in labels])
    write("SST-2", split, "sentence\tlabel", [f"{sentence(key[y])} \t{y}" for y in labels])
    write("MRPC", split, "\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String",
          [f"{y}\t{i}\t{i + 1}\t{sentence(key[y])}\t{sentence('same')}" for i, y in enumerate(labels)])
    write("STS-B", split,
          "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore",
          [f"{i}\tg\tf\t2020\t{i}\ts\ts\t{sentence(key[y])}\t{sentence('same')}\t{5.0 * y:.1f}"
           for i, y in enumerate(labels)])
    write("RTE", split, "index\tsentence1\tsentence2\tlabel",
          [f"{i}\t{sentence('same')}\t{sentence(key[y])}\t{'entailment' if y else 'not_entailment'}"
           for i, y in enumerate(labels)])
