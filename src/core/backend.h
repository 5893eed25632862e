/*
 * backend.h — the contract between the front end (src/core) and a backend.
 *
 * The front end validates every descriptor once and turns it into an
 * sdpa__problem: plain numbers and flags, with the scale resolved and every
 * optional input reduced to a has_* flag (both generated from the tables in
 * slots.h). At call time it resolves each tensor
 * to an sdpa__ref: for host-memory backends (reference, cpu) `mem` is a host
 * pointer; for device backends it is the backend's own buffer handle (host
 * tensors are staged by the front end, see src/core/staging.c). Strides are
 * normalised: broadcast axes (extent 1 against a larger problem extent) have
 * stride 0, so a backend indexes every tensor as base + b*s0 + h*s1 + i*s2 + j*s3.
 *
 * Backends never validate user input again, never print, and report failures
 * through sdpa__fail() so the context keeps the message and native code.
 */
#ifndef SDPA_CORE_BACKEND_H
#define SDPA_CORE_BACKEND_H

#ifndef SDPA_EXPERIMENTAL
#define SDPA_EXPERIMENTAL
#endif
#include "sdpa.h"
#include "slots.h"

#include <stdbool.h>

#define SDPA__BACKEND_API_VERSION 1

/* A validated attention problem. The scalar attributes and the has_* flags
 * come from the tables in slots.h. */
typedef struct sdpa__problem {
    int64_t B, Hq, Hkv, Sq, Skv, D, Dv;
    /* Paged K/V (has_block_table): pool pages, key slots per page and
     * block-table entries per batch; Skv = max_pages * page. 0 otherwise. */
    int64_t pages, page, max_pages;
    sdpa_dtype dtype;        /* storage dtype of q, out (and dout, dq) */
    sdpa_dtype kv_dtype;     /* storage dtype of k, v or k_pages, v_pages (and
                                dk, dv): f32, f16, bf16, q8_0 or q4_0 */
    /* One field per attribute of sdpa_attention_desc (SDPA__ATTRS): the
     * scale resolved (ignored when has_temperature); a zero cap = none; the
     * band canonicalised by validation: |diagonal_offset| and the windows
     * are at most Sq + Skv + 2, diagonal_offset is 0 unless EXPLICIT, and
     * edges that can never bind are -1 (unbounded), so kernels may compute
     * with 32-bit ints when Sq + Skv < 2^30. */
    SDPA__ATTRS(SDPA__X_ATTR_FIELD)
    /* ALiBi's diagonal offset for an EXPLICIT diagonal: the offset as given
     * (|value| < 2^62), which the band's canonical form above may move; 0
     * without ALiBi or for the other diagonals. Use sdpa__alibi_offset. */
    int64_t alibi_offset;
    /* has_<field> for every optional forward slot (has_mask, has_bias, ...) */
    SDPA__FWD_SLOTS(SDPA__X_HAS)
} sdpa__problem;

/* A resolved tensor: memory, offset and strides in elements. */
typedef struct sdpa__ref {
    void *mem;          /* host pointer, or backend buffer handle; NULL = absent */
    size_t offset;
    int64_t stride[4];
} sdpa__ref;

/* One sdpa__ref per slot, named after the slot's field (q, k, ..., stats;
 * dout, dq, ..., dtemperature); mem is NULL for an absent slot. */
typedef struct sdpa__fwd_args {
    SDPA__FWD_SLOTS(SDPA__X_REF)
} sdpa__fwd_args;

typedef struct sdpa__bwd_args {
    SDPA__BWD_SLOTS(SDPA__X_BREF)
} sdpa__bwd_args;

/* Ref of slot i (SDPA__T_* / SDPA__G_*): the args hold one ref per slot in
 * table order (checked in slots.c). */
static inline sdpa__ref *sdpa__fwd_ref(sdpa__fwd_args *a, int i) { return (sdpa__ref *)(void *)a + i; }
static inline sdpa__ref *sdpa__bwd_ref(sdpa__bwd_args *a, int i) { return (sdpa__ref *)(void *)a + i; }

