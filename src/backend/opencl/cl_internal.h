/*
 * cl_internal.h — private declarations of the OpenCL backend: the context
 * state, the plan state, and the helpers the backend's files share
 * (device probing, program building and caching, argument setting).
 *
 * Files: cl_api.c (the OpenCL/CLBlast entry-point tables, loaded at run
 * time; cl_api.h), cl_persona.c (test-only GPU personas on those tables),
 * cl_device.c (platforms, devices, capability probe), cl_context.c
 * (context state, buffers, finish), cl_program.c (source assembly, build,
 * in-memory cache), cl_diskcache.c + cl_cache_entry.c (program binary cache
 * on disk, and its pure entry parser), cl_plan.c (supports, tile choice
 * adapted to device and per-kernel limits, shrinking on retry, workspace),
 * cl_launch.c (kernel arguments, launches, the retry decision),
 * cl_forward.c, cl_backward.c (enqueue; cl_forward.h), cl_unfused.c and
 * cl_gemm.c (scores through CLBlast and its parameter sets; cl_gemm.h),
 * cl_peak.c (peak FMA rate), cl_backend.c (the function table),
 * cl_interop.c (include/sdpa_opencl.h). Host and kernels share the
 * constants of shaders/common/sdpa_shared.h. Allocations go through the
 * library's fault-injecting sdpa__malloc / sdpa__calloc.
 * Buffer handles given to the front end are plain cl_mem.
 */
#ifndef SDPA_CL_INTERNAL_H
#define SDPA_CL_INTERNAL_H

#define CL_TARGET_OPENCL_VERSION 120
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>

#include "cl_api.h"
#include "../../../shaders/common/sdpa_shared.h"

#include "internal.h"
#include "device_table.h"

/* One device as found through the ICD loader. */
typedef struct sdpa__cl_device {
    cl_platform_id platform;
    cl_device_id device;
} sdpa__cl_device;

/* Properties the plan code needs (filled by sdpa__cl_probe). */
typedef struct sdpa__cl_props {
    char platform_name[128];
    char device_name[256];
    char vendor[128];
    char driver[128];
    char device_version[128];
    int is_gpu, is_cpu, is_pocl;
    int compute_units;
    size_t max_wg;
    cl_ulong local_mem;
    int local_mem_is_local; /* CL_LOCAL (dedicated) vs CL_GLOBAL (emulated) */
    cl_ulong global_mem;
    cl_ulong max_alloc;
    int fp16, subgroups;
    int pref_vec_float;
    int subgroup_size;
    /* Not from the driver: rows per work-item the plan may use (0: no cap),
     * lowered by cl_plan.c when a kernel's private memory spills. */
    int max_rows;
} sdpa__cl_props;

/* A built program kept in the context's in-memory cache. */
typedef struct sdpa__cl_prog {
    struct sdpa__cl_prog *next;
    char *key;           /* options + source hash */
    cl_program program;
} sdpa__cl_prog;

/* Context state (what context_init stores). */
typedef struct sdpa__cl_state {
    cl_platform_id platform;
    cl_device_id device;
    cl_context context;
    cl_command_queue queue;
    sdpa__cl_props props;
    sdpa__cl_prog *programs;
    cl_mem dummy;        /* bound to absent optional pointer arguments */
    bool disk_refused;   /* the cache folder is not private: disk cache off (logged once) */
    cl_int launch_err;   /* the last sdpa__cl_launch refused (CL_SUCCESS: none) */
} sdpa__cl_state;

extern const sdpa__backend sdpa__backend_opencl;

/* ---- cl_device.c ---- */
/* Enumerates every device of every platform, in platform order. *out is
 * malloc'd (NULL when *n == 0). SDPA_OK with *n == 0 when no platform. */
sdpa_status sdpa__cl_enumerate(sdpa__cl_device **out, int *n);
void sdpa__cl_probe(cl_platform_id platform, cl_device_id device, sdpa__cl_props *p);
void sdpa__cl_fill_info(const sdpa__cl_props *p, int index, sdpa_device_info *info);
sdpa_status sdpa__cl_device_count(int *count);
sdpa_status sdpa__cl_device_info(int index, sdpa_device_info *info);

/* ---- cl_vendor.c: the device's row of the vendor defaults table ---- */
void sdpa__cl_device_defaults(const sdpa__cl_props *d, sdpa__device_defaults *out);
/* Whether d gets GPU-style kernels (kernel class gpu-style or mobile-gpu). */
bool sdpa__cl_gpu_style(const sdpa__cl_props *d);

