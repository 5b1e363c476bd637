#!/usr/bin/env python3
"""The summary table of a scripts/gpu_check.sh work folder, as Markdown on stdout.

    scripts/gpu_summary.py WORK

WORK holds steps.tsv (phase, step, exit code or "not run: why", seconds, note; the latest line of
a step wins) and logs/PHASE/STEP.log. The table reads what each log says: a test's largest error
against its bound (test/common/largest_error.h) or its failed assertions, a sanitizer's error
count, the benchmarks' RESULT lines (ours beside each baseline, ratio = baseline / ours, above 1:
ours is faster), the update against HF, the pre-training throughput and fine-tuning scores of the
user's path, and checkpoint comparisons. test/apps/gpu_check_test.sh tests it on recorded logs.
"""
import collections
import os
import re
import sys


def read_lines(path):
    try:
        with open(path, errors="replace") as f:
            return f.read().splitlines()
    except OSError:
        return []


def load_steps(work):
    steps = collections.OrderedDict()
    for line in read_lines(os.path.join(work, "steps.tsv")):
        fields = (line.split("\t") + [""] * 5)[:5]
        steps[(fields[0], fields[1])] = {"result": fields[2], "seconds": fields[3],
                                         "note": fields[4]}
    return steps


def verdict(result, skip_ok=False):
    if result == "0":
        return "ok"
    if result.startswith("not run"):
        return result
    if result == "77":
        return "skipped" if skip_ok else "SKIPPED (a failure on a GPU machine)"
    if result in ("124", "137"):
        return "TIMEOUT"
    if result == "75":
        return "cut at its budget (the same phase again continues it)"
    return f"FAILED (exit {result})"


def first(lines, pattern):
    regex = re.compile(pattern)
    for line in lines:
        m = regex.search(line)
        if m:
            return m
    return None


def last(lines, pattern):
    regex = re.compile(pattern)
    found = None
    for line in lines:
        m = regex.search(line)
        if m:
            found = m
    return found


def test_detail(lines):
    """What a GPU test's log says beyond its exit code."""
    parts = []
    skipped = first(lines, r"^skipped: (.*)")
    if skipped:
        parts.append(f"skipped: {skipped.group(1)}")
    failed = last(lines, r"assertions: *(\d+) \| *(\d+) passed \| *(\d+) failed")
    if failed:
        parts.append(f"{failed.group(3)} of {failed.group(1)} assertions failed")
    largest = last(lines, r"^largest error: (\S+) against a bound of (\S+) \((\S+) of the bound; "
                          r"(\d+) compared\) in (.*)$")
    if largest:
        parts.append(f"largest error {largest.group(1)} = {largest.group(3)} of its bound "
                     f"{largest.group(2)} ({largest.group(5)})")
    crash = first(lines, r"(FAILED: this machine.*|terminate called.*|Segmentation fault.*)")
    if crash and not failed:
        parts.append(crash.group(1))
    return "; ".join(parts)


def failed_cases(lines):
    """(Catch2 test case, its first failure) of each failing case in a console log: an op harness
    case names its op, shape and dtype, and its message says which output failed and where
    (test/common/error_locus.h); Catch2 wraps long messages, whose lines are joined again."""
    found = collections.OrderedDict()
    case, i = None, 0
    while i < len(lines):
        line = lines[i]
        if re.fullmatch(r"-{20,}", line) and i + 2 < len(lines) and re.fullmatch(r"-{20,}", lines[i + 2]):
            case, i = lines[i + 1].strip(), i + 3
            continue
        if case is not None and line.endswith(" FAILED:") and case not in found:
            body = []
            for follow in lines[i + 1:]:
                if not follow.strip():
                    break
                body.append(follow.strip())
            text = " ".join(b for b in body if b not in ("explicitly with message:", "with expansion:"))
            found[case] = text
        i += 1
    return list(found.items())


def kv(line):
    return dict(re.findall(r"(\w+)=(\S+)", line))


def table(header, rows):
    if not rows:
        return []
    out = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return out + [""]


