#!/usr/bin/env python3
"""device_report.py — writes report.md and report.json of scripts/device-check.sh.

  device_report.py OUT NGPU SECONDS

Reads OUT/steps.tsv (one line per step: name, backend, device, exit code,
seconds, log), OUT/sdpa-info.json, OUT/targets.txt and the steps' logs
(bench and tune print JSON on stdout), and sums them up: the devices, each
step's outcome with its pass/fail counts, the benchmark rows with % of peak,
the tuning results. Exit status 1 when a step failed or timed out.

What a device refuses with SDPA_ERR_UNSUPPORTED is no failure: it is counted
and listed on its own ("Unsupported" in report.md, "unsupported" in
report.json) — sdpa-check's UNSUPPORTED cases (device-check passes
--allow-unsupported), the parity suite's "unsupported (SDPA_ERR_UNSUPPORTED"
lines, sdpa-bench rows with status "unsupported" and sdpa-tune buckets with
status SDPA_ERR_UNSUPPORTED. A step that exited non-zero only because of such
refusals (sdpa-tune counts them as failed buckets; sdpa-check without
--allow-unsupported) counts as passed. tests/device_report_test.py checks it.
"""
import json
import os
import re
import sys


def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def counts(text):
    """Pass/fail counts a step printed: sdpa-check's 'N passed, N failed,
    N unsupported' or meson test's 'Ok: N ... Fail: N'."""
    m = re.findall(r"^(\d+) passed, (\d+) failed(?:, (\d+) (?:skipped|unsupported))?", text,
                   re.M)
    if m:
        p, f, s = m[-1]
        return {"passed": int(p), "failed": int(f), "skipped": 0, "unsupported": int(s or 0)}
    ok = re.findall(r"^Ok:\s+(\d+)", text, re.M)
    fail = re.findall(r"^Fail:\s+(\d+)", text, re.M)
    skip = re.findall(r"^Skipped:\s+(\d+)", text, re.M)
    to = re.findall(r"^Timeout:\s+(\d+)", text, re.M)
    if ok:
        return {"passed": int(ok[-1]), "failed": int(fail[-1] if fail else 0) +
                int(to[-1] if to else 0), "skipped": int(skip[-1] if skip else 0)}
    # sdpa-check stopped before its summary: its per-case lines so far
    cases = re.findall(r"^(PASS|FAIL|UNSUPPORTED) ", text, re.M)
    if cases:
        return {"passed": cases.count("PASS"), "failed": cases.count("FAIL"), "skipped": 0,
                "unsupported": cases.count("UNSUPPORTED"), "partial": True}
    return None


def unsupported(step, text):
    """What the step's device refused with SDPA_ERR_UNSUPPORTED: one
    'what: why' string each."""
    found = ["%s: %s" % (m.group(1), m.group(2) or "unsupported")
             for m in re.finditer(r"^UNSUPPORTED (\S+)(?:\s+\((.*)\))?\s*$", text, re.M)]
    found += ["%s: %s" % (m.group(1), m.group(2))
              for m in re.finditer(r"^(\S+): unsupported \((SDPA_ERR_UNSUPPORTED.*)\)\s*$",
                                   text, re.M)]
    js = step.get("json") or {}
    for r in js.get("results", []) if step["step"].startswith("bench-") else []:
        if r.get("status") == "unsupported":
            found.append("%s %s %s %s: %s" % (r.get("op"), r.get("shape"), r.get("dtype"),
                                              r.get("backend"), r.get("error") or "unsupported"))
    for b in js.get("buckets", []) if step["step"].startswith("tune-") else []:
        if b.get("status") == "SDPA_ERR_UNSUPPORTED":
            found.append("%s: %s" % (b.get("shape"), b.get("error") or b.get("status")))
    return found


def only_unsupported(step, text):
    """Whether a step that exited 1 failed only by refusals."""
    if step["rc"] != 1 or not step["unsupported"]:
        return False
    c = step["counts"]
    if c is not None:
        return c["failed"] == 0 and not c.get("partial")
    js = step.get("json") or {}
    if step["step"].startswith("tune-"):
        buckets = js.get("buckets", [])
        return bool(buckets) and all(
            b.get("status") in ("SDPA_OK", "SDPA_ERR_UNSUPPORTED") and
            (b.get("verify") or {}).get("target") != "missed" for b in buckets)
    return False


def fmt_ms(v):
    return "%.3f" % v if isinstance(v, (int, float)) else "-"


def outcome(rc):
    return {0: "pass", 124: "timeout", 137: "timeout"}.get(rc, "fail (exit %d)" % rc)