/* ---- cl_context.c ---- */
sdpa_status sdpa__cl_context_init(sdpa_context *ctx, int device_index, void **state);
void sdpa__cl_context_free(sdpa_context *ctx, void *state);
/* Finishes state setup (probe, dummy buffer) around a context/queue. */
sdpa_status sdpa__cl_state_setup(sdpa_context *ctx, sdpa__cl_state *st);
void sdpa__cl_state_release(sdpa__cl_state *st);
sdpa_status sdpa__cl_buffer_alloc(sdpa_context *ctx, void *state, size_t bytes, void **handle);
void sdpa__cl_buffer_free(sdpa_context *ctx, void *state, void *handle);
sdpa_status sdpa__cl_buffer_write(sdpa_context *ctx, void *state, void *handle, size_t offset,
                                  const void *src, size_t bytes);
sdpa_status sdpa__cl_buffer_read(sdpa_context *ctx, void *state, void *handle, size_t offset,
                                 void *dst, size_t bytes);
sdpa_status sdpa__cl_finish(sdpa_context *ctx, void *state);
/* Records a failed OpenCL call (SDPA_ERR_DEVICE or OUT_OF_MEMORY by code). */
sdpa_status sdpa__cl_fail(sdpa_context *ctx, cl_int err, const char *what,
                          const char *file, int line);
#define SDPA__CL_CHECK(ctx, err, what)                                         \
    do {                                                                       \
        cl_int sdpa__e_ = (err);                                               \
        if (sdpa__e_ != CL_SUCCESS)                                            \
            return sdpa__cl_fail((ctx), sdpa__e_, (what), __FILE__, __LINE__); \
    } while (0)

/* ---- cl_program.c ---- */
/* Builds (or reuses) a program from the named kernel files (in order, after
 * prelude.cl and kv_access.cl) with the given -D options. */
sdpa_status sdpa__cl_program(sdpa_context *ctx, sdpa__cl_state *st,
                             const char *const *files, int nfiles,
                             const char *options, cl_program *out);
void sdpa__cl_programs_free(sdpa__cl_state *st);
/* The source sdpa__cl_program builds: prelude.cl, kv_access.cl, then files; *out
 * malloc'd and NUL-terminated. */
sdpa_status sdpa__cl_source(sdpa_context *ctx, const char *const *files, int nfiles, char **out, size_t *len);
/* Records a failed clBuildProgram of prog: the driver's build log on the
 * context (sdpa_context_last_error) and SDPA_ERR_BUILD with the cl_int and
 * `what` ("clBuildProgram", "building peak.cl", ...) in the message. */
sdpa_status sdpa__cl_build_failed(sdpa_context *ctx, const sdpa__cl_state *st,
                                  cl_program prog, cl_int err, const char *what);
uint64_t sdpa__cl_hash(uint64_t h, const void *data, size_t n);

/* ---- cl_diskcache.c ---- */
/* Loads a program binary for `key` from the disk cache into *out (built),
 * or returns false (missing, stale, corrupt: the caller rebuilds). */
bool sdpa__cl_disk_load(sdpa_context *ctx, sdpa__cl_state *st, const char *key,
                        const char *options, cl_program *out);
void sdpa__cl_disk_store(sdpa_context *ctx, sdpa__cl_state *st, const char *key,
                         cl_program program);
/* Whether the disk cache is used on this device (not on PoCL, which caches
 * on its own; SDPA_CL_DISK_CACHE=1 forces it on, =0 off), and the same as
 * words for log lines and sdpa_device_info ("on disk (SDPA_CACHE_DIR)", ...). */
bool sdpa__cl_disk_enabled(const sdpa__cl_props *p);
const char *sdpa__cl_disk_describe(const sdpa__cl_props *p);

