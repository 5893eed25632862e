#!/usr/bin/env python3
"""gpu_static_test.py — checks of the static GPU gate that need no vendor
compiler (meson suite `tools`; docs/gpu.md).

  gpu_static_test.py SDPA_GPU_CONFIG SOURCE_ROOT

1. sdpa-gpu-config list: the configurations the library's own code chooses
   for the described devices (GPU-style staged tiles on devices with
   dedicated local memory; the block forward on the Mali-like device too,
   whose local memory is system memory (mobile-gpu in the vendor table); decode_gpu.cl with DRB/DWG/DGK for decode; bwd.cl + bwd_fa2.cl with
   NORM for backward; the assembled source starts with prelude.cl; Vulkan specialization constants carry D, Dv and the
   work-group size).
2. gpu_static.py: its parsers on compiler output captured from ptxas, clang
   amdgcn and ocloc, its load/FMA counting, and the baseline comparison
   (margins: registers +8, any spill/scratch increase, loads/FMA +10 %).
Prints 'N passed, N failed'; exit 1 on a failure.
"""
import json
import os
import subprocess
import sys
import tempfile

passed = failed = 0


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAIL: " + what)


def main():
    tool, root = sys.argv[1], sys.argv[2]
    sys.path.insert(0, os.path.join(root, "tools", "internal"))
    import gpu_static as g

    # 1. the library's choices for described devices
    with tempfile.TemporaryDirectory() as work:
        p = subprocess.run([tool, "list", work], capture_output=True, text=True, timeout=120)
        check(p.returncode == 0, "sdpa-gpu-config list exits 0 (%s)" % p.stderr.strip())
        jobs = json.loads(p.stdout) if p.returncode == 0 else []
        by = {j["id"]: j for j in jobs}
        cl = [j for j in jobs if j["api"] == "opencl"]
        if cl:
            check(len(cl) == 8 * 3 * 3 * 2 + 2 * 2 * 3 * 2,
                  "OpenCL jobs: 8 devices x 3 kinds x 3 D x 2 dtypes, and the subgroup "
                  "kinds forward-sg / decode-sg for the 2 Intel (ocloc) devices")
            for i in ("cl-intel-tgllp-forward-sg-d128-f32", "cl-intel-dg2-decode-sg-d64-f16"):
                o = by.get(i, {}).get("options", "").split()
                check("-DSDPA_SUBGROUPS=1" in o and "-DSDPA_SUBGROUPS_REQUIRED=1" in o,
                      "%s: the subgroup form, required: %s" % (i, o))
            check(not any("SUBGROUPS" in j.get("options", "") for j in cl
                          if not j["kind"].endswith("-sg")) and
                  "cl-nv-sm89-forward-sg-d128-f32" not in by,
                  "plain OpenCL rows are the local-memory form; no subgroup rows for nvptx")
            nv = by.get("cl-nv-sm89-forward-d128-f32", {})
            opts = nv.get("options", "").split()
            # the GPU-class block forward (fwd_block.cl, docs/opencl.md)
            for o in ("-DHD=128", "-DWG=128", "-DFWD_BLOCK=1", "-DSTORE_DT=1"):
                check(o in opts, "nv-sm89 forward D=128 options have %s: %s" % (o, opts))
            check(nv.get("files") == ["pack.cl", "stats.cl", "fwd.cl", "fwd_block.cl", "combine.cl"],
                  "forward program files: %s" % nv.get("files"))
            src = open(nv["source"]).read() if nv.get("source") else ""
            order = [src.find("/* ---- %s ----" % f) for f in ("sdpa_shared.h", "prelude.cl", "fwd.cl")]
            check(src.lstrip().startswith("/* ---- sdpa_shared.h ----") and
                  -1 not in order and order == sorted(order) and "QUIRK" not in src,
                  "assembled source: sdpa_shared.h, prelude.cl, then fwd.cl; no quirk defines")
            mali = by.get("cl-mali-forward-d128-f32", {})
            mopts = mali.get("options", "").split()
            check(mali.get("kernel_class") == "mobile-gpu" and "-DFWD_BLOCK=1" in mopts,
                  "Mali-like (local memory in system memory): mobile-gpu through the vendor "
                  "table, the GPU-class block forward: %s %s" % (mali.get("kernel_class"), mopts))
            mdec = by.get("cl-mali-decode-d128-f32", {}).get("options", "").split()
            check("-DDWG=64" in mdec and "-DSTAGE_KV=0" in mdec,
                  "Mali-like decode: GPU-style work-group of 64, K/V unstaged (the vendor "
                  "table's Mali row): %s" % mdec)
            check(nv.get("kernel_class") == "gpu-style" and nv.get("arch_key") == "sm_89",
                  "nv-sm89 resolves to gpu-style sm_89 in the vendor table")
            dec = by.get("cl-amd-gfx1030-decode-d64-f16", {})
            check("decode_gpu.cl" in dec.get("files", []) and "-DDRB=" in dec.get("options", "") and
                  "-DDGK=" in dec.get("options", "") and "-DSTORE_DT=2" in dec.get("options", ""),
                  "decode: the GPU-class decode_gpu.cl, DRB, DGK, f16 storage")
            bwd = by.get("cl-intel-dg2-backward-d256-f32", {})
            check(bwd.get("files", [])[-2:] == ["bwd.cl", "bwd_fa2.cl"] and
                  "-DNORM=0" in bwd.get("options", "") and "-DBWD_FA2=1" in bwd.get("options", "")
                  and "-DHD=256" in bwd.get("options", ""),
                  "backward: bwd.cl (D = rowsum(dO O)) then bwd_fa2.cl, BWD_FA2, D=256")
        vk = [j for j in jobs if j["api"] == "vulkan"]
        if vk:
            f = by.get("vk-amd-gfx1100-forward-d256-f16-fwd", {})
            spec = f.get("spec", [])
            check(len(spec) == 11 and spec[0] == 64 and spec[2] == 256 and spec[3] == 256 and
                  spec[6] == spec[0] and spec[9] == 16 and spec[10] == 0,
                  "Vulkan forward spec constants wg, D, Dv, lanes, KV_TYPE (0: q's): %s" % spec)
            check(f.get("spirv", "").endswith("fwd_fa2h_f16.spv") and
                  os.path.getsize(f["spirv"]) > 0 and "q_regs=f16" in f.get("config", ""),
                  "Vulkan forward SPIR-V written (the GPU-class fwd_fa2, f16 registers: "
                  "fwd_fa2h, on a GPU with shaderFloat16 and shaderDenormPreserveFloat16)")
            check(f.get("vk_family") == "gfx1100", "RADV family of gfx1100")

    # 2. parsers, counting, baseline comparison
    ptxas = """ptxas info    : Compiling entry function 'sdpa_fwd' for 'sm_89'
ptxas info    : Function properties for sdpa_fwd
    368 bytes stack frame, 924 bytes spill stores, 924 bytes spill loads
ptxas info    : Used 255 registers, used 1 barriers, 368 bytes cumulative stack size
"""
    check(g.parse_ptxas(ptxas) == {"sdpa_fwd": {"regs": 255, "stack": 368, "spill": 1848}},
          "parse_ptxas")
    amd = """f.cl:455:1: remark: Function Name: sdpa_fwd [-Rpass-analysis=kernel-resource-usage]
f.cl:455:1: remark:     VGPRs: 210 [-Rpass-analysis=kernel-resource-usage]
f.cl:455:1: remark:     ScratchSize [bytes/lane]: 36 [-Rpass-analysis=kernel-resource-usage]
f.cl:455:1: remark:     Occupancy [waves/SIMD]: 4 [-Rpass-analysis=kernel-resource-usage]
"""
    r = g.parse_amd_remarks(amd).get("sdpa_fwd", {})
    check(r.get("VGPRs") == "210" and r.get("ScratchSize [bytes/lane]") == "36" and
          r.get("Occupancy [waves/SIMD]") == "4", "parse_amd_remarks: %s" % r)
    oc = "warning: kernel sdpa_fwd  compiled SIMD8 allocated 128 regs and spilled around 371\n"
    check(g.parse_ocloc_spills(oc) == {"sdpa_fwd": (8, 128, 371)}, "parse_ocloc_spills")
    ptx = [".visible .entry sdpa_fwd(", "\tld.param.u64 %rd1, [p];", "\tld.global.f32 %f1, [%rd1];",
           "\t@%p1 ld.shared.v4.f32 {%f2,%f3,%f4,%f5}, [%rd2];", "\tfma.rn.f32 %f6, %f1, %f2, %f6;",
           "\tmad.lo.s32 %r1, %r2, %r3, %r4;", "\tld.const.f32 %f9, [T];", "}"]
    body = g.ptx_bodies("\n".join(ptx)).get("sdpa_fwd", [])
    check(g.count(body, g.PTX_LOAD, g.PTX_FMA) == (2, 1),
          "PTX: global and shared loads count, param/const loads and integer mad do not")
    isa = ["\tbuffer_load_dword v1, v2, s[0:3], 0 offen", "\tds_read_b128 v[4:7], v3",
           "\ts_buffer_load_dword s0, s[8:11], 0x30", "\tv_fmac_f32_e32 v8, v1, v4",
           "\tv_mad_u64_u32 v[0:1], s[0:1], v2, v3, 0", "\tv_mul_f32_e32 v9, v1, v4"]
    check(g.count(isa, g.AMD_LOAD, g.AMD_FMA) == (2, 1),
          "AMD ISA: vector/LDS loads and v_fmac count; scalar loads and integer mad do not")
    base = [{"api": "opencl", "kind": "forward", "kernel": "sdpa_fwd", "device": "x", "d": 128,
             "dtype": "f32", "registers": 200, "spill_bytes": 0, "scratch_bytes": 48,
             "loads_per_fma": 0.8}]

    def row(**kw):
        r = dict(base[0], status="ok")
        r.update(kw)
        return r
    check(g.regressions([row(registers=208, loads_per_fma=0.88)], base) == [],
          "within margins: registers +8, loads/FMA +10 %")
    check(len(g.regressions([row(registers=209)], base)) == 1, "registers +9 is a regression")
    check(len(g.regressions([row(spill_bytes=4)], base)) == 1, "any new spill is a regression")
    check(len(g.regressions([row(scratch_bytes=52)], base)) == 1, "more scratch is a regression")
    check(len(g.regressions([row(loads_per_fma=0.89)], base)) == 1,
          "loads/FMA above +10 % is a regression")
    check(len(g.regressions([row(registers=300, status="ptxas failed")], base)) == 1,
          "a baseline row that could not be measured counts against the gate")
    check(g.regressions([row(device="new", registers=300)], base) == [],
          "rows without a baseline row are not compared")
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