def main():
    out, ngpu, seconds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    steps = []
    for line in read(os.path.join(out, "steps.tsv")).splitlines():
        f = line.split("\t")
        if len(f) < 6:
            continue
        s = {"step": f[0], "backend": f[1], "device": f[2], "rc": int(f[3]),
             "seconds": int(f[4]), "log": f[5]}
        s["outcome"] = outcome(s["rc"])
        text = read(os.path.join(out, s["log"]))
        s["counts"] = counts(text)
        if "No suitable tests defined" in text and s["rc"] == 0:
            s["rc"], s["outcome"] = 1, "fail (no such test)"
        if s["step"].startswith(("bench-", "tune-")):
            try:
                s["json"] = json.loads(text)
            except ValueError:
                s["json"] = None
        s["unsupported"] = unsupported(s, text)
        if only_unsupported(s, text):
            s["rc"], s["outcome"] = 0, "pass (refusals only)"
        steps.append(s)
    try:
        info = json.load(open(os.path.join(out, "sdpa-info.json")))
    except (OSError, ValueError):
        info = {}
    targets = [l.split(None, 3) for l in read(os.path.join(out, "targets.txt")).splitlines()]
    cpu_only = ngpu == 0
    failed = [s for s in steps if s["rc"] != 0]
    refused = [(s["step"], u) for s in steps for u in s["unsupported"]]
    report = {"gpus": ngpu, "cpu_devices_stand_in": cpu_only, "seconds": seconds,
              "unsupported": len(refused),
              "targets": [{"backend": t[0], "index": int(t[1]), "gpu": t[2] == "1",
                           "name": t[3] if len(t) > 3 else ""} for t in targets],
              "steps": steps, "sdpa_info": info, "failed_steps": len(failed)}
    with open(os.path.join(out, "report.json"), "w") as f:
        json.dump(report, f, indent=1)

    md = ["# libsdpa device check", ""]
    md.append("Version %s; %d s in all. " % (info.get("version", "?"), seconds) +
              ("**No GPU found: the CPU devices of the OpenCL and Vulkan backends (PoCL, "
               "lavapipe) stood in as devices.**" if cpu_only else "%d GPU device(s)." % ngpu))
    if read(os.path.join(out, "suites.txt")).strip() == "0":
        md.append("Parity suites not run (`--no-suites`, or CPU stand-ins without `--suites`: "
                  "there they are CI's own `meson test`).")
    md += ["", "## Devices", ""]
    for b in info.get("backends", []):
        for d in b.get("devices", []):
            md.append("- %s %d: %s (%s, %s) %s" % (b["name"], d["index"], d["name"],
                                                  d.get("type", "?"), d.get("driver", ""),
                                                  "**checked**" if any(
                                                      t[0] == b["name"] and t[1] == str(d["index"])
                                                      for t in targets) else ""))
    md += ["", "## Steps", "",
           "| step | outcome | passed | failed | skipped | unsupported | s | log |",
           "|---|---|---|---|---|---|---|---|"]
    for s in steps:
        c = s["counts"] or {}
        md.append("| %s | %s | %s | %s | %s | %s | %d | %s |" % (
            s["step"], s["outcome"] + (" (counts so far)" if c.get("partial") else ""),
            c.get("passed", ""), c.get("failed", ""), c.get("skipped", ""),
            len(s["unsupported"]) or "", s["seconds"], s["log"]))
    md += ["", "## Unsupported (refused with SDPA_ERR_UNSUPPORTED; not failures)", ""]
    md += ["- %s: %s" % r for r in refused] or ["None."]
    md += ["", "## Benchmarks (median, % of the device's measured FMA peak)", "",
           "| backend | device | op | shape | dtype | ms | GFLOP/s | % peak |",
           "|---|---|---|---|---|---|---|---|"]
    for s in steps:
        for r in ((s.get("json") or {}).get("results", []) if s["step"].startswith("bench-") else []):
            frac = r.get("peak_frac")
            md.append("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
                r.get("backend"), r.get("device"), r.get("op"), r.get("shape"), r.get("dtype"),
                "%.3f" % r["median_ms"] if r.get("median_ms") is not None else r.get("status"),
                "%.1f" % r["gflops"] if r.get("gflops") is not None else "",
                "%.1f" % (100 * frac) if frac is not None else ""))
    md += ["", "## Tuning (short budget)", ""]
    for s in steps:
        if not s["step"].startswith("tune-"):
            continue
        md.append("- %s: %s; output in %s" % (s["step"], s["outcome"], s["log"]))
        for b in (s.get("json") or {}).get("buckets", []):
            md.append("  - %s (%s): default %s %s ms, tuned %s %s ms, %s of %s candidates "
                      "measured" % (b.get("shape"), b.get("status"), b.get("default"),
                                    fmt_ms(b.get("default_ms")), b.get("tuned"),
                                    fmt_ms(b.get("tuned_ms")), b.get("measured"),
                                    b.get("candidates")))
    if failed:
        md += ["", "## Failed or timed out", ""]
        for s in failed:
            tail = (read(os.path.join(out, s["log"])) + read(
                os.path.join(out, s["log"][:-4] + ".err"))).strip().splitlines()[-8:]
            md += ["### %s (%s)" % (s["step"], s["outcome"]), "", "```"] + tail + ["```", ""]
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    print("device-check: %d steps, %d failed or timed out, %d unsupported case(s) "
          "(not failures)" % (len(steps), len(failed), len(refused)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