/* ---- cl_plan.c ---- */
typedef struct sdpa__cl_plan {
    cl_program program;        /* owned by the context cache, not the plan */
    cl_kernel k_pack, k_fwd, k_combine, k_stats;
    cl_kernel k_prep, k_dq, k_dkdv, k_reduce;
    cl_kernel k_softmax;       /* unfused path: mask + softmax over scores */
    cl_kernel k_decode;        /* direct_kv: decode.cl reads K/V in place */
    int wg, rpw, kt, ov, qv, stage_kv, nsplit, chunk;
    int vec;                   /* tile.vec_width as requested (ov/qv derive from it) */
    int swg;                   /* local size of the per-row kernels (pack, combine, ...) */
    bool forced;               /* some tile field was forced: never adapted or retried */
    sdpa__cl_props eff;        /* the device as the plan sees it: driver limits tightened
                                  by the per-kernel limits and retries (cl_plan.c) */
    int unfused;               /* 1 = scores materialised, GEMMs through CLBlast */
    int direct_kv;             /* 1 = decode.cl on the user's K/V (no K/V packing) */
    int kv_direct;             /* 1 = the fused forward reads the user's K/V in place
                                  (K/V dtype other than q's, q8_0 / q4_0, paged:
                                  kv_access.cl), no K/V packing */
    int drb, dwg, nrb;         /* direct_kv: rows per work-item, local size, row blocks */
    int gemm;                  /* unfused: CLBlast parameter set (cl_gemm.c) */
    int block;                 /* 1 = sdpa_fwd is fwd_block.cl's (FlashAttention-2 blocks) */
    int br, tr, tc, tro, to;   /* block: rows per group, score and output blocks */
    int gemm_at_setup;         /* the set in force when ws_tmp was sized */
    int dgpu, dgk;             /* direct_kv on GPU-class devices: decode_gpu.cl, keys/tile */
    int sg;                    /* fwd_block.cl / decode_gpu.cl reduce rows over subgroups
                                  (-DSDPA_SUBGROUPS=1: the device has cl_khr_subgroups or
                                  cl_intel_subgroups; prelude.cl) */
    int fa2, fbr, fqk, fbc, fkr; /* backward on GPU-class devices: bwd_fa2.cl; dQ rows per
                                  work-group and keys per tile, dK/dV keys per work-group
                                  and rows per tile (cl_plan.c fa2_plan) */
    int SqP, SkvP;
    int SkvT;                  /* keys of the tile-major K: multiple of 64 */
    bool backward;
    char config[256];
    char source[64];
    /* workspace */
    cl_mem ws_q, ws_kt, ws_v, ws_rowstats, ws_part_o, ws_part_l;
    cl_mem ws_qt, ws_kp, ws_vt, ws_dop, ws_dot, ws_l, ws_dsum;
    cl_mem ws_gq, ws_gk, ws_tp;
    cl_mem ws_ds;              /* backward with sinks: per-row dsinks partials */
    cl_mem ws_s, ws_tmp;       /* unfused: scores/probabilities, CLBlast temp */
    size_t tmp_bytes;          /* size of ws_tmp */
    size_t ws_bytes;
} sdpa__cl_plan;

sdpa_status sdpa__cl_supports(sdpa_context *ctx, void *state, const sdpa__problem *p,
                              unsigned plan_flags);
/* Tile parameters of the backend table (cl_plan.c). */
#define SDPA__CL_TILE_PARAMS 9
extern const sdpa__tile_param_info sdpa__cl_tile_params[SDPA__CL_TILE_PARAMS];
/* The configuration plan_create chooses on a device with properties d (no
 * device or context needed; tools/internal/sdpa-gpu-config.c): pl's tile
 * fields and pl->backward; SDPA_ERR_UNSUPPORTED (no message) when refused. */
sdpa_status sdpa__cl_plan_config(const sdpa__cl_props *d, const sdpa__problem *p,
                                 const sdpa_tile_config *tile, unsigned flags,
                                 sdpa__cl_plan *pl);
/* The -D build options of pl's program for p (what clBuildProgram gets). */
void sdpa__cl_plan_options(const sdpa__problem *p, const sdpa__cl_plan *pl, char *opts,
                           size_t size);
/* The kernel files of pl's program, in assembly order (*out is static). */
int sdpa__cl_plan_files(const sdpa__cl_plan *pl, const char *const **out);
/* Tuning slots of the backend table (cl_plan.c, cl_program.c). */
sdpa_status sdpa__cl_default_tile(sdpa_context *ctx, void *state, const sdpa__problem *p,
                                  unsigned plan_flags, const sdpa_tile_config *forced,
                                  sdpa_tile_config *tile);
int sdpa__cl_tile_candidates(sdpa_context *ctx, void *state, const sdpa__problem *p,
                             unsigned plan_flags, sdpa_tile_config *out, int max);
const char *sdpa__cl_source_hash(void);
/* Allocates one workspace buffer of `floats` floats into *m (counted in
 * pl->ws_bytes); nothing for floats <= 0. */
sdpa_status sdpa__cl_ws_alloc(sdpa_context *ctx, sdpa__cl_state *st, sdpa__cl_plan *pl,
                              cl_mem *m, int64_t floats, const char *what);

