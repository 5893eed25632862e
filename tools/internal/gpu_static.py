#!/usr/bin/env python3
"""gpu_static.py — the static GPU gate (scripts/gpu-static.sh runs it).

Asks the library what it would build for a set of described GPUs
(tools/internal/sdpa-gpu-config, which calls the backends' own configuration
code), compiles each OpenCL program and Vulkan pipeline with the vendors'
offline compilers, and reports per kernel and device: registers, spills,
scratch, occupancy where the compiler gives it, and memory loads per FMA
counted in the generated code. Compares against a checked-in baseline.

  NVIDIA  clang-15 -target nvptx64--nvidiacl (+ libclc) -> PTX -> ptxas -v
  AMD     clang-15 -target amdgcn--amdhsa -mcpu=gfx1030/gfx1100 (+ libclc),
          -Rpass-analysis=kernel-resource-usage
  Intel   ocloc compile -device tgllp / acm-g10, disassembled with IGA
  Vulkan  RADV's null device (RADV_FORCE_FAMILY) through
          VK_KHR_pipeline_executable_properties (sdpa-gpu-config vk-stats)

Counting (docs/gpu.md): loads are memory-read instructions of any memory
(global, shared/LDS, local/private/scratch; not kernel parameters or
constants); FMAs are fused multiply-adds (and dot-product instructions).
The ratio is static: every instruction in the kernel counts once.
"""
import argparse
import concurrent.futures as cf
import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

LIBCLC = "/usr/lib/clc"
MARGIN_REGS = 8           # registers may grow by this much
MARGIN_LPF = 0.10         # loads per FMA may grow by 10 %


def run(cmd, timeout, env=None, cwd=None):
    t0 = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env,
                           cwd=cwd)
        return p.returncode, p.stdout, p.stderr, time.time() - t0
    except subprocess.TimeoutExpired:
        return 124, "", "timed out after %d s: %s" % (timeout, " ".join(cmd[:3])), timeout
    except OSError as e:
        return 127, "", str(e), 0.0


def find_tool(names, extra=()):
    for n in names:
        p = shutil.which(n)
        if p:
            return p
    for p in extra:
        if os.path.exists(p):
            return p
    return None


def find_ptxas():
    """PyPI's nvidia-cuda-nvcc-cu12 first (what install-deps.sh --gpu-static
    installs into SDPA_GPU_STATIC_VENV), then PATH, then /usr/local/cuda."""
    cands = []
    for base in [os.environ.get("SDPA_GPU_STATIC_VENV", ""), sys.prefix]:
        if base:
            cands += glob.glob(os.path.join(base, "lib", "python*", "site-packages",
                                            "nvidia", "cuda_nvcc", "bin", "ptxas"))
    for p in cands:
        if os.access(p, os.X_OK):
            return p
    return find_tool(["ptxas"], ["/usr/local/cuda/bin/ptxas"])


def find_clang():
    return find_tool(["clang-15"])


def iga_dir(work):
    """ocloc loads libiga64.so; Debian ships only libiga64.so.1: a symlink."""
    for lib in ["/usr/lib/x86_64-linux-gnu/libiga64.so.1", "/usr/lib/x86_64-linux-gnu/libiga64.so"]:
        if os.path.exists(lib):
            d = os.path.join(work, "iga")
            os.makedirs(d, exist_ok=True)
            link = os.path.join(d, "libiga64.so")
            if not os.path.exists(link):
                os.symlink(lib, link)
            return d
    return None


# ---------------------------------------------------------------- counting
PTX_LOAD = re.compile(r"^\s*(@!?%p\d+\s+)?ld\.(?!param|const)")
PTX_FMA = re.compile(r"^\s*(@!?%p\d+\s+)?(fma\.|mad\.(rn\.)?f)")
AMD_LOAD = re.compile(r"^\s*(global_load|buffer_load|flat_load|scratch_load|ds_read|ds_load)")
AMD_FMA = re.compile(r"^\s*(v_fma|v_fmac|v_mac_f|v_mad_f|v_mad_legacy_f|v_pk_fma|v_dot)")
AMD_SCRATCH = re.compile(r"^\s*(scratch_load|buffer_load\S* .*off(set)?,? *s\[0:3\])")