def summarize(work):
    steps = load_steps(work)
    logs = os.path.join(work, "logs")

    def log(phase, step):
        return read_lines(os.path.join(logs, phase, f"{step}.log"))

    text = ["# gpu_check summary", ""]
    gpu = read_lines(os.path.join(logs, "nvidia-smi.txt"))
    text.append(f"- GPU: {gpu[0] if gpu else 'unknown'}")
    manifest = read_lines(os.path.join(logs, "MANIFEST"))
    text.append(f"- bundle: {', '.join(manifest[:2]) if manifest else 'unknown'}")
    text.append("")

    dry = all(s["result"] in ("77",) or s["result"].startswith("not run")
              for (phase, _), s in steps.items() if phase == "tests")
    not_run = [(p, s, v["result"]) for (p, s), v in steps.items() if v["result"].startswith("not run")]

    rows = []
    for (phase, step), s in steps.items():
        if phase != "tests" or s["result"].startswith("not run"):
            continue
        rows.append((step, verdict(s["result"], skip_ok=dry), f"{s['seconds']} s",
                     test_detail(log(phase, step))))
    if rows:
        passed = sum(1 for r in rows if r[1] == "ok")
        text += [f"## GPU tests: {passed} of {len(rows)} passed", ""]
        text += table(("test", "result", "time", "detail"), rows)
        failed = [step for (phase, step), s in steps.items()
                  if phase == "tests" and s["result"] not in ("0", "77")
                  and not s["result"].startswith("not run")]
        cases = [(step, case, why) for step in failed
                 for case, why in failed_cases(log("tests", step))]
        if cases:
            shown = 40
            text += [f"### Failed test cases ({len(cases)}; the first failure of each)", ""]
            text += table(("test", "case", "first failure"),
                          [(t, c, w[:400].replace("|", "\\|")) for t, c, w in cases[:shown]])
            if len(cases) > shown:
                text += [f"({len(cases) - shown} more in the tests' logs)", ""]
        # The kernels with a switch of their own: the later phases can run around them.
        fallbacks = [(tests, option) for tests, option in (
            (("attention_gpu_test",), "--attention unfused"),
            (("ffn_forward_gpu_test", "ffn_backward_gpu_test", "output_layernorm_gpu_test"),
             "--unfused-layers")) if set(failed) & set(tests)]
        for tests, option in fallbacks:
            text += [f"- {', '.join(t for t in tests if t in failed)} failed: run the later phases "
                     f"again with `{option}` (scripts/gpu_check.sh) to measure a correct update"]
        if fallbacks:
            text.append("")

    rows = []
    for (phase, step), s in steps.items():
        if phase != "sanitize" or s["result"].startswith("not run"):
            continue
        lines = log(phase, step)
        found = last(lines, r"(ERROR SUMMARY: \d+ errors?|RACECHECK SUMMARY: .*)")
        rows.append((step, verdict(s["result"]), f"{s['seconds']} s",
                     found.group(1) if found else "no summary line"))
    if rows:
        text += ["## compute-sanitizer", ""] + table(("tool-test", "result", "time", "summary"), rows)

    bench = collections.OrderedDict()  # (op, shape) -> {impl: fields}
    other, failures = [], []
    for (phase, step), s in steps.items():
        if phase != "bench" or s["result"].startswith("not run"):
            continue
        lines = log(phase, step)
        for line in lines:
            if line.startswith("RESULT op="):
                f = kv(line)
                bench.setdefault((f.get("op"), f.get("shape")), {})[f.get("impl")] = f
            elif line.startswith("RESULT "):
                other.append(f"{step}: {line}")
        if s["result"] != "0":
            tail = [l for l in lines if l.strip()][-1:] or ["(no output)"]
            failures.append((step, verdict(s["result"]), tail[0][:160]))
    rows = []
    for (op, shape), impls in bench.items():
        ours = impls.get("ours")
        for impl, f in impls.items():
            if impl == "ours":
                continue
            ratio = (f"{float(f['ms']) / float(ours['ms']):.2f}x"
                     if ours and float(ours.get("ms", 0)) > 0 else "-")
            rows.append((op, shape, ours["ms"] if ours else "-",
                         ours.get("roofline_pct", "-") if ours else "-", impl, f.get("ms", "-"), ratio))
        if ours and len(impls) == 1:
            rows.append((op, shape, ours["ms"], ours.get("roofline_pct", "-"), "-", "-", "-"))
    if rows or failures:
        text += ["## Benchmarks (ms are medians; ratio = baseline / ours)", ""]
        text += table(("op", "shape", "ours ms", "ours % of roofline", "baseline", "baseline ms",
                       "ratio"), rows)
        text += table(("benchmark", "result", "last line"), failures)
    if other:
        text += ["Other RESULT lines:", "", "```"] + other + ["```", ""]

    updates = collections.OrderedDict()
    for (phase, step), s in steps.items():
        m = re.match(r"(\w+?)(\d+)_(ours|ours_flash_ds|ours_flash_short|ours_overlap|hf_eager|hf_compile)$", step)
        if phase != "step" or not m:
            continue
        key = (m.group(1), m.group(2))
        found = last(log(phase, step), r"^RESULT .*")
        updates.setdefault(key, {})[m.group(3)] = (
            kv(found.group(0)) if found and s["result"] == "0" else {"error": verdict(s["result"])})
    rows = []
    for (model, seq), impls in updates.items():
        ours = impls.get("ours", {})

        def cell(f):
            return f.get("median_ms", f.get("error", "-")) if f else "-"

        def ratio(f):
            try:
                return f"{float(f['median_ms']) / float(ours['median_ms']):.2f}x"
            except (KeyError, ValueError, TypeError, ZeroDivisionError):
                return "-"

        rows.append((f"{model} seq {seq} batch {ours.get('batch', '-')}", cell(ours),
                     ours.get("seq_per_s", "-"), cell(impls.get("ours_flash_ds")),
                     cell(impls.get("ours_flash_short")), cell(impls.get("ours_overlap")),
                     cell(impls.get("hf_eager")),
                     cell(impls.get("hf_compile")), ratio(impls.get("hf_eager", {})),
                     ratio(impls.get("hf_compile", {}))))
    if rows:
        text += ["## The bf16 update, ours against HF (same machine, same run)", ""]
        text += table(("update", "ours ms", "ours seq/s", "ours, attention flash_ds, ms",
                       "ours, attention flash_short, ms", "ours, generator backward overlapped, ms",
                       "HF eager ms", "HF compile ms", "eager / ours", "compile / ours"), rows)

    rows = []
    for (phase, step), s in steps.items():
        if phase not in ("table1", "ablation") or s["result"].startswith("not run"):
            continue
        said = [l for l in log(phase, step) if l.strip()][-1:]
        rows.append((f"{phase} {step}", verdict(s["result"]), f"{s['seconds']} s",
                     said[0][:200] if said else ""))
    if rows:
        text += ["## The paper's tables", ""] + table(("run", "result", "time", "last line"), rows)
    for name, title in (("table1/row.md", "Table 1 row (bench/table1_window.sh)"),
                        ("ablation/table.md", "Table 5 at equal FLOPs (bench/ablation.sh)")):
        found = read_lines(os.path.join(work, name))
        if found:
            text += [f"### {title}", ""] + found + [""]

    for phase, title in (("user", "The user's path"), ("resume", "Resume on the GPU")):
        rows = []
        for (p, step), s in steps.items():
            if p != phase or s["result"].startswith("not run"):
                continue
            lines = log(p, step)
            note = ""
            if step in ("pretrain", "resume", "pretrain_serial", "pretrain_overlap"):
                speed = last(lines, r"^step (\d+)/\d+ .*?\| ([\d.]+) seq/s.*?\| ([\d.]+ TFLOP/s[^|]*)")
                resumed = first(lines, r"(resumed from .*)")
                note = "; ".join(x for x in (
                    resumed.group(1) if resumed else "",
                    f"step {speed.group(1)}: {speed.group(2)} seq/s, {speed.group(3).strip()}"
                    if speed else "no progress line",
                    "SIGINT saved a checkpoint" if first(lines, "SIGINT received") else "") if x)
            elif step.startswith("finetune_"):
                best = last(lines, r"seed \d+: (best epoch .*)")
                note = best.group(1) if best else ""
            elif step == "build_data":
                made = last(lines, r"^build-data: (.*examples.*)")
                note = made.group(1) if made else ""
            else:
                said = [l for l in lines if l.strip()][-1:]
                note = said[0][:200] if said else ""
            rows.append((step, verdict(s["result"]), f"{s['seconds']} s", note))
        if rows:
            text += [f"## {title}", ""] + table(("step", "result", "time", "what it said"), rows)

    if not_run:
        text += ["## Not run", ""] + [f"- {p} {s}: {r[len('not run: '):]}" for p, s, r in not_run]
        text.append("")
    return "\n".join(text)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: gpu_summary.py WORK")
    print(summarize(sys.argv[1]))
