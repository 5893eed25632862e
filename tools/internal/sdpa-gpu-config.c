/*
 * sdpa-gpu-config.c — the static GPU gate's window into the library's own
 * configuration code (scripts/gpu-static.sh, tools/internal/gpu_static.py).
 *
 * For a fixed set of described GPUs (NVIDIA sm_80/sm_89, AMD gfx1030/gfx1100,
 * Intel Xe-LP/Arc, a Mali-like and an Adreno-like device) it fills the
 * backends' device-property structs (sdpa__cl_props, sdpa__vk_caps; the
 * kernel class through the library's vendor table, src/core/device_table.h,
 * printed per job as kernel_class, vendor_key, arch_key) and asks
 * the same functions the backends use at plan creation which configuration,
 * kernel files, build options (OpenCL) and SPIR-V plus specialization
 * constants (Vulkan) they would choose for forward, decode and backward
 * plans at D = 64, 128, 256 in f32 and f16 (and, for the ocloc devices, the
 * OpenCL subgroup forms: cl_sg_kinds). Nothing here chooses a tile: the
 * gate cannot drift from the library.
 *
 *   sdpa-gpu-config list OUTDIR
 *       writes each job's assembled OpenCL source (OUTDIR/cl/ *.cl) and SPIR-V
 *       (OUTDIR/vk/ *.spv), prints the jobs as one JSON array on stdout.
 *   sdpa-gpu-config vk-stats DEVICE OUTDIR
 *       creates DEVICE's Vulkan pipelines on the first Vulkan device the
 *       loader offers (the gate points it at RADV's null device with
 *       RADV_FORCE_FAMILY) with VK_KHR_pipeline_executable_properties, prints
 *       one JSON object per pipeline (statistics by name) and writes the
 *       driver's disassembly to OUTDIR/vk/<job>.<pipeline>.txt.
 *
 * Internal tool: links the static library and its private headers; built
 * only with -Dtests (tools/internal/meson.build), never installed.
 */
#include "internal.h"
#include "fileio.h"
#ifdef SDPA_HAVE_OPENCL
#include "cl_internal.h"
#endif
#ifdef SDPA_HAVE_VULKAN
#include "vk_internal.h"
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One described device: what its OpenCL driver and Vulkan driver report,
 * and the offline compiler that stands in for it in the gate. */
typedef struct gpu_desc {
    const char *name;      /* device label in the gate's rows */
    const char *what;      /* human description */
    const char *compiler;  /* nvptx | amdgcn | ocloc | none */
    const char *arch;      /* ptxas -arch / -mcpu / ocloc -device */
    const char *vk_family; /* RADV_FORCE_FAMILY, or NULL: no Vulkan statistics */
    const char *vendor;
    uint32_t vendor_id;    /* PCI vendor id (Vulkan's vendorID) */
    int compute_units, max_wg, local_kib, local_is_local, subgroup;
    int vk_max_wg, vk_shared_kib, vk_subgroup;
    /* caps.denorm_widths (SDPA__VK_DENORM_*): what RADV's null device
     * reports for the AMD families (shaderDenormPreserveFloat16 and 64, the
     * two set together); 0 (not known here) for the others */
    unsigned vk_denorm_widths;
} gpu_desc;