def count(lines, load_re, fma_re):
    loads = sum(1 for l in lines if load_re.search(l))
    fmas = sum(1 for l in lines if fma_re.search(l))
    return loads, fmas


def wave_size(lines):
    """64 when the AMD ISA handles exec as 64 bits, else 32 (None: no ISA)."""
    if not lines:
        return None
    return 64 if any(re.search(r"_b64\s.*\bexec\b", l) for l in lines) else 32


def ratio(loads, fmas):
    return round(loads / fmas, 3) if fmas else None


def ptx_bodies(ptx):
    """kernel name -> lines of its .entry body."""
    out, name, cur = {}, None, []
    for line in ptx.splitlines():
        m = re.match(r"^\.(visible\s+)?\.entry\s+(\w+)\(", line)
        if m:
            if name:
                out[name] = cur
            name, cur = m.group(2), []
        elif name:
            cur.append(line)
    if name:
        out[name] = cur
    return out


def amd_bodies(asm):
    out, name, cur = {}, None, []
    for line in asm.splitlines():
        m = re.match(r"^(\w+):\s*(;.*)?$", line)
        if m and not line.startswith(".") and m.group(1).startswith("sdpa_"):
            name, cur = m.group(1), []
            continue
        if name and re.match(r"^\.Lfunc_end\d+:", line):
            out[name] = cur
            name = None
        elif name:
            cur.append(line)
    return out


def parse_ptxas(text):
    """ptxas -v output -> {kernel: {regs, spill (stores + loads), stack}}."""
    info, cur = {}, None
    for line in text.splitlines():
        m = re.search(r"Compiling entry function '(\w+)'", line)
        if m:
            cur = m.group(1)
            info[cur] = {}
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads",
                      line)
        if m and cur:
            info[cur].update(stack=int(m.group(1)), spill=int(m.group(2)) + int(m.group(3)))
        m = re.search(r"Used (\d+) registers", line)
        if m and cur:
            info[cur]["regs"] = int(m.group(1))
    return info


def parse_amd_remarks(text):
    """clang -Rpass-analysis=kernel-resource-usage -> {kernel: {field: text}}."""
    info, cur = {}, None
    for line in text.splitlines():
        m = re.search(r"remark:\s+(.*?):\s+(\S+)\s+\[-Rpass-analysis", line)
        if not m:
            continue
        if m.group(1) == "Function Name":
            cur = m.group(2)
            info[cur] = {}
        elif cur:
            info[cur][m.group(1)] = m.group(2)
    return info


def parse_ocloc_spills(text):
    """ocloc's spill warnings -> {kernel: (simd, regs allocated, spill bytes)}."""
    return {m.group(1): (int(m.group(2)), int(m.group(3)), int(m.group(4)))
            for m in re.finditer(r"kernel (\w+)\s+compiled SIMD(\d+) allocated (\d+) regs "
                                 r"and spilled around (\d+)", text)}


