#!/usr/bin/env python3
"""The Table 1 row of one bench/table1_window.sh run: reads OUT/ft/<task>-seed<k>.txt (the lines
`electra finetune` prints) and OUT/pretrain.log, takes the median over the seeds of each metric,
and appends one row to the table after the '<!-- table1 rows' marker of QUALITY.md (and writes it
to OUT/row.md). The mean uses the paper's GLUE metrics (ELECTRA, section 3.1: Matthews
correlation for CoLA, Spearman for STS-B, accuracy for the others), x100."""
import argparse
import datetime
import glob
import os
import re
import statistics
import subprocess
import sys

# Task -> (the paper's metric, the other metric shown in parentheses or None), as finetune names them.
METRICS = {
    "CoLA": ("mcc", None),
    "SST-2": ("accuracy", None),
    "MRPC": ("accuracy", "f1"),
    "STS-B": ("spearman", "pearson"),
    "RTE": ("accuracy", None),
}
RESULT = re.compile(r"^(\S+) seed (\d+): best epoch \d+: (.*) \(\d+ s\)$")


def fail(message):
    print(f"table1_row.py: {message}", file=sys.stderr)
    sys.exit(2)


def task_scores(out, task):
    """{metric: [value per seed]} from OUT/ft/<task>-seed*.txt."""
    scores = {}
    for path in sorted(glob.glob(os.path.join(out, "ft", f"{task}-seed*.txt"))):
        for line in open(path):
            m = RESULT.match(line.strip())
            if not m:
                continue
            for pair in m.group(3).split(", "):
                name, value = pair.split(" ")
                scores.setdefault(name, []).append(float(value))
    return scores


def count(n):
    """1.02B, 98.3M, 12.3k: a token count in a table cell."""
    for unit, scale in (("B", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= scale:
            return f"{n / scale:.3g}{unit}"
    return str(int(n))


def duration(seconds):
    minutes, s = divmod(int(seconds), 60)
    return f"{minutes} min {s:02d} s" if minutes else f"{s} s"


def hardware(out):
    """What pretrain.log says the run ran on ("runs on: NVIDIA H100 80GB HBM3 (...), precision bf16")."""
    for line in open(os.path.join(out, "pretrain.log")):
        if line.startswith("runs on: "):
            return line[len("runs on: "):].split(" (config:")[0].strip()
    fail(f"{out}/pretrain.log has no 'runs on:' line")


def commit(root):
    try:
        return subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"], check=True,
                              capture_output=True, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown commit"


def insert_row(quality, row):
    lines = open(quality).read().split("\n")
    marker = next((i for i, l in enumerate(lines) if l.startswith("<!-- table1 rows")), None)
    if marker is None:
        fail(f"{quality}: no '<!-- table1 rows' marker")
    header = marker + 1
    if header >= len(lines) or not lines[header].startswith("|"):
        fail(f"{quality}:{header + 1}: the table header must follow the marker")
    columns = lines[header].count("|") - 1
    if row.count("|") - 1 != columns:
        fail(f"{quality}:{header + 1}: the table has {columns} columns, the row {row.count('|') - 1}")
    end = header
    while end + 1 < len(lines) and lines[end + 1].startswith("|"):
        end += 1
    lines.insert(end + 1, row)
    open(quality, "w").write("\n".join(lines))


def main():
    p = argparse.ArgumentParser()
    for name in ("out", "quality", "tasks", "label", "subset", "command"):
        p.add_argument(f"--{name}", default="")
    for name in ("steps", "warmup", "batch", "seq-len", "examples", "pretrain-wall", "wall"):
        p.add_argument(f"--{name}", type=int, required=True)
    p.add_argument("--flops", type=float, required=True)
    a = p.parse_args()

    cells, means, seeds = [], [], set()
    for task in METRICS:
        if task not in a.tasks.split():
            cells.append("-")
            continue
        scores = task_scores(a.out, task)
        main_metric, other = METRICS[task]
        if main_metric not in scores:
            fail(f"no '{task} seed N: best epoch' line with {main_metric} in {a.out}/ft")
        seeds.add(len(scores[main_metric]))
        value = 100 * statistics.median(scores[main_metric])
        means.append(value)
        cell = f"{value:.1f}"
        if other:
            cell += f" ({100 * statistics.median(scores[other]):.1f})"
        cells.append(cell)
    mean = f"{sum(means) / len(means):.1f}" + ("" if len(means) == 5 else f" ({len(means)} tasks)")

    tokens = a.steps * a.batch * a.seq_len
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    label = a.label or "table1_window.sh"
    if a.subset:
        label += f" ({a.subset})"
    row = [
        label,
        datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M"),
        hardware(a.out),
        f"{a.steps:,} ({a.warmup:,})",
        f"{count(tokens)} ({a.steps:,} x {a.batch} x {a.seq_len})",
        f"{a.steps * a.batch / a.examples:.2f} of {a.examples:,} sequences",
        f"{a.steps * a.flops:.3g}",
        duration(a.pretrain_wall),
        duration(a.wall),
        "/".join(str(s) for s in sorted(seeds)),
    ] + cells + [mean, f"{commit(root)}: `{a.command}`"]
    text = "| " + " | ".join(row) + " |"
    insert_row(a.quality, text)
    open(os.path.join(a.out, "row.md"), "w").write(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