/* One tile parameter a backend has (sdpa_tile_param): the values it takes
 * besides SDPA_AUTO, checked by the front end for every configuration before
 * plan_create (src/core/tile_check.c: forced tiles, profile records and
 * tuning candidates alike), so every backend refuses an out-of-range value
 * with the same status and message; sdpa_tile_param_get_bounds reports it.
 * Limits that depend on the device (work-group size, local memory) stay in
 * the backend. A parameter missing from the table is one the backend does
 * not have (only SDPA_AUTO is accepted). */
typedef struct sdpa__tile_param_info {
    sdpa_tile_param param;
    const char *name;        /* NULL for core parameters (src/core/tile_params.c
                                names them); a backend parameter's own name */
    const char *description; /* what it means on this backend */
    int lo, hi;              /* inclusive */
    int multiple;            /* > 1: the value must be a multiple of it */
    bool pow2;               /* the value must be a power of two */
    int def;                 /* the default, SDPA_AUTO = derived per device/problem */
    bool process_wide;       /* changing it costs a process-wide switch (the
                                tuner never interleaves two values of it) */
} sdpa__tile_param_info;

/* The per-backend function table. Slots marked optional may be NULL. */
typedef struct sdpa__backend {
    int api_version;
    sdpa_backend_kind kind;
    const char *name;
    bool host_memory; /* buffers are host memory: refs carry host pointers */
    /* The optional capabilities it implements (SDPA__FEAT_* bits of
     * capabilities.h); the front end refuses a problem needing any other. */
    unsigned features;

    /* optional (NULL = nothing to load): loads the backend's run-time
     * library (dlopen, once per process, thread safe; src/core/dynlib.h).
     * NULL when usable, else a message naming the library that cannot be
     * loaded; the front end then treats the backend as unavailable. */
    const char *(*load)(void);

    /* Devices (callable without a context). */
    sdpa_status (*device_count)(int *count);
    sdpa_status (*device_info)(int index, sdpa_device_info *info);

    /* Context: pick the device, create queues/caches; *state owned by backend. */
    sdpa_status (*context_init)(sdpa_context *ctx, int device_index, void **state);
    void (*context_free)(sdpa_context *ctx, void *state);

    /* Every slot below that takes the context also takes `state`, the
     * backend's context state (what context_init stored for this context's
     * slot, primary or CPU fallback; NULL only where a slot documents calls
     * without a context). Backends read their state only from this
     * parameter; ctx is for sdpa__fail, logging and the context accessors. */

    /* Buffers: handles are opaque to the front end (host pointers when
     * host_memory). */
    sdpa_status (*buffer_alloc)(sdpa_context *ctx, void *state, size_t bytes, void **handle);
    void (*buffer_free)(sdpa_context *ctx, void *state, void *handle);
    sdpa_status (*buffer_write)(sdpa_context *ctx, void *state, void *handle, size_t offset,
                                const void *src, size_t bytes);
    sdpa_status (*buffer_read)(sdpa_context *ctx, void *state, void *handle, size_t offset,
                               void *dst, size_t bytes);

    /* SDPA_OK if the backend can run the problem; otherwise
     * SDPA_ERR_UNSUPPORTED recorded with sdpa__fail naming what is missing. */
    sdpa_status (*supports)(sdpa_context *ctx, void *state, const sdpa__problem *p,
                            unsigned plan_flags);

    /* Compile kernels and allocate workspace for a problem; *plan_state owned
     * by the backend. options->tile is the complete configuration the front
     * end resolved (forced, else profile, else default_tile; src/core/plan.c),
     * already checked against tile_params: the backend checks it against the
     * device and builds it. NULL only for a backend without default_tile. */
    sdpa_status (*plan_create)(sdpa_context *ctx, void *state, const sdpa__problem *p,
                               const sdpa_plan_options *options,
                               void **plan_state);
    void (*plan_free)(sdpa_context *ctx, void *state, void *plan_state);
    size_t (*plan_workspace)(const void *plan_state);
    /* optional: fills kernel/config/source of info */
    void (*plan_describe)(const void *plan_state, sdpa_plan_info *info);

    sdpa_status (*forward)(sdpa_context *ctx, void *state, void *plan_state,
                           const sdpa__problem *p, const sdpa__fwd_args *a);
    sdpa_status (*backward)(sdpa_context *ctx, void *state, void *plan_state,
                            const sdpa__problem *p, const sdpa__fwd_args *a,
                            const sdpa__bwd_args *g);
    sdpa_status (*finish)(sdpa_context *ctx, void *state);

    /* The tile parameters the backend has (n_tile_params entries; NULL/0 =
     * none). */
    const sdpa__tile_param_info *tile_params;
    int n_tile_params;

    /* --- configuration and tuning (optional; NULL = all SDPA_AUTO) --- */
    /* The complete configuration for a problem: `forced` (NULL = nothing
     * forced; its values are within tile_params) completed with the
     * backend's choices for the SDPA_AUTO values. Fails with the backend's
     * message when the device cannot take the forced values. Called through
     * src/core/dispatch.c by plan creation and the tuner. The cpu and
     * Vulkan backends also answer this and tile_candidates with ctx and
     * state NULL (no device: their defaults; tests call them so). */
    sdpa_status (*default_tile)(sdpa_context *ctx, void *state, const sdpa__problem *p,
                                unsigned plan_flags, const sdpa_tile_config *forced,
                                sdpa_tile_config *tile);
    /* Writes up to max candidates (pruned by the device's limits) and returns
     * how many exist in total (may exceed max). */
    int (*tile_candidates)(sdpa_context *ctx, void *state, const sdpa__problem *p,
                           unsigned plan_flags, sdpa_tile_config *out, int max);
    /* Hash of the kernel sources this backend builds from (hex string), so
     * profiles made with other kernels are recognised as stale. */
    const char *(*source_hash)(void);

    /* --- device peak (optional; NULL = SDPA_ERR_UNSUPPORTED) --- */
    /* Measures the fp32 FMA throughput of the context's device for about
     * `seconds` (best of a few runs): *gflops (2 flops per FMA lane) and a
     * short description of the method in `method`. Called by src/core/peak.c. */
    sdpa_status (*measure_peak)(sdpa_context *ctx, void *state, double seconds, double *gflops,
                                char *method, size_t method_len);
    /* The kernel set the FMA peak is measured for, part of its cache key
     * (the CPU backends' vector width: "avx512", "avx2", "generic"); NULL
     * slot = one peak per device. */
    const char *(*peak_kernels)(sdpa_context *ctx, void *state);
    /* Measures the read bandwidth of the memory the kernels stream K/V from
     * for about `seconds`: *gbps (1e9 bytes/s), method as above. NULL =
     * SDPA_ERR_UNSUPPORTED. Called by src/core/peak.c. */
    sdpa_status (*measure_bandwidth)(sdpa_context *ctx, void *state, double seconds,
                                     double *gbps, char *method, size_t method_len);
    /* Times `repeat` reads of `bytes` (at least 1, far below SIZE_MAX) of
     * that memory, each after a pause of pause_ms, as sdpa_context_read_time
     * describes: ms[0..repeat) in milliseconds, and info's bytes (as read),
     * threads and method. NULL = SDPA_ERR_UNSUPPORTED. Called by
     * src/core/peak.c, which checks the arguments and fills the rest. */
    sdpa_status (*measure_read_time)(sdpa_context *ctx, void *state, size_t bytes,
                                     double pause_ms, int repeat, double *ms,
                                     sdpa_read_time_info *info);
} sdpa__backend;

