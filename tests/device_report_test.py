#!/usr/bin/env python3
"""device_report_test.py — the report of scripts/device-check.sh
(tools/internal/device_report.py) on made-up step logs (meson suite `tools`).

  device_report_test.py SOURCE_ROOT

Checks that what a device refuses with SDPA_ERR_UNSUPPORTED is counted and
listed apart and fails nothing: sdpa-check's UNSUPPORTED cases (with and
without --allow-unsupported, i.e. exit 0 and 1), the parity suite's
"unsupported (SDPA_ERR_UNSUPPORTED ...)" lines, sdpa-bench rows with status
"unsupported", sdpa-tune buckets with status SDPA_ERR_UNSUPPORTED (sdpa-tune
exits 1 on them); that a real failure next to refusals still fails the
report; and that device-check.sh gives sdpa-check --allow-unsupported.
Prints 'N passed, N failed'; exit 1 on a failure.
"""
import json
import os
import subprocess
import sys
import tempfile

results = []  # (passed, what) per check


def check(cond, what):
    results.append((bool(cond), what))
    if not cond:
        print("FAIL: " + what)


CONF_REFUSED = """PASS basic  out max_abs=1.00e-07 rel_l2=1.00e-07
UNSUPPORTED f16_storage  (opencl: the device has no 16-bit storage)
1 passed, 0 failed, 1 unsupported
"""
CONF_ALLOWED = """UNSUPPORTED bf16_storage_gqa  (vulkan: the device has no 16-bit storage)
PASS basic  out max_abs=1.00e-07 rel_l2=1.00e-07
1 passed, 0 failed, 1 unsupported (allowed)
"""
CONF_FAILED = """FAIL basic  out max_abs=1.00e+00 rel_l2=1.00e+00  (out beyond tolerance)
UNSUPPORTED f16_storage  (opencl: the device has no 16-bit storage)
0 passed, 1 failed, 1 unsupported
"""
PARITY = """opencl/f16: unsupported (SDPA_ERR_UNSUPPORTED: opencl: no 16-bit storage)
Ok:                 1
Fail:               0
"""
BENCH = {"results": [
    {"backend": "opencl", "device": "gpu", "op": "forward", "shape": "B1 H8 S1024 D64",
     "dtype": "f32", "status": "ok", "median_ms": 1.0, "gflops": 10.0, "peak_frac": 0.1},
    {"backend": "opencl", "device": "gpu", "op": "forward", "shape": "B1 H8 S1024 D64",
     "dtype": "bf16", "status": "unsupported",
     "error": "SDPA_ERR_UNSUPPORTED: no 16-bit storage"}]}
TUNE = {"buckets": [
    {"bucket": "decode/f32", "shape": "B1 H32/8 Sq1 Skv1024 D128", "status": "SDPA_OK",
     "default": "a", "tuned": "b", "measured": 2, "candidates": 4},
    {"bucket": "decode/f16", "shape": "B1 H32/8 Sq1 Skv1024 D128 f16",
     "status": "SDPA_ERR_UNSUPPORTED", "error": "SDPA_ERR_UNSUPPORTED: no 16-bit storage",
     "default": "", "tuned": "", "measured": 0, "candidates": 0}]}


def report(root, steps):
    """Writes steps (name, rc, log text) into a report folder and runs the
    report; returns (exit status, report.json, report.md)."""
    out = tempfile.mkdtemp(dir=root)
    os.makedirs(os.path.join(out, "logs"))
    with open(os.path.join(out, "steps.tsv"), "w") as tsv:
        for name, rc, text in steps:
            with open(os.path.join(out, "logs", name + ".log"), "w") as f:
                f.write(text)
            tsv.write("%s\topencl\t0\t%d\t1\tlogs/%s.log\n" % (name, rc, name))
    with open(os.path.join(out, "targets.txt"), "w") as f:
        f.write("opencl 0 1 Some GPU\n")
    r = subprocess.run([sys.executable, os.path.join(SRC, "tools", "internal",
                                                     "device_report.py"), out, "1", "5"],
                       capture_output=True, text=True)
    with open(os.path.join(out, "report.json")) as f:
        js = json.load(f)
    with open(os.path.join(out, "report.md")) as f:
        md = f.read()
    return r.returncode, js, md, r.stdout


SRC = sys.argv[1]
with tempfile.TemporaryDirectory() as root:
    rc, js, md, stdout = report(root, [
        ("parity-opencl0", 0, PARITY),
        ("conformance-opencl0-tests-conformance", 1, CONF_REFUSED),
        ("conformance-opencl0-shared-conformance", 0, CONF_ALLOWED),
        ("bench-opencl0-mobile", 0, json.dumps(BENCH)),
        ("tune-opencl0", 1, json.dumps(TUNE)),
    ])
    check(rc == 0, "refusals only: report exit 0, got %d (%s)" % (rc, stdout.strip()))
    check(js["failed_steps"] == 0, "refusals only: failed_steps %s" % js["failed_steps"])
    check(js["unsupported"] == 5, "refusals only: 5 unsupported, got %s" % js["unsupported"])
    by = {s["step"]: s for s in js["steps"]}
    check(by["conformance-opencl0-tests-conformance"]["counts"] ==
          {"passed": 1, "failed": 0, "skipped": 0, "unsupported": 1},
          "sdpa-check counts: %s" % by["conformance-opencl0-tests-conformance"]["counts"])
    check(by["tune-opencl0"]["outcome"].startswith("pass"),
          "tune with an unsupported bucket: %s" % by["tune-opencl0"]["outcome"])
    for what in ("f16_storage: opencl: the device has no 16-bit storage",
                 "bf16_storage_gqa: vulkan", "opencl/f16: SDPA_ERR_UNSUPPORTED",
                 "forward B1 H8 S1024 D64 bf16 opencl: SDPA_ERR_UNSUPPORTED",
                 "B1 H32/8 Sq1 Skv1024 D128 f16: SDPA_ERR_UNSUPPORTED"):
        check(what in md, "report.md lists '%s'" % what)
    check("## Unsupported" in md and "not failures" in md, "report.md has the Unsupported part")
    check("## Failed" not in md, "report.md lists no failed step")
    check("5 unsupported" in stdout, "summary line counts them: %s" % stdout.strip())

    rc, js, md, stdout = report(root, [
        ("conformance-opencl0-tests-conformance", 1, CONF_FAILED),
        ("tune-opencl0", 1, json.dumps({"buckets": [dict(TUNE["buckets"][1]),
                                                    dict(TUNE["buckets"][0],
                                                         status="SDPA_ERR_DEVICE")]})),
    ])
    check(rc == 1, "a failure beside refusals: report exit 1, got %d" % rc)
    check(js["failed_steps"] == 2, "a failure beside refusals: 2 failed steps, got %s"
          % js["failed_steps"])
    check(js["unsupported"] == 2, "a failure beside refusals: 2 unsupported, got %s"
          % js["unsupported"])

with open(os.path.join(SRC, "scripts", "device-check.sh")) as f:
    calls = [l for l in f if '"$tools/sdpa-check"' in l]
check(calls and all("--allow-unsupported" in l for l in calls),
      "device-check.sh runs sdpa-check with --allow-unsupported: %s" % calls)

failed = sum(1 for ok, _ in results if not ok)
print("%d passed, %d failed" % (len(results) - failed, failed))
sys.exit(1 if failed else 0)