static const gpu_desc devices[] = {
    {"nv-sm80", "NVIDIA A100 (sm_80)", "nvptx", "sm_80", NULL, "NVIDIA Corporation",
     0x10de, 108, 1024, 48, 1, 32, 1024, 48, 32, 0},
    {"nv-sm89", "NVIDIA RTX 4090 (sm_89)", "nvptx", "sm_89", NULL, "NVIDIA Corporation",
     0x10de, 128, 1024, 48, 1, 32, 1024, 48, 32, 0},
    {"amd-gfx1030", "AMD RX 6800 XT (gfx1030, RDNA2)", "amdgcn", "gfx1030", "navi21",
     "Advanced Micro Devices, Inc.", 0x1002, 36, 256, 64, 1, 32, 1024, 64, 64,
     SDPA__VK_DENORM_16 | SDPA__VK_DENORM_64},
    {"amd-gfx1100", "AMD RX 7900 XTX (gfx1100, RDNA3)", "amdgcn", "gfx1100", "gfx1100",
     "Advanced Micro Devices, Inc.", 0x1002, 48, 256, 64, 1, 32, 1024, 64, 64,
     SDPA__VK_DENORM_16 | SDPA__VK_DENORM_64},
    {"intel-tgllp", "Intel Xe-LP (Tiger Lake, 96 EU)", "ocloc", "tgllp", NULL,
     "Intel(R) Corporation", 0x8086, 96, 512, 64, 1, 16, 1024, 64, 16, 0},
    {"intel-dg2", "Intel Arc A770 (DG2/ACM-G10)", "ocloc", "acm-g10", NULL,
     "Intel(R) Corporation", 0x8086, 512, 1024, 64, 1, 16, 1024, 64, 16, 0},
    {"mali", "Mali-like (Valhall: local memory in system memory)", "none", "", NULL, "ARM",
     0x13b5, 16, 1024, 32, 0, 16, 1024, 32, 16, 0},
    {"adreno", "Adreno-like (7xx)", "none", "", NULL, "QUALCOMM", 0x5143, 6, 1024, 32, 1, 64, 1024,
     32, 64, 0},
};
#define NDEV (int)(sizeof devices / sizeof devices[0])

typedef struct job_kind {
    const char *name;            /* forward | decode | backward */
    int64_t B, Hq, Hkv, Sq, Skv;
    unsigned flags;
    const char *cl_kernels;      /* kernels the gate reports, comma-separated */
    const char *vk_pipelines;    /* pipelines the gate reports; NULL: none */
} job_kind;

static const job_kind kinds[] = {
    {"forward", 1, 16, 16, 2048, 2048, 0, "sdpa_fwd", "fwd"},
    {"decode", 1, 32, 8, 1, 4096, 0, "sdpa_decode", "fwd,combine"},
    {"backward", 1, 16, 16, 2048, 2048, SDPA_PLAN_BACKWARD, "sdpa_bwd_dq,sdpa_bwd_dkdv",
     "bwd_dq,bwd_dkv"},
};
static const int head_dims[] = {64, 128, 256};
static const sdpa_dtype dtypes[] = {SDPA_DTYPE_F32, SDPA_DTYPE_F16};

static sdpa__problem make_problem(const job_kind *k, int d, sdpa_dtype dt)
{
    sdpa__problem p;
    memset(&p, 0, sizeof p);
    p.B = k->B;
    p.Hq = k->Hq;
    p.Hkv = k->Hkv;
    p.Sq = k->Sq;
    p.Skv = k->Skv;
    p.D = p.Dv = d;
    p.dtype = p.kv_dtype = dt; /* K/V in q's dtype, as validation sets it */
    p.scale = 1.0;
    p.window_left = p.window_right = -1;
    p.has_lse = (k->flags & SDPA_PLAN_BACKWARD) != 0;
    return p;
}

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') fprintf(f, "\\%c", *s);
        else if ((unsigned char)*s < 0x20) fprintf(f, "\\u%04x", *s);
        else fputc(*s, f);
    }
    fputc('"', f);
}

/* The library's file helpers (src/core/fileio.h): atomic writes, mkdir -p. */
static int write_file(const char *path, const void *data, size_t n)
{
    return sdpa__file_write_atomic(path, data, n, 0644, 0, NULL) == SDPA__FILE_OK ? 0 : -1;
}

static int make_dir(const char *path)
{
    return sdpa__dir_make(path, 0755, NULL) == SDPA__FILE_OK ? 0 : -1;
}

/* Prints the fields every job has; the caller closes the object. */
/* dd: the device's entry in the library's vendor defaults table
 * (src/core/device_table.h), printed so the gate shows the kernel class. */