/* The peak micro-benchmarks' one loop (peak_rounds.c). A backend's run does
 * one timed run of `size` units (>= 1; the backend maps them to iterations,
 * work-groups, ...): the *seconds it took, the *flops it did, and *full = 1
 * when it is at the backend's largest run (calibration stops growing).
 * sdpa__peak_rounds calibrates the size from `start` until a run takes
 * >= 10 ms, scales it to about seconds / SDPA__PEAK_ROUNDS per run, and puts
 * the best of SDPA__PEAK_ROUNDS runs in *gflops (0 when no run took
 * measurable time: the caller reports that with its own message). */
#define SDPA__PEAK_ROUNDS 5
typedef sdpa_status (*sdpa__peak_run_fn)(void *user, double size, double *seconds,
                                         double *flops, int *full);
sdpa_status sdpa__peak_rounds(sdpa__peak_run_fn run, void *user, double start, double seconds,
                              double *gflops);

/* The device this context runs on (index into the backend's device list). */
int sdpa__context_device_index(const sdpa_context *ctx);

/* The tables the build compiles in (src/core/registry.c). */
extern const sdpa__backend sdpa__backend_reference;
extern const sdpa__backend sdpa__backend_cpu;
#ifdef SDPA_HAVE_OPENCL
extern const sdpa__backend sdpa__backend_opencl;
#endif
#ifdef SDPA_HAVE_VULKAN
extern const sdpa__backend sdpa__backend_vulkan;
#endif

