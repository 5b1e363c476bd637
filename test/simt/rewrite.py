#!/usr/bin/env python3
"""Rewrites a CUDA source into C++ that g++ compiles against test/simt/simt_device.h.

The SIMT emulator (docs/ARCHITECTURE.md, "The SIMT emulator") runs the kernels' device code on the
host. g++ parses everything in a .cu file but three constructs, which this script rewrites:

  kernel<<<grid, block, bytes, stream>>>(args)  ->  ::simt::launch(grid, block, bytes, stream)
                                                      .run(kernel, "kernel")(args)
                                                    (or .run_deduced(lambda, "kernel") without
                                                    bytes; the string names the kernel)
  extern __shared__ T name[];                   ->  T* const name = ::simt::dynamic_shared<T>();
  asm volatile("ptx" : outs : ins);             ->  ::simt::ptx("ptx", ::simt::out(x), ...,
                                                      ::simt::in(y), ...);

Everything else (__global__, __shared__, intrinsics, built-in variables) is defined by
simt_device.h. Usage: rewrite.py IN OUT
"""
import os
import re
import sys

LAUNCH_OPEN, LAUNCH_CLOSE = "<<<", ">>>"


def kernel_start(text, end):
    """Index where the kernel expression ending just before `end` starts: identifiers, `::` and
    balanced template arguments (which may hold spaces and commas), scanned backwards."""
    i = end
    while i > 0 and text[i - 1].isspace():
        i -= 1
    depth = 0
    while i > 0:
        c = text[i - 1]
        if c == ">":
            depth += 1
        elif c == "<":
            depth -= 1
            if depth < 0:
                break
        elif depth == 0 and c.isspace():
            # `ns::` may end a line before the name: go on past the break.
            j = i - 1
            while j > 0 and text[j - 1].isspace():
                j -= 1
            if text[j - 2:j] != "::":
                break
            i = j
            continue
        elif depth == 0 and not (c.isalnum() or c in "_:"):
            break
        i -= 1
    return i


def rewrite_launches(text):
    out, pos = [], 0
    while True:
        open_at = text.find(LAUNCH_OPEN, pos)
        if open_at < 0:
            out.append(text[pos:])
            return "".join(out)
        close_at = text.find(LAUNCH_CLOSE, open_at)
        if close_at < 0:
            raise SystemExit(f"rewrite.py: '<<<' without '>>>' at offset {open_at}")
        start = kernel_start(text, open_at)
        raw = text[start:open_at]
        kernel = re.sub(r"\s+", " ", raw.strip())
        if not kernel:
            raise SystemExit(f"rewrite.py: no kernel before '<<<' at offset {open_at}")
        config = text[open_at + len(LAUNCH_OPEN):close_at]
        out.append(text[pos:start])
        # A launch with dynamic shared memory passes the kernel's address (for the limit that
        # cudaFuncSetAttribute raised); one without calls it through a lambda, so that a kernel
        # template's arguments are deduced from the call's as nvcc does.
        # The kernel's text names it (the driver API's cuFuncGetName in the emulator).
        name = '"' + kernel.replace("\\", "\\\\").replace('"', '\\"') + '"'
        fields = split_top(config, ",")
        if len(fields) >= 3 and fields[2].strip() != "0":
            call = f"::simt::launch({config}).run({kernel}, {name})"
        else:
            call = (f"::simt::launch({config}).run_deduced("
                    f"[=](auto&... simt_args) {{ {kernel}(simt_args...); }}, {name})")
        # The kernel's own line breaks follow it, so the lines after keep their numbers.
        out.append(call + "\n" * raw.count("\n"))
        pos = close_at + len(LAUNCH_CLOSE)


EXTERN_SHARED = re.compile(
    r"extern\s+__shared__\s+(?:__align__\(\s*\d+\s*\)\s+)?([\w:]+(?:\s+[\w:]+)*?)\s+"
    r"(?:__align__\(\s*\d+\s*\)\s+)?(\w+)\s*\[\s*\]\s*;")


def rewrite_extern_shared(text):
    return EXTERN_SHARED.sub(r"\1* const \2 = ::simt::dynamic_shared<\1>();", text)


ASM = re.compile(r"\basm\s*(?:volatile\s*)?\(")


def split_top(s, sep):
    """Splits s at `sep` outside parentheses, brackets and string literals."""
    parts, depth, cur, in_str, i = [], 0, [], False, 0
    while i < len(s):
        c = s[i]
        if in_str:
            cur.append(c)
            if c == "\\":
                cur.append(s[i + 1])
                i += 1
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
            cur.append(c)
        elif c in "([{":
            depth += 1
            cur.append(c)
        elif c in ")]}":
            depth -= 1
            cur.append(c)
        elif c == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
        i += 1
    parts.append("".join(cur))
    return parts


def matching_paren(text, open_at):
    depth, in_str, i = 0, False, open_at
    while i < len(text):
        c = text[i]
        if in_str:
            if c == "\\":
                i += 1
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    raise SystemExit(f"rewrite.py: unbalanced asm( at offset {open_at}")


OPERAND = re.compile(r'^\s*"[=+&]*[a-z]"\s*\((.*)\)\s*$', re.S)


def operands(section, output):
    result = []
    for op in split_top(section, ","):
        if not op.strip():
            continue
        m = OPERAND.match(op)
        if not m:
            raise SystemExit(f"rewrite.py: cannot read asm operand {op.strip()!r}")
        expr = m.group(1)
        # The instruction's text says what each operand is: only its place is kept.
        result.append(f"::simt::{'out' if output else 'in'}(({expr}))")
    return result


def rewrite_asm(text):
    out, pos = [], 0
    for m in ASM.finditer(text):
        if m.start() < pos:
            continue
        close = matching_paren(text, m.end() - 1)
        sections = split_top(text[m.end():close], ":")
        template = sections[0].strip()
        args = [template]
        if len(sections) > 1:
            args += operands(sections[1], output=True)
        if len(sections) > 2:
            args += operands(sections[2], output=False)
        out.append(text[pos:m.start()])
        call = "::simt::ptx(" + ", ".join(args) + ")"
        # Line breaks the call lost follow it, so the lines after keep their numbers.
        out.append(call + "\n" * (text.count("\n", m.start(), close) - call.count("\n")))
        pos = close + 1
    out.append(text[pos:])
    return "".join(out)


def main():
    if len(sys.argv) != 3:
        raise SystemExit("usage: rewrite.py IN OUT")
    with open(sys.argv[1]) as f:
        text = f.read()
    text = rewrite_asm(rewrite_extern_shared(rewrite_launches(text)))
    text = f'#line 1 "{sys.argv[1]}"\n' + text
    os.makedirs(os.path.dirname(os.path.abspath(sys.argv[2])), exist_ok=True)
    try:
        with open(sys.argv[2]) as f:
            if f.read() == text:
                return  # unchanged: keep the time stamp, so nothing recompiles
    except FileNotFoundError:
        pass
    with open(sys.argv[2], "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