static void job_head(FILE *f, bool *first, const char *api, const gpu_desc *g,
                     const sdpa__device_defaults *dd, const job_kind *k, int d, sdpa_dtype dt,
                     const char *id)
{
    fprintf(f, "%s\n  {\"id\": ", *first ? "" : ",");
    *first = false;
    json_str(f, id);
    fprintf(f, ", \"api\": \"%s\", \"device\": \"%s\", \"device_desc\": ", api, g->name);
    json_str(f, g->what);
    fprintf(f, ", \"compiler\": \"%s\", \"arch\": \"%s\", \"kind\": \"%s\", \"d\": %d, "
            "\"dtype\": \"%s\"", g->compiler, g->arch, k->name, d, sdpa_dtype_name(dt));
    fprintf(f, ", \"kernel_class\": \"%s\", \"vendor_key\": \"%s\", \"arch_key\": \"%s\"",
            sdpa__kclass_name(dd->kclass), dd->vendor, dd->arch);
}

#ifdef SDPA_HAVE_OPENCL
static void cl_props_of(const gpu_desc *g, sdpa__cl_props *d)
{
    memset(d, 0, sizeof *d);
    snprintf(d->platform_name, sizeof d->platform_name, "described");
    snprintf(d->device_name, sizeof d->device_name, "%s", g->what);
    snprintf(d->vendor, sizeof d->vendor, "%s", g->vendor);
    snprintf(d->device_version, sizeof d->device_version, "OpenCL 3.0");
    d->is_gpu = 1;
    d->compute_units = g->compute_units;
    d->max_wg = (size_t)g->max_wg;
    d->local_mem = (cl_ulong)g->local_kib * 1024;
    d->local_mem_is_local = g->local_is_local;
    d->global_mem = (cl_ulong)16 << 30;
    d->max_alloc = (cl_ulong)4 << 30;
    d->fp16 = 1;
    d->subgroups = 0; /* the subgroup kinds below set it */
    d->pref_vec_float = 1;
    d->subgroup_size = g->subgroup;
}

/* The OpenCL subgroup variants (issue 17): forward and decode as a device
 * listing cl_khr_subgroups builds them (-DSDPA_SUBGROUPS=1, prelude.cl),
 * with -DSDPA_SUBGROUPS_REQUIRED=1 so a row cannot pass by compiling the
 * local-memory fallback. Listed only for devices whose gate compiler has
 * subgroup built-ins (ocloc; libclc-15 has none for nvptx and amdgcn). The
 * plain kinds describe devices without the extension: the fallback, which
 * PoCL runs. */
static const job_kind cl_sg_kinds[] = {
    {"forward-sg", 1, 16, 16, 2048, 2048, 0, "sdpa_fwd", NULL},
    {"decode-sg", 1, 32, 8, 1, 4096, 0, "sdpa_decode", NULL},
};