/* Backend table for a kind, or NULL when not compiled in. */
const sdpa__backend *sdpa__backend_get(sdpa_backend_kind kind);
/* NULL when be's run-time library is loaded (or it needs none), else why
 * not (be->load's message). */
const char *sdpa__backend_unavailable(const sdpa__backend *be);

/* The state context_init stored for `be` when `be` is the context's primary
 * backend, else NULL. Only for entry points an application or a test calls
 * with nothing but the context (interop in sdpa_opencl.h, the Vulkan test
 * hooks): the table's slots receive their state as a parameter. */
void *sdpa__context_primary_state(const sdpa_context *ctx, const sdpa__backend *be);
/* Thread count from the context options (>= 1). */
int sdpa__context_threads(const sdpa_context *ctx);
/* Resolved profile and cache directories (never NULL, may be ""). */
const char *sdpa__context_profile_dir(const sdpa_context *ctx);
const char *sdpa__context_cache_dir(const sdpa_context *ctx);

/* Interop (sdpa_opencl.h / sdpa_vulkan.h): a context around a backend state
 * the caller already initialised (e.g. from an application's cl_context), and
 * buffers around existing device memory. With owned = false the backend's
 * buffer_free is not called for the handle. */
sdpa_status sdpa__context_create_with_state(const sdpa_context_options *options,
                                            const sdpa__backend *backend,
                                            void *state, const char *device_name,
                                            sdpa_context **out);
sdpa_status sdpa__buffer_wrap(sdpa_context *ctx, void *handle, size_t bytes,
                              bool owned, sdpa_buffer **out);
void *sdpa__buffer_handle(const sdpa_buffer *buf);
sdpa_context *sdpa__buffer_context(const sdpa_buffer *buf);

/* Effective diagonal offset for batch b, whose first `keys_b` keys are valid
 * (Skv unless the call gives per-batch key counts). */
static inline int64_t sdpa__diag_offset(const sdpa__problem *p, int64_t keys_b)
{
    switch (p->diagonal) {
    case SDPA_DIAGONAL_BOTTOM_RIGHT: return keys_b - p->Sq;
    case SDPA_DIAGONAL_EXPLICIT: return p->diagonal_offset;
    default: return 0;
    }
}

/* The diagonal offset ALiBi measures distances from, for batch b whose
 * first `keys_b` keys are valid: the band's offset as the caller gave it
 * (not its canonical form), so key j of row i gets -slope * |i + off - j|. */
static inline int64_t sdpa__alibi_offset(const sdpa__problem *p, int64_t keys_b)
{
    return p->diagonal == SDPA_DIAGONAL_EXPLICIT ? p->alibi_offset
                                                 : sdpa__diag_offset(p, keys_b);
}

/* Kept-key range [*lo, *hi) of row i from the batch's valid key count and
 * the band (masks and -inf biases may drop more inside it). Empty when
 * *lo >= *hi. */
static inline void sdpa__row_range(const sdpa__problem *p, int64_t keys_b,
                                   int64_t i, int64_t *lo, int64_t *hi)
{
    /* validation keeps |offset| and the windows within Sq + Skv + 1, so
     * nothing here can overflow (see canonical_band in validate.c) */
    int64_t off = sdpa__diag_offset(p, keys_b);
    int64_t a = 0, b = keys_b;
    if (p->window_left >= 0 && i + off - p->window_left > a)
        a = i + off - p->window_left;
    if (p->window_right >= 0 && i + off + p->window_right + 1 < b)
        b = i + off + p->window_right + 1;
    *lo = a;
    *hi = b > a ? b : a;
}

#endif /* SDPA_CORE_BACKEND_H */
