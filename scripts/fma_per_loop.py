#!/usr/bin/env python3
"""fma_per_loop.py — instructions per FMA in the hot loop of compiled kernels.

Reads `objdump -d` output of an aarch64 object (GNU objdump syntax) and, for
each function named, finds its innermost loops (a backward branch with no
other backward branch inside) and reports the one with the highest share of
`fmla` instructions: its instruction count, its fmla count, instructions per
FMA instruction and the mix of opcodes. Used by scripts/cross-check-aarch64.sh
for the NEON GEMM micro-kernels (docs/cpu.md), where speed cannot be measured
under emulation.

With --most, the innermost loop with the most `fmla` instead (the main
loop where a kernel also has a short tail loop of a higher share, as the
decode kernels dots_kv_* have).

Usage: fma_per_loop.py [--most] OBJDUMP.txt FUNCTION...
"""
import re
import sys
from collections import Counter

BRANCH = re.compile(r'^(b|b\.\w+|cbz|cbnz|tbz|tbnz)$')


def functions(text):
    funcs, cur = {}, None
    for line in text.splitlines():
        m = re.match(r'^([0-9a-f]+) <([\w.]+)>:$', line)
        if m:
            cur = funcs.setdefault(m.group(2), [])
            continue
        m = re.match(r'^\s+([0-9a-f]+):\s+[0-9a-f]{8}\s+(\S+)\s*(.*)$', line)
        if m and cur is not None:
            cur.append((int(m.group(1), 16), m.group(2), m.group(3)))
    return funcs


def target(op, arg):
    if not BRANCH.match(op):
        return None
    m = re.search(r'\b([0-9a-f]+) <', arg)
    return int(m.group(1), 16) if m else None


def hot_loop(ins, most=False):
    back = []
    for addr, op, arg in ins:
        t = target(op, arg)
        if t is not None and t <= addr:
            back.append((t, addr))
    best = None
    for t, addr in back:
        if any(t <= t2 and a2 < addr for t2, a2 in back if (t2, a2) != (t, addr)):
            continue  # another loop inside: not innermost
        body = [x for x in ins if t <= x[0] <= addr]
        fm = sum(1 for x in body if x[1] == 'fmla')
        if not fm:
            continue
        key = (fm, fm / len(body)) if most else (fm / len(body),)
        if best is None or key > best[2]:
            best = (body, fm, key)
    return best


def main():
    args = sys.argv[1:]
    most = bool(args) and args[0] == '--most'
    if most:
        args = args[1:]
    if len(args) < 2:
        sys.exit(__doc__)
    funcs = functions(open(args[0]).read())
    status = 0
    for name in args[1:]:
        best = hot_loop(funcs.get(name, []), most)
        if not best:
            print(f'{name}: no loop with fmla found')
            status = 1
            continue
        body, fm, _ = best
        mix = ', '.join(f'{op} {n}' for op, n in Counter(x[1] for x in body).most_common())
        print(f'{name}: {len(body)} instructions, {fm} fmla: {len(body) / fm:.2f} per FMA '
              f'({mix})')
    return status


if __name__ == '__main__':
    sys.exit(main())