/* Lists one OpenCL job: device g (properties props), kind k, D = d, dtype dt. */
static int list_cl_job(const char *outdir, FILE *f, bool *first, const gpu_desc *g,
                       const sdpa__device_defaults *dd, const sdpa__cl_props *props,
                       const job_kind *k, int d, sdpa_dtype dt)
{
    sdpa__problem p = make_problem(k, d, dt);
    char id[128], path[4096], opts[512];
    snprintf(id, sizeof id, "cl-%s-%s-d%d-%s", g->name, k->name, d, sdpa_dtype_name(dt));
    sdpa__cl_plan pl;
    memset(&pl, 0, sizeof pl);
    if (sdpa__cl_supports(NULL, NULL, &p, k->flags) != SDPA_OK ||
        sdpa__cl_plan_config(props, &p, NULL, k->flags, &pl) != SDPA_OK) {
        job_head(f, first, "opencl", g, dd, k, d, dt, id);
        fprintf(f, ", \"refused\": true}");
        return 0;
    }
    const char *const *files;
    int nfiles = sdpa__cl_plan_files(&pl, &files);
    sdpa__cl_plan_options(&p, &pl, opts, sizeof opts);
    if (props->subgroups) {
        size_t n = strlen(opts);
        snprintf(opts + n, sizeof opts - n, " -DSDPA_SUBGROUPS_REQUIRED=1");
    }
    char *src;
    size_t n;
    if (sdpa__cl_source(NULL, files, nfiles, &src, &n) != SDPA_OK) {
        fprintf(stderr, "sdpa-gpu-config: assembling %s failed\n", id);
        return 1;
    }
    snprintf(path, sizeof path, "%s/cl/%s.cl", outdir, id);
    int w = write_file(path, src, n);
    free(src);
    if (w != 0) {
        fprintf(stderr, "sdpa-gpu-config: cannot write %s\n", path);
        return 1;
    }
    job_head(f, first, "opencl", g, dd, k, d, dt, id);
    fprintf(f, ", \"source\": ");
    json_str(f, path);
    fprintf(f, ", \"options\": ");
    json_str(f, opts);
    fprintf(f, ", \"files\": [");
    for (int i = 0; i < nfiles; i++) {
        fprintf(f, "%s", i ? ", " : "");
        json_str(f, files[i]);
    }
    char cfg[256];
    if (pl.direct_kv)
        snprintf(cfg, sizeof cfg, "direct_kv rows=%d wg=%d vec=%d split=%d", pl.drb, pl.dwg,
                 pl.ov, pl.nsplit);
    else
        snprintf(cfg, sizeof cfg, "wg=%d rpw=%d kt=%d vec=%d stage_kv=%d split=%d", pl.wg,
                 pl.rpw, pl.kt, pl.ov, pl.stage_kv, pl.nsplit);
    fprintf(f, "], \"config\": ");
    json_str(f, cfg);
    fprintf(f, ", \"kernels\": ");
    json_str(f, k->cl_kernels);
    fprintf(f, "}");
    return 0;
}

static int list_opencl(const char *outdir, FILE *f, bool *first)
{
    for (int gi = 0; gi < NDEV; gi++) {
        const gpu_desc *g = &devices[gi];
        sdpa__cl_props props;
        cl_props_of(g, &props);
        sdpa__device_defaults dd;
        sdpa__cl_device_defaults(&props, &dd);
        for (int sg = 0; sg < 2; sg++) {
            if (sg && strcmp(g->compiler, "ocloc") != 0) continue;
            props.subgroups = sg;
            const job_kind *ks = sg ? cl_sg_kinds : kinds;
            size_t nk = sg ? sizeof cl_sg_kinds / sizeof cl_sg_kinds[0]
                           : sizeof kinds / sizeof kinds[0];
            for (size_t ki = 0; ki < nk; ki++)
                for (size_t di = 0; di < sizeof head_dims / sizeof head_dims[0]; di++)
                    for (size_t ti = 0; ti < sizeof dtypes / sizeof dtypes[0]; ti++)
                        if (list_cl_job(outdir, f, first, g, &dd, &props, &ks[ki],
                                        head_dims[di], dtypes[ti]))
                            return 1;
        }
    }
    return 0;
}
#endif

#ifdef SDPA_HAVE_VULKAN
static void vk_caps_of(const gpu_desc *g, sdpa__vk_caps *c)
{
    memset(c, 0, sizeof *c);
    c->api_version = VK_API_VERSION_1_3;
    c->subgroup_size = (uint32_t)g->vk_subgroup;
    c->max_shared = (uint32_t)g->vk_shared_kib * 1024;
    c->max_wg = (uint32_t)g->vk_max_wg;
    c->max_groups[0] = c->max_groups[1] = c->max_groups[2] = 65535;
    c->max_storage_range = (uint64_t)4 << 30;
    c->storage16 = c->fp16 = true;
    c->denorm_widths = g->vk_denorm_widths;
    c->loop_limited = false;
    /* the kernel class through the library's vendor table, as sdpa__vk_probe does */
    VkPhysicalDeviceProperties pr;
    memset(&pr, 0, sizeof pr);
    pr.vendorID = g->vendor_id;
    pr.deviceType = VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU;
    snprintf(pr.deviceName, sizeof pr.deviceName, "%s", g->what);
    sdpa__vk_device_defaults(&pr, 0, &c->dev);
    c->device_type = VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU;
    c->subgroup_ops = VK_SUBGROUP_FEATURE_BASIC_BIT | VK_SUBGROUP_FEATURE_SHUFFLE_BIT |
                      VK_SUBGROUP_FEATURE_ARITHMETIC_BIT;
}