# ---------------------------------------------------------------- compilers
class Gate:
    def __init__(self, args, work):
        self.args, self.work = args, work
        self.clang = find_clang()
        self.ptxas = find_ptxas()
        self.ocloc = find_tool(["ocloc"])
        self.iga = iga_dir(work) if self.ocloc else None
        self.notes = []

    def cl_flags(self, job):
        return ["-cl-std=CL1.2", "-x", "cl", "-O3", "-nogpulib", "-include", "clc/clc.h",
                "-Wno-everything"] + job["options"].split()

    def nvptx(self, job, ptx_cache):
        """PTX from clang (cached per source + options), then ptxas -v per arch."""
        if not self.clang or not os.path.exists(os.path.join(LIBCLC, "nvptx64--nvidiacl.bc")):
            return self.missing(job, "clang-15 + libclc-15 (nvptx64--nvidiacl.bc)")
        if not self.ptxas:
            return self.missing(job, "ptxas (pip nvidia-cuda-nvcc-cu12)")
        key = hashlib.sha1((open(job["source"]).read() + job["options"]).encode()).hexdigest()
        ptx_path = os.path.join(self.work, "ptx", key + ".ptx")
        with ptx_cache.setdefault("lock:" + key, threading.Lock()):
            if key not in ptx_cache:
                os.makedirs(os.path.dirname(ptx_path), exist_ok=True)
                ptx_cache[key] = run([self.clang, "-target", "nvptx64--nvidiacl", "-Xclang",
                                      "-mlink-builtin-bitcode", "-Xclang",
                                      os.path.join(LIBCLC, "nvptx64--nvidiacl.bc")] +
                                     self.cl_flags(job) + ["-S", "-o", ptx_path, job["source"]],
                                     self.args.timeout)
        rc, _, err, _ = ptx_cache[key]
        if rc != 0:
            return self.failed(job, "clang nvptx", err)
        rc, out, err, _ = run([self.ptxas, "-v", "-arch=" + job["arch"], "-o", os.devnull, ptx_path],
                              self.args.timeout)
        if rc != 0:
            return self.failed(job, "ptxas", err + out)
        info = parse_ptxas(out + err)
        bodies = ptx_bodies(open(ptx_path).read())
        rows = []
        for k in job["kernels"].split(","):
            i = info.get(k, {})
            loads, fmas = count(bodies.get(k, []), PTX_LOAD, PTX_FMA)
            regs = i.get("regs")
            maxw = 48 if job["arch"] == "sm_89" else 64
            occ = None
            if regs:
                per_warp = ((regs * 32 + 255) // 256) * 256
                occ = min(maxw, 65536 // per_warp)
            rows.append(self.row(job, k, regs, i.get("spill"), i.get("stack"), occ,
                                 "warps/SM (registers)", loads, fmas))
        return rows

    def amdgcn(self, job):
        if not self.clang or not os.path.exists(os.path.join(LIBCLC, "amdgcn--amdhsa.bc")):
            return self.missing(job, "clang-15 + libclc-15 (amdgcn--amdhsa.bc)")
        out_s = os.path.join(self.work, "amd", job["id"] + ".s")
        os.makedirs(os.path.dirname(out_s), exist_ok=True)
        rc, _, err, _ = run([self.clang, "-target", "amdgcn--amdhsa", "-mcpu=" + job["arch"],
                             "-Xclang", "-mlink-builtin-bitcode", "-Xclang",
                             os.path.join(LIBCLC, "amdgcn--amdhsa.bc"),
                             "-Rpass-analysis=kernel-resource-usage"] + self.cl_flags(job) +
                            ["-S", "-o", out_s, job["source"]], self.args.timeout)
        if rc != 0:
            return self.failed(job, "clang amdgcn", err)
        info = parse_amd_remarks(err)
        bodies = amd_bodies(open(out_s).read())
        rows = []
        for k in job["kernels"].split(","):
            i = info.get(k, {})
            loads, fmas = count(bodies.get(k, []), AMD_LOAD, AMD_FMA)
            spill = None
            if "VGPRs Spill" in i:
                spill = (int(i["VGPRs Spill"]) + int(i.get("SGPRs Spill", 0))) * 4
            occ = int(i["Occupancy [waves/SIMD]"]) if "Occupancy [waves/SIMD]" in i else None
            r = self.row(job, k, int(i["VGPRs"]) if "VGPRs" in i else None, spill,
                         int(i["ScratchSize [bytes/lane]"]) if "ScratchSize [bytes/lane]" in i else None,
                         occ, "waves/SIMD", loads, fmas)
            r["sgprs"] = int(i["SGPRs"]) if "SGPRs" in i else None
            rows.append(r)
        return rows

    def ocloc_compile(self, job):
        if not self.ocloc:
            return self.missing(job, "ocloc (Debian intel-opencl-icd)")
        d = os.path.join(self.work, "intel", job["id"])
        os.makedirs(d, exist_ok=True)
        rc, out, err, _ = run([self.ocloc, "compile", "-file", job["source"], "-device",
                               job["arch"], "-options", job["options"], "-output", "k",
                               "-out_dir", d], self.args.timeout)
        if rc != 0:
            return self.failed(job, "ocloc", out + err)
        spills = parse_ocloc_spills(out + err)
        bins = [f for f in os.listdir(d) if f.endswith(".bin")]
        dis = os.path.join(d, "dis")
        env = dict(os.environ)
        if self.iga:
            env["LD_LIBRARY_PATH"] = self.iga + ":" + env.get("LD_LIBRARY_PATH", "")
        if bins:
            run([self.ocloc, "disasm", "-file", os.path.join(d, bins[0]), "-device",
                 job["arch"], "-dump", dis], self.args.timeout, env=env)
        rows = []
        for k in job["kernels"].split(","):
            asm_path = os.path.join(dis, k + "_KernelHeap.asm")
            lines = open(asm_path).read().splitlines() if os.path.exists(asm_path) else []
            loads = sum(1 for l in lines if re.search(r"\bsends?c?\b", l) and
                        re.search(r"//.*\b(read|load)", l))
            fmas = sum(1 for l in lines if re.match(r"^\s*(\(\S+\)\s*)?mad\b", l))
            grf = [int(x) for l in lines for x in re.findall(r"\br(\d+)\.", l)]
            regs = max(grf) + 1 if grf else None
            simd = None
            widths = re.findall(r"\((\d+)\|M\d+\)", "\n".join(lines))
            if widths:
                simd = max(set(widths), key=widths.count)
            sp = spills.get(k)
            if sp:
                simd = str(sp[0])
            spill = sp[2] if sp else (0 if lines else None)
            r = self.row(job, k, regs, spill, spill, None, "", loads if lines else None,
                         fmas if lines else None)
            r["simd"] = int(simd) if simd else None
            if not lines:
                r["status"] = "no disassembly (IGA library libiga64 missing?)"
            rows.append(r)
        return rows

    def vk_device(self, device, vjobs):
        """All Vulkan pipelines of one RADV family in one vk-stats run."""
        fam = vjobs[0]["vk_family"]
        env = dict(os.environ)
        icd = "/usr/share/vulkan/icd.d/radeon_icd.x86_64.json"
        env.update(RADV_FORCE_FAMILY=fam, VK_ICD_FILENAMES=icd, VK_DRIVER_FILES=icd)
        rc, out, err, _ = run([self.args.config_tool, "vk-stats", device, self.work],
                              self.args.timeout * 4, env=env)
        if rc != 0 or not out.strip():
            msg = (err or out).strip().splitlines()[-1:] or ["no output"]
            self.notes.append("vulkan %s (RADV_FORCE_FAMILY=%s): %s" % (device, fam, msg[0]))
            return [dict(self.row(j, j["pipeline"], None, None, None, None, "", None, None),
                         status="RADV null device: " + msg[0]) for j in vjobs]
        got = {o["id"]: o for o in json.loads(out)}
        rows = []
        for j in vjobs:
            o = got.get(j["id"], {})
            s = o.get("stats", {})
            lines = []
            if o.get("disasm") and os.path.exists(o["disasm"]):
                sec = False
                for l in open(o["disasm"]):
                    if l.startswith("===="):
                        sec = l.startswith("==== Assembly")
                    elif sec:
                        lines.append(l)
            loads, fmas = count(lines, AMD_LOAD, AMD_FMA)
            spill = None
            if "Spilled VGPRs" in s:
                spill = (s["Spilled VGPRs"] + s.get("Spilled SGPRs", 0)) * 4
            # RADV's scratch is per subgroup: per lane like clang's figure
            wave = wave_size(lines)
            scratch = s.get("Scratch size")
            if scratch is not None and wave:
                scratch //= wave
            r = self.row(j, j["pipeline"], s.get("VGPRs"), spill, scratch,
                         s.get("Subgroups per SIMD"), "waves/SIMD", loads if lines else None,
                         fmas if lines else None)
            r["sgprs"] = s.get("SGPRs")
            r["code_bytes"] = s.get("Code size")
            r["wave"] = wave
            r["scratch_bytes_per_subgroup"] = s.get("Scratch size")
            if not o.get("ok"):
                r["status"] = "pipeline creation failed"
            rows.append(r)
        return rows

    # -- rows
    def row(self, job, kernel, regs, spill, scratch, occ, occ_unit, loads, fmas):
        return {"api": job["api"], "kernel": kernel, "device": job["device"],
                "kind": job["kind"], "d": job["d"], "dtype": job["dtype"],
                "registers": regs, "spill_bytes": spill, "scratch_bytes": scratch,
                "occupancy": occ, "occupancy_unit": occ_unit, "loads": loads, "fmas": fmas,
                "loads_per_fma": ratio(loads, fmas) if loads is not None else None,
                "config": job.get("config", ""), "options": job.get("options", ""),
                "spec": job.get("spec"), "status": "ok"}

    def missing(self, job, what):
        self.notes.append("missing " + what)
        return [dict(self.row(job, k, None, None, None, None, "", None, None),
                     status="skipped: no " + what) for k in job["kernels"].split(",")]

    def failed(self, job, what, log):
        tail = " ".join(log.strip().splitlines()[-2:])[:300]
        return [dict(self.row(job, k, None, None, None, None, "", None, None),
                     status="%s failed: %s" % (what, tail)) for k in job["kernels"].split(",")]


def key(r):
    return "%s|%s|%s|%s|d%d|%s" % (r["api"], r["kind"], r["kernel"], r["device"], r["d"], r["dtype"])


def regressions(rows, base):
    """Rows worse than the baseline beyond the margins (docs/gpu.md)."""
    old = {key(r): r for r in base}
    out = []
    for r in rows:
        b = old.get(key(r))
        if not b:
            continue
        if r["status"] != "ok":  # the gate must not pass by measuring nothing
            out.append((r, ["not measured: " + r["status"]]))
            continue
        why = []
        if r["registers"] is not None and b.get("registers") is not None and \
                r["registers"] > b["registers"] + MARGIN_REGS:
            why.append("registers %d > %d + %d" % (r["registers"], b["registers"], MARGIN_REGS))
        for f in ("spill_bytes", "scratch_bytes"):
            if r[f] is not None and b.get(f) is not None and r[f] > b[f]:
                why.append("%s %d > %d" % (f, r[f], b[f]))
        if r["loads_per_fma"] is not None and b.get("loads_per_fma") is not None and \
                r["loads_per_fma"] > b["loads_per_fma"] * (1 + MARGIN_LPF) + 1e-9:
            why.append("loads/FMA %.3f > %.3f + 10 %%" % (r["loads_per_fma"], b["loads_per_fma"]))
        if why:
            out.append((r, why))
    return out


def fmt(v, w):
    s = "-" if v is None else (("%.2f" % v) if isinstance(v, float) else str(v))
    return s.rjust(w)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config-tool", required=True)
    ap.add_argument("--json", help="write one object per kernel x device to FILE")
    ap.add_argument("--baseline", required=True)
    ap.add_argument("--update-baseline", action="store_true")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--timeout", type=int, default=300, help="seconds per compiler call")
    ap.add_argument("--devices", default="", help="comma-separated device labels (default all)")
    ap.add_argument("--keep", help="keep sources, PTX, ISA under this folder")
    ap.add_argument("--quick", action="store_true", help="D=128 f32 only (a quick look)")
    args = ap.parse_args()

    work = args.keep or tempfile.mkdtemp(prefix="sdpa-gpu-static.")
    os.makedirs(work, exist_ok=True)
    t0 = time.time()
    rc, out, err, _ = run([args.config_tool, "list", work], 120)
    if rc != 0:
        print("gpu-static: sdpa-gpu-config list failed: " + err, file=sys.stderr)
        return 2
    jobs = json.loads(out)
    want = set(filter(None, args.devices.split(",")))
    if want:
        jobs = [j for j in jobs if j["device"] in want]
    if args.quick:
        jobs = [j for j in jobs if j["d"] == 128 and j["dtype"] == "f32"]
    gate = Gate(args, work)
    rows, config_only, futs = [], [], []
    ptx_cache = {}
    with cf.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as ex:
        vk_by_dev = {}
        for j in jobs:
            if j.get("refused"):
                config_only.append(j)
            elif j["api"] == "vulkan":
                if j.get("vk_family"):
                    vk_by_dev.setdefault(j["device"], []).append(j)
                else:
                    config_only.append(j)
            elif j["compiler"] == "nvptx":
                futs.append(ex.submit(gate.nvptx, j, ptx_cache))
            elif j["compiler"] == "amdgcn":
                futs.append(ex.submit(gate.amdgcn, j))
            elif j["compiler"] == "ocloc":
                futs.append(ex.submit(gate.ocloc_compile, j))
            else:
                config_only.append(j)
        for dev, vj in vk_by_dev.items():
            futs.append(ex.submit(gate.vk_device, dev, vj))
        for f in futs:
            rows += f.result()
    rows.sort(key=lambda r: (r["api"], r["device"], r["kind"], r["kernel"], r["d"], r["dtype"]))

    # table
    hdr = "%-6s %-12s %-14s %4s %-4s %5s %6s %7s %4s %6s %5s %7s  %s" % (
        "api", "device", "kernel", "D", "dt", "regs", "spill", "scratch", "occ", "loads",
        "fmas", "ld/fma", "status")
    print(hdr)
    print("-" * len(hdr))
    for r in rows:
        print("%-6s %-12s %-14s %4d %-4s %s %s %s %s %s %s %s  %s" % (
            r["api"][:6], r["device"], r["kernel"], r["d"], r["dtype"], fmt(r["registers"], 5),
            fmt(r["spill_bytes"], 6), fmt(r["scratch_bytes"], 7), fmt(r["occupancy"], 4),
            fmt(r["loads"], 6), fmt(r["fmas"], 5), fmt(r["loads_per_fma"], 7),
            "" if r["status"] == "ok" else r["status"]))
    if config_only:
        print("\nconfiguration only (no offline compiler or statistics for these devices):")
        seen = set()
        for j in config_only:
            k = (j["api"], j["device"], j["kind"], j.get("config", "refused"))
            if k in seen or j["d"] != 128 or j["dtype"] != "f32":
                continue
            seen.add(k)
            print("  %-6s %-12s %-9s D=128 f32: %s%s" % (
                j["api"], j["device"], j["kind"], j.get("config", "refused"),
                ("  [" + j["options"] + "]") if j.get("options") else
                ("  spec=" + str(j["spec"])) if j.get("spec") else ""))
    for n in sorted(set(gate.notes)):
        print("note: " + n)

    base = []
    if os.path.exists(args.baseline):
        base = json.load(open(args.baseline))
    regs = regressions(rows, base)
    for r, why in regs:
        print("REGRESSION %s: %s" % (key(r), "; ".join(why)))
    if args.json:
        # one object per kernel x device: the measured rows, then the
        # configuration-only ones (no compiler for the device) with null figures
        extra = []
        for j in config_only:
            for k in (j.get("kernels") or j.get("pipeline") or "").split(","):
                r = gate.row(j, k, None, None, None, None, "", None, None)
                r["status"] = "refused by the library" if j.get("refused") else \
                    "configuration only (no offline compiler or statistics)"
                extra.append(r)
        with open(args.json, "w") as f:
            json.dump(rows + extra, f, indent=1)
    if args.update_baseline:
        keep = ("api", "kernel", "device", "kind", "d", "dtype", "registers", "spill_bytes",
                "scratch_bytes", "occupancy", "loads", "fmas", "loads_per_fma", "config")
        ok = [{k: r[k] for k in keep} for r in rows if r["status"] == "ok"]
        with open(args.baseline, "w") as f:  # one row per line: reviewable diffs
            f.write("[\n" + ",\n".join(json.dumps(r) for r in ok) + "\n]\n")
        print("gpu-static: baseline %s rewritten (%d rows)" % (args.baseline, len(ok)))
    bad = sum(1 for r in rows if (r["spill_bytes"] or 0) > 0 or (r["scratch_bytes"] or 0) > 0)
    skipped = sum(1 for r in rows if r["status"] != "ok")
    if skipped:
        print("gpu-static: %d rows not measured (see status)" % skipped)
    print("gpu-static: %.0f s" % (time.time() - t0))
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    print("gpu-static: %d rows, %d with spills or scratch, %d regressions" %
          (len(rows), bad, 0 if args.update_baseline else len(regs)))
    return 1 if regs and not args.update_baseline else 0


if __name__ == "__main__":
    sys.exit(main())
