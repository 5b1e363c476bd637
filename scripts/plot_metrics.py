#!/usr/bin/env python3
"""Plots a pre-training run's metrics.jsonl as a PNG: losses and accuracies against the step.

usage: plot_metrics.py metrics.jsonl [-o out.png]

Input: one JSON object per line as `electra pretrain` writes them (keys step, gen_loss, disc_loss,
gen_acc, disc_acc, replaced_frac, lr, ...). Unknown keys are ignored; lines without "step" (and
blank lines) are skipped; a line that is not JSON is an error naming its number.
Output: two panels, losses (left; the discriminator's on its own axis) and accuracies plus the
replaced fraction (right); by default next to the input with the extension .png.
Exit codes: 0 written, 2 bad input or usage, 3 matplotlib is not installed.
"""
import argparse
import json
import os
import sys

LOSSES = ("gen_loss", "disc_loss")
ACCURACIES = ("gen_acc", "disc_acc", "replaced_frac")


def read_metrics(path):
    """Returns {key: ([steps], [values])} for the plotted keys."""
    series = {key: ([], []) for key in LOSSES + ACCURACIES}
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}:{number}: not a JSON object ({e.msg})") from None
            if not isinstance(record, dict) or "step" not in record:
                continue
            for key, (steps, values) in series.items():
                value = record.get(key)
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    steps.append(record["step"])
                    values.append(value)
    return series


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("metrics", help="metrics.jsonl written by electra pretrain")
    parser.add_argument("-o", "--output", help="PNG to write (default: METRICS with .png)")
    args = parser.parse_args()
    try:
        import matplotlib

        matplotlib.use("Agg")  # no display needed
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed; pip install matplotlib", file=sys.stderr)
        return 3

    try:
        series = read_metrics(args.metrics)
    except (OSError, ValueError) as e:
        print(f"plot_metrics.py: error: {e}", file=sys.stderr)
        return 2
    if not any(steps for steps, _ in series.values()):
        print(f"plot_metrics.py: error: {args.metrics}: no records with a step and a loss or "
              "accuracy", file=sys.stderr)
        return 2
    output = args.output or os.path.splitext(args.metrics)[0] + ".png"

    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    # The discriminator's loss is an order of magnitude below the generator's: its own y axis.
    disc_axis = left.twinx()
    for axis, key, color in ((left, "gen_loss", "C0"), (disc_axis, "disc_loss", "C1")):
        steps, values = series[key]
        if steps:
            axis.plot(steps, values, label=key, color=color)
        axis.set_ylabel(key, color=color)
    left.set_title("loss")
    handles = left.get_lines() + disc_axis.get_lines()
    if handles:
        left.legend(handles, [h.get_label() for h in handles])
    for key in ACCURACIES:
        steps, values = series[key]
        if steps:
            right.plot(steps, values, label=key)
    right.set_title("accuracy")
    right.set_ylim(0, 1)
    if right.lines:
        right.legend()
    for axis in (left, right):
        axis.set_xlabel("step")
        axis.grid(True, alpha=0.3)
    fig.suptitle(os.path.basename(args.metrics))
    fig.tight_layout()
    fig.savefig(output, dpi=100)
    print(f"plot_metrics.py: wrote {output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