/* Calls fn for every Vulkan pipeline the gate reports on device g. */
typedef int (*vk_job_fn)(void *user, const gpu_desc *g, const job_kind *k, int d,
                         sdpa_dtype dt, const sdpa__vk_plan *pl, const char *pipe);

static int each_vk_job(const gpu_desc *g, vk_job_fn fn, void *user)
{
    sdpa__vk_caps caps;
    vk_caps_of(g, &caps);
    for (size_t ki = 0; ki < sizeof kinds / sizeof kinds[0]; ki++) {
        const job_kind *k = &kinds[ki];
        if (!k->vk_pipelines) continue;
        for (size_t di = 0; di < sizeof head_dims / sizeof head_dims[0]; di++)
            for (size_t ti = 0; ti < sizeof dtypes / sizeof dtypes[0]; ti++) {
                sdpa__problem p = make_problem(k, head_dims[di], dtypes[ti]);
                sdpa_plan_options o;
                sdpa_plan_options_init(&o);
                o.flags = k->flags;
                sdpa__vk_plan pl;
                memset(&pl, 0, sizeof pl);
                if (sdpa__vk_plan_config(NULL, &caps, &p, &o, &pl) != SDPA_OK) continue;
                char names[128];
                snprintf(names, sizeof names, "%s", k->vk_pipelines);
                sdpa__vk_plan bv; /* the backward's pipelines: its own configuration */
                sdpa__vk_bwd_view(&pl, &bv);
                for (char *save = NULL, *t = strtok_r(names, ",", &save); t;
                     t = strtok_r(NULL, ",", &save)) {
                    const sdpa__vk_plan *v = strncmp(t, "bwd_", 4) == 0 ? &bv : &pl;
                    int r = fn(user, g, k, head_dims[di], dtypes[ti], v, t);
                    if (r) return r;
                }
            }
    }
    return 0;
}

typedef struct list_ctx {
    const char *outdir;
    FILE *f;
    bool *first;
} list_ctx;

static int list_vk_one(void *user, const gpu_desc *g, const job_kind *k, int d,
                       sdpa_dtype dt, const sdpa__vk_plan *pl, const char *pipe)
{
    list_ctx *lc = user;
    char file[64], id[160], path[4096];
    size_t size;
    const uint32_t *code = sdpa__vk_spirv_embedded(pipe, dt, pl, file, sizeof file, &size);
    if (!code) {
        fprintf(stderr, "sdpa-gpu-config: %s not embedded\n", file);
        return 1;
    }
    snprintf(path, sizeof path, "%s/vk/%s", lc->outdir, file);
    if (write_file(path, code, size) != 0) {
        fprintf(stderr, "sdpa-gpu-config: cannot write %s\n", path);
        return 1;
    }
    uint32_t spec[SDPA__VK_MAX_SPEC];
    sdpa__vk_spec_constants(pl, spec);
    snprintf(id, sizeof id, "vk-%s-%s-d%d-%s-%s", g->name, k->name, d, sdpa_dtype_name(dt),
             pipe);
    sdpa__vk_caps caps;
    vk_caps_of(g, &caps);
    job_head(lc->f, lc->first, "vulkan", g, &caps.dev, k, d, dt, id);
    fprintf(lc->f, ", \"vk_family\": \"%s\", \"pipeline\": \"%s\", \"spirv\": ",
            g->vk_family ? g->vk_family : "", pipe);
    json_str(lc->f, path);
    fprintf(lc->f, ", \"spec\": [");
    for (int i = 0; i < SDPA__VK_MAX_SPEC; i++) fprintf(lc->f, "%s%u", i ? ", " : "", spec[i]);
    fprintf(lc->f, "], \"config\": \"wg=%d k_tile=%d rows=%d stage_kv=%d split=%d "
            "flags=0x%x%s\"}", pl->wg_size, pl->k_tile, pl->rows, pl->stage_kv, pl->nsplit,
            pl->spec_flags, pl->fa2_f16 && strcmp(pipe, "fwd") == 0 ? " q_regs=f16" : "");
    return 0;
}