/* ---- cl_unfused.c (scores through CLBlast; forward only) ---- */
/* The default of sdpa_plan_options.workspace_limit (SDPA_AUTO). */
#define SDPA__CL_DEFAULT_WORKSPACE_LIMIT ((uint64_t)256 << 20)
/* Whether CLBlast is built in and libclblast.so.1 loads (loading it on first
 * call); when not, _missing says why (NULL when available). */
bool sdpa__cl_unfused_available(void);
const char *sdpa__cl_unfused_missing(void);
/* Workspace bytes of the unfused path without CLBlast's temporary buffer. */
uint64_t sdpa__cl_unfused_bytes(const sdpa__problem *p);
/* Checks the workspace limit (SDPA_ERR_WORKSPACE with the bytes needed),
 * then allocates the unfused workspace and CLBlast's temporary buffer. */
sdpa_status sdpa__cl_unfused_setup(sdpa_context *ctx, sdpa__cl_state *st,
                                   const sdpa__problem *p, sdpa__cl_plan *pl,
                                   int64_t workspace_limit);
sdpa_status sdpa__cl_unfused_forward(sdpa_context *ctx, sdpa__cl_state *st,
                                     sdpa__cl_plan *pl, const sdpa__problem *p,
                                     const sdpa__fwd_args *f);
sdpa_status sdpa__cl_plan_create(sdpa_context *ctx, void *state, const sdpa__problem *p,
                                 const sdpa_plan_options *options, void **plan_state);
void sdpa__cl_plan_free(sdpa_context *ctx, void *state, void *plan_state);
/* After an enqueue failed for resources: rebuilds pl with the next smaller
 * default configuration (half the work-group, then no staging, then half
 * the rows per work-item) within its workspace. SDPA_ERR_UNSUPPORTED (no
 * message) when the plan was forced, unfused or is already the smallest. */
sdpa_status sdpa__cl_plan_shrink(sdpa_context *ctx, sdpa__cl_state *st, const sdpa__problem *p,
                                 sdpa__cl_plan *pl);
size_t sdpa__cl_plan_workspace(const void *plan_state);
void sdpa__cl_plan_describe(const void *plan_state, sdpa_plan_info *info);

/* ---- cl_forward.c / cl_backward.c ---- */
sdpa_status sdpa__cl_forward(sdpa_context *ctx, void *state, void *plan_state,
                             const sdpa__problem *p, const sdpa__fwd_args *a);
sdpa_status sdpa__cl_backward(sdpa_context *ctx, void *state, void *plan_state,
                              const sdpa__problem *p, const sdpa__fwd_args *a,
                              const sdpa__bwd_args *g);

/* Kernel argument builder: sets arguments in order, remembers the first
 * failure (shared by cl_forward.c and cl_backward.c). */
typedef struct sdpa__cl_args {
    cl_kernel k;
    cl_uint n;
    cl_int err;
    cl_mem dummy;
} sdpa__cl_args;
void sdpa__cl_arg(sdpa__cl_args *a, size_t size, const void *value);
void sdpa__cl_arg_mem(sdpa__cl_args *a, cl_mem m);   /* NULL -> dummy */
void sdpa__cl_arg_i32(sdpa__cl_args *a, int v);
void sdpa__cl_arg_i64(sdpa__cl_args *a, int64_t v);
void sdpa__cl_arg_f32(sdpa__cl_args *a, float v);
/* A tensor: mem, offset (long) and strides (long4). */
void sdpa__cl_arg_ref(sdpa__cl_args *a, const sdpa__ref *r);
/* Enqueues a 1-D/2-D/3-D range with explicit local size (global rounded up). */
sdpa_status sdpa__cl_launch(sdpa_context *ctx, sdpa__cl_state *st, cl_kernel k,
                            const char *name, cl_uint dims, const size_t *global,
                            const size_t *local);

/* After a failed forward or backward: when an enqueue was refused for
 * resources (CL_OUT_OF_RESOURCES, CL_INVALID_WORK_GROUP_SIZE) and the plan
 * shrinks (sdpa__cl_plan_shrink), true: the caller runs the pass once more. */
bool sdpa__cl_retry(sdpa_context *ctx, sdpa__cl_state *st, const sdpa__problem *p,
                    sdpa__cl_plan *pl);

/* ---- cl_peak.c ---- */
/* measure_peak slot: times the FMA kernel shaders/opencl/peak.cl. */
sdpa_status sdpa__cl_measure_peak(sdpa_context *ctx, void *state, double seconds, double *gflops,
                                  char *method, size_t method_len);

#endif /* SDPA_CL_INTERNAL_H */
