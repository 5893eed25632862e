#!/usr/bin/env python3
"""make_cache_seeds.py — writes the seed corpora of fuzz_clcache.c and
fuzz_vkcache.c: a few valid cache files in the on-disk formats of
src/backend/opencl/cl_cache_entry.h and src/backend/vulkan/vk_cache_entry.h
(for the identity / device the targets expect: IDENT and DEVICE below must
match FUZZ_IDENT and FUZZ_DEVICE there), plus truncated and corrupted ones.
Usage: make_cache_seeds.py OUT_DIR (writes OUT_DIR/clcache, OUT_DIR/vkcache).
Run once by hand; the seeds (under 4 KB together) are kept in the repo
(tests/fuzz/corpus)."""
import os
import struct
import sys

IDENT = b"Portable Computing Language\ncpu-fuzz\n6.0\n0123456789abcdef -cl-std=CL1.2"
VENDOR, DEVICE_ID, UUID = 0x10005, 0x0, b"sdpa-fuzz-uuid01"


def fnv1a(data, h=1469598103934665603):
    for b in data:
        h = ((h ^ b) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


def cl_entry(ident, binary, version=1, magic=b"SDPACLB1", blen=None, checksum=None):
    s = fnv1a(binary, fnv1a(ident)) if checksum is None else checksum
    n = len(binary) if blen is None else blen
    return magic + struct.pack("<IIQQ", version, len(ident), n, s) + ident + binary


def vk_entry(payload, version=1, n=None, checksum=None):
    s = fnv1a(payload) if checksum is None else checksum
    size = len(payload) if n is None else n
    return b"SDPAVKPC" + struct.pack("<IIQQ", version, 0, size, s) + payload


def driver_blob(extra, vendor=VENDOR, device=DEVICE_ID, uuid=UUID, hsize=32, hver=1):
    return struct.pack("<IIII", hsize, hver, vendor, device) + uuid + extra


def write(folder, name, data):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


def main():
    out = sys.argv[1]
    cl = os.path.join(out, "clcache")
    binary = bytes((i * 37 + 11) & 0xFF for i in range(96))  # stands in for an ELF
    good = cl_entry(IDENT, binary)
    write(cl, "valid", good)
    write(cl, "valid_1byte", cl_entry(IDENT, b"\x7f"))
    write(cl, "other_ident", cl_entry(IDENT.replace(b"6.0", b"5.0"), binary))
    write(cl, "truncated_header", good[:20])
    write(cl, "truncated_binary", good[:-10])
    write(cl, "length_past_end", cl_entry(IDENT, binary, blen=len(binary) + 4096))
    write(cl, "trailing", good + b"junk")
    flipped = bytearray(good)
    flipped[-5] ^= 0x5A
    write(cl, "checksum", bytes(flipped))
    write(cl, "bad_version", cl_entry(IDENT, binary, version=2))
    write(cl, "bad_magic", b"SDPACLB0" + good[8:])

    vk = os.path.join(out, "vkcache")
    payload = driver_blob(bytes((i * 13 + 5) & 0xFF for i in range(64)))
    good = vk_entry(payload)
    write(vk, "valid", good)
    write(vk, "valid_header_only", vk_entry(driver_blob(b"")))
    write(vk, "valid_big_hsize", vk_entry(driver_blob(b"\0" * 16, hsize=48)))
    write(vk, "other_device", vk_entry(driver_blob(b"\1" * 8, device=0x1234)))
    write(vk, "other_uuid", vk_entry(driver_blob(b"\1" * 8, uuid=b"another-uuid-000")))
    write(vk, "hsize_past_end", vk_entry(driver_blob(b"", hsize=4096)))
    write(vk, "driver_version", vk_entry(driver_blob(b"", hver=2)))
    write(vk, "short_payload", vk_entry(b"\x20\0\0\0\1\0\0\0"))
    write(vk, "truncated_header", good[:31])
    write(vk, "truncated_payload", good[:-7])
    write(vk, "size_past_end", vk_entry(payload, n=len(payload) + 100))
    flipped = bytearray(good)
    flipped[40] ^= 0x5A
    write(vk, "checksum", bytes(flipped))
    write(vk, "bad_version", vk_entry(payload, version=7))


if __name__ == "__main__":
    main()