/* ---- vk-stats: pipelines on a real (or null) driver ---- */
typedef struct stats_ctx {
    const char *outdir;
    sdpa__vk_state s;
    PFN_vkGetPipelineExecutablePropertiesKHR props;
    PFN_vkGetPipelineExecutableStatisticsKHR stats;
    PFN_vkGetPipelineExecutableInternalRepresentationsKHR reprs;
    bool first;
} stats_ctx;

static void stat_value(FILE *f, const VkPipelineExecutableStatisticKHR *st)
{
    switch (st->format) {
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR:
        fprintf(f, "%u", (unsigned)st->value.b32);
        break;
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR:
        fprintf(f, "%lld", (long long)st->value.i64);
        break;
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR:
        fprintf(f, "%llu", (unsigned long long)st->value.u64);
        break;
    default:
        fprintf(f, "%g", st->value.f64);
        break;
    }
}

/* Writes every internal representation of executable e to path. */
static void write_reprs(stats_ctx *sc, VkPipelineExecutableInfoKHR *e, const char *path)
{
    uint32_t n = 0;
    if (sc->reprs(sc->s.device, e, &n, NULL) != VK_SUCCESS || n == 0) return;
    VkPipelineExecutableInternalRepresentationKHR *r = calloc(n, sizeof *r);
    if (!r) return;
    for (uint32_t i = 0; i < n; i++)
        r[i].sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INTERNAL_REPRESENTATION_KHR;
    if (sc->reprs(sc->s.device, e, &n, r) == VK_SUCCESS || n > 0) {
        for (uint32_t i = 0; i < n; i++) r[i].pData = calloc(1, r[i].dataSize + 1);
        sc->reprs(sc->s.device, e, &n, r);
        FILE *f = fopen(path, "w");
        for (uint32_t i = 0; f && i < n; i++)
            fprintf(f, "==== %s: %s\n%s\n", r[i].name, r[i].description,
                    r[i].pData ? (const char *)r[i].pData : "");
        if (f) fclose(f);
        for (uint32_t i = 0; i < n; i++) free(r[i].pData);
    }
    free(r);
}

