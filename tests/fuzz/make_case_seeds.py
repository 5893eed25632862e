#!/usr/bin/env python3
"""make_case_seeds.py — packs sdpa-case/1 folders into the archive format of
fuzz_case.c ({u8 file index, u16 LE length, bytes}...) to seed its corpus.
Usage: make_case_seeds.py CONFORMANCE_DIR OUT_DIR. Run once by hand; the
seeds are kept in the repo (tests/fuzz/corpus/case)."""
import os
import struct
import sys

FILES = ["case.json", "q.f32", "k.f32", "v.f32", "out.expected.f32", "lse.expected.f32",
         "stats.expected.f32", "mask.u8", "bias.f32", "kv_len.i32", "kv_len.i64", "dout.f32",
         "dq.expected.f32", "dk.expected.f32", "dv.expected.f32", "q.f16", "k.f16", "v.f16",
         "q_gain.f32", "k_gain.f32", "temperature.f32", "out.expected.f16", "q.bf16",
         "sub/case.json"]


def main():
    src, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    for name in sorted(os.listdir(src)):
        folder = os.path.join(src, name)
        if not os.path.isfile(os.path.join(folder, "case.json")):
            continue
        blob = b""
        skipped = []
        for f in sorted(os.listdir(folder)):
            data = open(os.path.join(folder, f), "rb").read()
            if f not in FILES or len(data) > 0xFFFF:
                skipped.append(f)
                continue
            blob += struct.pack("<BH", FILES.index(f), len(data)) + data
        with open(os.path.join(out, name), "wb") as fh:
            fh.write(blob)
        print(name, len(blob), "bytes", "skipped: " + " ".join(skipped) if skipped else "")


if __name__ == "__main__":
    main()