static int stats_one(void *user, const gpu_desc *g, const job_kind *k, int d, sdpa_dtype dt,
                     const sdpa__vk_plan *pl, const char *pipe)
{
    stats_ctx *sc = user;
    char file[64], id[160], path[4096];
    size_t size;
    const uint32_t *code = sdpa__vk_spirv_embedded(pipe, dt, pl, file, sizeof file, &size);
    uint32_t spec[SDPA__VK_MAX_SPEC];
    sdpa__vk_spec_constants(pl, spec);
    snprintf(id, sizeof id, "vk-%s-%s-d%d-%s-%s", g->name, k->name, d, sdpa_dtype_name(dt),
             pipe);
    VkPipeline pipeline = VK_NULL_HANDLE;
    sdpa_status st = code ? sdpa__vk_compute_pipeline(NULL, &sc->s, code, size,
                                                      sc->s.pipe_layout, spec,
                                                      SDPA__VK_MAX_SPEC, file, &pipeline)
                          : SDPA_ERR_INTERNAL;
    printf("%s{\"id\": \"%s\", \"ok\": %s", sc->first ? "[\n  " : ",\n  ", id,
           st == SDPA_OK ? "true" : "false");
    sc->first = false;
    if (st == SDPA_OK) {
        VkPipelineInfoKHR pi = {.sType = VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR,
                                .pipeline = pipeline};
        uint32_t ne = 0;
        sc->props(sc->s.device, &pi, &ne, NULL);
        for (uint32_t x = 0; x < ne && x < 1; x++) { /* a compute pipeline: one */
            VkPipelineExecutableInfoKHR e = {
                .sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR,
                .pipeline = pipeline, .executableIndex = x};
            uint32_t ns = 0;
            sc->stats(sc->s.device, &e, &ns, NULL);
            VkPipelineExecutableStatisticKHR *sv = calloc(ns ? ns : 1, sizeof *sv);
            for (uint32_t i = 0; sv && i < ns; i++)
                sv[i].sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR;
            if (sv && sc->stats(sc->s.device, &e, &ns, sv) == VK_SUCCESS) {
                printf(", \"stats\": {");
                for (uint32_t i = 0; i < ns; i++) {
                    printf("%s", i ? ", " : "");
                    json_str(stdout, sv[i].name);
                    printf(": ");
                    stat_value(stdout, &sv[i]);
                }
                printf("}");
            }
            free(sv);
            snprintf(path, sizeof path, "%s/vk/%s.txt", sc->outdir, id);
            write_reprs(sc, &e, path);
            printf(", \"disasm\": ");
            json_str(stdout, path);
        }
        vkDestroyPipeline(sc->s.device, pipeline, NULL);
    }
    printf("}");
    return 0;
}

static int vk_stats(const char *device, const char *outdir)
{
    const gpu_desc *g = NULL;
    for (int i = 0; i < NDEV; i++)
        if (strcmp(devices[i].name, device) == 0) g = &devices[i];
    if (!g) {
        fprintf(stderr, "sdpa-gpu-config: unknown device %s\n", device);
        return 2;
    }
    /* The library opens libvulkan at run time (vk_api.c): fill its table
     * before any vk* call, which goes through it. */
    const char *why = sdpa__vk_api_load();
    if (why) {
        fprintf(stderr, "sdpa-gpu-config: %s\n", why);
        return 1;
    }
    VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
                             .pApplicationName = "sdpa-gpu-config",
                             .apiVersion = VK_API_VERSION_1_1};
    VkInstanceCreateInfo ici = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
                                .pApplicationInfo = &app};
    VkInstance inst;
    VkResult r = vkCreateInstance(&ici, NULL, &inst);
    if (r != VK_SUCCESS) {
        fprintf(stderr, "sdpa-gpu-config: vkCreateInstance failed (%s)\n",
                sdpa__vk_result_name(r));
        return 1;
    }
    uint32_t np = 1;
    VkPhysicalDevice phys = VK_NULL_HANDLE;
    r = vkEnumeratePhysicalDevices(inst, &np, &phys);
    if ((r != VK_SUCCESS && r != VK_INCOMPLETE) || np == 0) {
        fprintf(stderr, "sdpa-gpu-config: no Vulkan device (%s)\n", sdpa__vk_result_name(r));
        vkDestroyInstance(inst, NULL);
        return 1;
    }
    VkPhysicalDeviceProperties pp;
    vkGetPhysicalDeviceProperties(phys, &pp);
    fprintf(stderr, "sdpa-gpu-config: %s on '%s'\n", g->name, pp.deviceName);
    float prio = 1.0f;
    VkDeviceQueueCreateInfo qci = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                   .queueFamilyIndex = 0, .queueCount = 1,
                                   .pQueuePriorities = &prio};
    VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR pef = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR,
        .pipelineExecutableInfo = VK_TRUE};
    VkPhysicalDevice16BitStorageFeatures s16 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES, .pNext = &pef,
        .storageBuffer16BitAccess = VK_TRUE};
    /* the modules request the described device's float controls (as
     * sdpa__vk_compute_pipeline does on it: vk_spirv_patch.c) */
    const char *ext[] = {VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME,
                         VK_KHR_SHADER_FLOAT_CONTROLS_EXTENSION_NAME};
    VkDeviceCreateInfo dci = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, .pNext = &s16,
                              .queueCreateInfoCount = 1, .pQueueCreateInfos = &qci,
                              .enabledExtensionCount = g->vk_denorm_widths ? 2 : 1,
                              .ppEnabledExtensionNames = ext};
    stats_ctx sc;
    memset(&sc, 0, sizeof sc);
    sc.s.caps.denorm_widths = g->vk_denorm_widths;
    sc.outdir = outdir;
    sc.first = true;
    r = vkCreateDevice(phys, &dci, NULL, &sc.s.device);
    if (r != VK_SUCCESS) {
        fprintf(stderr, "sdpa-gpu-config: vkCreateDevice with %s failed (%s)\n", ext[0],
                sdpa__vk_result_name(r));
        vkDestroyInstance(inst, NULL);
        return 1;
    }
    sc.props = (PFN_vkGetPipelineExecutablePropertiesKHR)vkGetDeviceProcAddr(
        sc.s.device, "vkGetPipelineExecutablePropertiesKHR");
    sc.stats = (PFN_vkGetPipelineExecutableStatisticsKHR)vkGetDeviceProcAddr(
        sc.s.device, "vkGetPipelineExecutableStatisticsKHR");
    sc.reprs = (PFN_vkGetPipelineExecutableInternalRepresentationsKHR)vkGetDeviceProcAddr(
        sc.s.device, "vkGetPipelineExecutableInternalRepresentationsKHR");
    sc.s.pipeline_flags = VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR |
                          VK_PIPELINE_CREATE_CAPTURE_INTERNAL_REPRESENTATIONS_BIT_KHR;
    int rc = 1;
    if (sc.props && sc.stats && sc.reprs &&
        sdpa__vk_layouts_create(NULL, &sc.s) == SDPA_OK) {
        rc = each_vk_job(g, stats_one, &sc);
        printf("%s\n", sc.first ? "[]" : "\n]");
    } else {
        fprintf(stderr, "sdpa-gpu-config: pipeline statistics unavailable\n");
    }
    sdpa__vk_layouts_destroy(&sc.s);
    vkDestroyDevice(sc.s.device, NULL);
    vkDestroyInstance(inst, NULL);
    return rc;
}
#endif

static int list(const char *outdir)
{
    char sub[4096];
    int rc = make_dir(outdir);
    snprintf(sub, sizeof sub, "%s/cl", outdir);
    rc |= make_dir(sub);
    snprintf(sub, sizeof sub, "%s/vk", outdir);
    rc |= make_dir(sub);
    if (rc) {
        fprintf(stderr, "sdpa-gpu-config: cannot create %s\n", outdir);
        return 1;
    }
    bool first = true;
    printf("[");
#ifdef SDPA_HAVE_OPENCL
    if (list_opencl(outdir, stdout, &first)) return 1;
#endif
#ifdef SDPA_HAVE_VULKAN
    for (int gi = 0; gi < NDEV; gi++) {
        list_ctx lc = {outdir, stdout, &first};
        if (each_vk_job(&devices[gi], list_vk_one, &lc)) return 1;
    }
#endif
    printf("\n]\n");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "list") == 0) return list(argv[2]);
#ifdef SDPA_HAVE_VULKAN
    if (argc == 4 && strcmp(argv[1], "vk-stats") == 0) return vk_stats(argv[2], argv[3]);
#endif
    fprintf(stderr, "usage: sdpa-gpu-config list OUTDIR\n"
                    "       sdpa-gpu-config vk-stats DEVICE OUTDIR\n"
                    "(internal tool of scripts/gpu-static.sh; see docs/gpu.md)\n");
    return 2;
}
