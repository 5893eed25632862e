/*
 * sdpa.h — the one public header of libsdpa, a C11 library for scaled
 * dot-product attention (forward and backward) on OpenCL devices, Vulkan
 * devices and the CPU.
 *
 * This header is the manual. The stable API comes first; the section guarded
 * by SDPA_EXPERIMENTAL (tuning, introspection used by the tools) follows and
 * may change between minor versions.
 *
 * Conventions used throughout:
 *  - Every function returns an sdpa_status (SDPA_OK = 0) unless it says
 *    otherwise. On failure, the context keeps a message, the native driver
 *    code and any kernel build log: see sdpa_context_last_error(). Every
 *    failing call that has a context (directly, or through a plan or buffer)
 *    records its own message; a NULL argument gives SDPA_ERR_NULL and the
 *    message "function: argument is NULL".
 *  - Every `_create` has a `_destroy` that accepts NULL.
 *  - Versioned structs begin with `size_t struct_size`. Input structs
 *    (options, descriptions) have an `_init` function that fills the
 *    defaults and sets struct_size; always call it before setting fields.
 *    Output structs (infos, results): set struct_size = sizeof before the
 *    call. Each has a documented v1 size, SDPA_<NAME>_SIZE_V1 (the size
 *    through its last v1 field); any struct_size from v1 up is accepted: an
 *    input's fields past the caller's size take their defaults, an output is
 *    written only up to the caller's size, and its struct_size is set to the
 *    bytes written (so a caller built against a newer header learns which
 *    fields this library filled). A struct_size below v1 is
 *    SDPA_ERR_INVALID_ARG ("<struct>.struct_size is N, below its v1 size M")
 *    and nothing is written. New fields are only ever appended.
 *  - "Auto" values are the explicit sentinels SDPA_AUTO / SDPA_SCALE_DEFAULT,
 *    never 0 where 0 is meaningful.
 *  - The library never aborts and never prints: it returns statuses and logs
 *    through the context's log callback (default: stderr at WARN).
 *
 * Thread safety: the free functions (sdpa_version, sdpa_status_string,
 * sdpa_*_init, device listing) are thread-safe. A context, and the plans and
 * buffers made from it, must be used by one thread at a time; different
 * contexts may be used from different threads at once. (One exception to
 * independence: the OpenCL unfused path's CLBlast parameter set is
 * process-wide per device; see SDPA_TILE_OPENCL_GEMM_PARAMS in sdpa_opencl.h.)
 */
#ifndef SDPA_H
#define SDPA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- export macro and version ------------------------------------------ */

#if defined(SDPA_BUILDING) && defined(__GNUC__)
#define SDPA_API __attribute__((visibility("default")))
#elif defined(SDPA_BUILDING) && defined(_WIN32)
#define SDPA_API __declspec(dllexport)
#else
#define SDPA_API
#endif

#define SDPA_VERSION_MAJOR 0
#define SDPA_VERSION_MINOR 2
#define SDPA_VERSION_PATCH 0
#define SDPA_VERSION_NUMBER \
    (SDPA_VERSION_MAJOR * 10000 + SDPA_VERSION_MINOR * 100 + SDPA_VERSION_PATCH)

/* Bytes of `type` through `field` (inclusive): a versioned struct's v1 size
 * is this for its last v1 field (see "Versioned structs" above). */
#define SDPA_SIZE_THROUGH(type, field) \
    (offsetof(type, field) + sizeof(((type *)0)->field))

/* Runtime version as MAJOR*10000 + MINOR*100 + PATCH, and as a string. */
SDPA_API unsigned sdpa_version(void);
SDPA_API const char *sdpa_version_string(void);

/* ---- status ------------------------------------------------------------- */

/* X(name, value, message). Values are pinned and never reused. */
#define SDPA_STATUS_TABLE(X)                                                   \
    X(SDPA_OK, 0, "success")                                                   \
    X(SDPA_ERR_NULL, 1, "a required pointer is NULL")                          \
    X(SDPA_ERR_INVALID_ARG, 2, "invalid argument")                             \
    X(SDPA_ERR_SHAPE, 3, "tensor shapes are inconsistent or overflow")         \
    X(SDPA_ERR_STRIDE, 4, "invalid tensor stride or offset")                   \
    X(SDPA_ERR_DTYPE, 5, "invalid data type or data type combination")        \
    X(SDPA_ERR_EMPTY, 6, "empty tensor")                                       \
    X(SDPA_ERR_UNSUPPORTED, 7, "not supported by this backend or device")      \
    X(SDPA_ERR_OUT_OF_MEMORY, 8, "out of memory")                              \
    X(SDPA_ERR_NO_DEVICE, 9, "no usable device for the requested backend")     \
    X(SDPA_ERR_BUILD, 10, "kernel build failed")                               \
    X(SDPA_ERR_DEVICE, 11, "device or driver call failed")                     \
    X(SDPA_ERR_DEVICE_LOST, 12, "device lost")                                 \
    X(SDPA_ERR_MISMATCHED_CONTEXT, 13, "object belongs to another context")    \
    X(SDPA_ERR_WORKSPACE, 14, "workspace limit too small for this path")       \
    X(SDPA_ERR_IO, 15, "file input/output failed")                             \
    X(SDPA_ERR_CORRUPT, 16, "corrupt, truncated or wrong-version data")        \
    X(SDPA_ERR_BUDGET, 17, "time budget exhausted")                            \
    X(SDPA_ERR_INTERNAL, 18, "internal error (a bug in libsdpa)")

typedef enum sdpa_status {
#define SDPA_X_ENUM(name, value, message) name = value,
    SDPA_STATUS_TABLE(SDPA_X_ENUM)
#undef SDPA_X_ENUM
} sdpa_status;

/* Static message for a status; "unknown status" for values not in the table.
 * Thread-safe. */
SDPA_API const char *sdpa_status_string(sdpa_status status);
/* Static name ("SDPA_ERR_SHAPE") for a status; "SDPA_UNKNOWN" otherwise. */
SDPA_API const char *sdpa_status_name(sdpa_status status);

/* ---- enums ---------------------------------------------------------------- */

/* Sentinel for integer options meaning "choose automatically". */
#define SDPA_AUTO (-1)

typedef enum sdpa_dtype {
    SDPA_DTYPE_NONE = 0, /* marks an absent optional tensor */
    SDPA_DTYPE_F32 = 1,
    SDPA_DTYPE_F16 = 2,  /* IEEE binary16 storage, f32 arithmetic */
    SDPA_DTYPE_BF16 = 3, /* upper half of binary32, f32 arithmetic */
    SDPA_DTYPE_U8 = 4,   /* bool masks: 0 = drop, nonzero = keep */
    SDPA_DTYPE_I32 = 5,  /* kv_len, block_table */
    SDPA_DTYPE_Q8_0 = 6, /* K/V only, forward only: ggml's block_q8_0, 32
                            elements in 34 bytes (f16 scale d, 32 int8 q;
                            element t = d * q_t) */
    SDPA_DTYPE_Q4_0 = 7, /* K/V only, forward only: ggml's block_q4_0, 32
                            elements in 18 bytes (f16 scale d, 16 bytes: byte t
                            holds element t in its low nibble and t + 16 in its
                            high nibble; element = d * (nibble - 8)) */
} sdpa_dtype;

/* Bytes per storage unit: an element, or for the block types (q8_0, q4_0) a
 * block of sdpa_dtype_block_elems() elements; 0 for SDPA_DTYPE_NONE or
 * unknown values.
 * Block types are cut into blocks along the last axis (D or Dv, which must be
 * a multiple of 32): shape counts elements, but offset and strides count
 * blocks, and the last axis must hold consecutive blocks (stride[3] = 1). So a
 * contiguous (B, H, S, D) q8_0 tensor has strides (H*S*D/32, S*D/32, D/32, 1)
 * and occupies B*H*S*D/32 * 34 bytes. */
SDPA_API size_t sdpa_dtype_size(sdpa_dtype dtype);
/* Elements per storage unit: 32 for q8_0 and q4_0, 1 for the other dtypes, 0
 * for SDPA_DTYPE_NONE or unknown values. */
SDPA_API int64_t sdpa_dtype_block_elems(sdpa_dtype dtype);
/* "f32", "f16", "bf16", "u8", "i32", "q8_0", "q4_0", "none"; "?" for
 * unknown. */
SDPA_API const char *sdpa_dtype_name(sdpa_dtype dtype);

typedef enum sdpa_backend_kind {
    SDPA_BACKEND_DEFAULT = -1, /* SDPA_BACKEND env var, else AUTO */
    SDPA_BACKEND_AUTO = 0,     /* OpenCL GPU, then Vulkan GPU, then CPU */
    SDPA_BACKEND_REFERENCE = 1,/* float64 oracle: slow, obviously correct */
    SDPA_BACKEND_CPU = 2,      /* tiled, threaded float32 CPU path */
    SDPA_BACKEND_OPENCL = 3,
    SDPA_BACKEND_VULKAN = 4,
} sdpa_backend_kind;
#define SDPA_BACKEND_COUNT 5 /* AUTO..VULKAN */

/* "auto", "reference", "cpu", "opencl", "vulkan"; "default" for DEFAULT. */
SDPA_API const char *sdpa_backend_name(sdpa_backend_kind kind);
/* Parses the names above (case-insensitive). SDPA_ERR_INVALID_ARG if unknown. */
SDPA_API sdpa_status sdpa_backend_parse(const char *name, sdpa_backend_kind *out);

typedef enum sdpa_log_level {
    SDPA_LOG_ERROR = 0,
    SDPA_LOG_WARN = 1,
    SDPA_LOG_INFO = 2,
    SDPA_LOG_DEBUG = 3,
} sdpa_log_level;

/* Log sink. `message` is one line without a trailing newline, valid only for
 * the duration of the call. Called from the thread that called the library. */
typedef void (*sdpa_log_fn)(void *user, sdpa_log_level level, const char *message);

/* ---- contexts ------------------------------------------------------------- */

typedef struct sdpa_context sdpa_context;
typedef struct sdpa_plan sdpa_plan;
typedef struct sdpa_buffer sdpa_buffer;

typedef struct sdpa_context_options {
    size_t struct_size;        /* set by _init (see "Versioned structs") */
    sdpa_backend_kind backend; /* default SDPA_BACKEND_DEFAULT (env, else AUTO) */
    const char *device;        /* device index ("0") or name substring;
                                  NULL = SDPA_DEVICE env, else the first. A
                                  selector of digits (with an optional sign)
                                  is an index and must lie in 0..INT_MAX,
                                  else SDPA_ERR_INVALID_ARG */
    int threads;               /* CPU threads; SDPA_AUTO (default) = all cores */
    int log_level;             /* sdpa_log_level; SDPA_AUTO (default) = SDPA_LOG
                                  env (error|warn|info|debug), else WARN */
    sdpa_log_fn log_fn;        /* NULL (default) = stderr */
    void *log_user;            /* passed to log_fn */
    const char *profile_dir;   /* NULL = SDPA_PROFILE_DIR, XDG_DATA_HOME/sdpa/
                                  profiles, ~/.local/share/sdpa/profiles;
                                  Windows %LOCALAPPDATA%\sdpa\profiles */
    const char *cache_dir;     /* NULL = SDPA_CACHE_DIR, XDG_CACHE_HOME/sdpa/
                                  kernels, ~/.cache/sdpa/kernels;
                                  Windows %LOCALAPPDATA%\sdpa\kernels */
} sdpa_context_options;
#define SDPA_CONTEXT_OPTIONS_SIZE_V1 SDPA_SIZE_THROUGH(sdpa_context_options, cache_dir)

SDPA_API void sdpa_context_options_init(sdpa_context_options *options);

/* Creates a context on the chosen backend and device. `options` may be NULL
 * (all defaults). With AUTO, a device that fails to start is skipped with one
 * WARN line and the next backend is tried, and a device selector (`device` or
 * SDPA_DEVICE) that matches no OpenCL or Vulkan device gives one WARN line
 * naming it; then the CPU backend, which always works, is used (backends with
 * no GPU are skipped silently, at INFO). With an explicit backend, its error
 * is returned instead.
 * The OpenCL and Vulkan backends open their loader (libOpenCL.so.1,
 * libvulkan.so.1) at run time, on first use: libsdpa does not link them.
 * When it cannot be loaded, AUTO skips that backend at INFO and an explicit
 * request fails with SDPA_ERR_UNSUPPORTED and a message naming the library.
 * The cpu and reference backends need nothing and always work.
 * Returns SDPA_ERR_NULL, SDPA_ERR_INVALID_ARG (bad options or env value),
 * SDPA_ERR_UNSUPPORTED (backend not compiled in, or its run-time library
 * cannot be loaded), SDPA_ERR_NO_DEVICE, SDPA_ERR_DEVICE,
 * SDPA_ERR_OUT_OF_MEMORY. On failure *out is NULL. */
SDPA_API sdpa_status sdpa_context_create(const sdpa_context_options *options,
                                         sdpa_context **out);
/* Waits for pending work, frees every plan and buffer cache the context owns.
 * Plans and buffers created from it must be destroyed first. NULL is a no-op. */
SDPA_API void sdpa_context_destroy(sdpa_context *ctx);

/* Waits until all work enqueued on the context has completed. */
SDPA_API sdpa_status sdpa_context_finish(sdpa_context *ctx);

/* The backend the context runs on (never AUTO/DEFAULT), and its device name
 * (static for the context's lifetime). */
SDPA_API sdpa_backend_kind sdpa_context_backend(const sdpa_context *ctx);
SDPA_API const char *sdpa_context_device_name(const sdpa_context *ctx);

typedef struct sdpa_error_info {
    sdpa_status status;      /* status of the last failed call */
    int64_t native_code;     /* cl_int / VkResult / errno, 0 if none */
    const char *message;     /* human-readable, names the field or call */
    const char *build_log;   /* last kernel build log, "" if none */
} sdpa_error_info;

/* Fills *info with the last error recorded on the context. The strings stay
 * valid until the next call that uses the context. Returns SDPA_ERR_NULL. */
SDPA_API sdpa_status sdpa_context_last_error(const sdpa_context *ctx,
                                             sdpa_error_info *info);

/* ---- buffers --------------------------------------------------------------- */

/* Allocates `bytes` of device memory (host memory on the CPU backends).
 * Contents are undefined. Returns SDPA_ERR_EMPTY for 0 bytes,
 * SDPA_ERR_OUT_OF_MEMORY, SDPA_ERR_DEVICE. */
SDPA_API sdpa_status sdpa_buffer_create(sdpa_context *ctx, size_t bytes,
                                        sdpa_buffer **out);
/* Blocking copies between host memory and a buffer; the range must lie inside
 * the buffer (SDPA_ERR_INVALID_ARG otherwise). They wait for pending work. */
SDPA_API sdpa_status sdpa_buffer_write(sdpa_buffer *buf, size_t offset_bytes,
                                       const void *src, size_t bytes);
SDPA_API sdpa_status sdpa_buffer_read(sdpa_buffer *buf, size_t offset_bytes,
                                      void *dst, size_t bytes);
SDPA_API size_t sdpa_buffer_size(const sdpa_buffer *buf);
/* Frees the buffer (after pending work that uses it). NULL is a no-op. */
SDPA_API void sdpa_buffer_destroy(sdpa_buffer *buf);

/* ---- tensors --------------------------------------------------------------- */

/* A strided 4-D view. Axis order is (batch, heads, seq, head_dim); strides and
 * offset are in elements. Stride 0 broadcasts (inputs only: no two elements
 * of an output may share memory); an axis of extent 1 may have any stride.
 * Negative strides are rejected. Exactly one of `buf` (device buffer)
 * and `host` (host memory) is set for a present tensor. A tensor whose dtype is
 * SDPA_DTYPE_NONE is absent (only optional inputs/outputs may be absent).
 *
 * Shapes of the lower-rank tensors, keeping each axis' meaning:
 *   lse          (B, Hq, Sq, 1)   f32
 *   stats        (B, Hq, 1, SDPA_STAT_COUNT) f32
 *   kv_len       (B, 1, 1, 1)     i32, valid keys per batch, 0 <= kv_len <= Skv
 *   q_gain/k_gain (1, 1, 1, D)    f32
 *   temperature  (1, Hq, 1, 1)    f32, per-head scale (replaces `scale`)
 *   mask         (B|1, Hq|1, Sq, Skv) u8;  bias (B|1, Hq|1, Sq, Skv) f32
 *   alibi_slopes (1, Hq, 1, 1)    f32, ALiBi slope per query head
 *   sinks        (1, Hq, 1, 1)    f32, sink logit per query head (-inf: none)
 *   k_pages      (P, Hkv, page, D) and v_pages (P, Hkv, page, Dv): paged K/V,
 *                a pool of P pages of `page` key slots, in K/V's dtype
 *   block_table  (B, 1, 1, max_pages) i32, page index per (batch, logical
 *                page); entries lie in [0, P)
 * A contiguous tensor over host memory for a block type (q8_0, q4_0) has
 * strides in blocks (see sdpa_dtype_size); sdpa_tensor_host and
 * sdpa_tensor_buffer set them so.
 */
typedef struct sdpa_tensor {
    sdpa_buffer *buf;
    void *host;
    size_t offset;
    sdpa_dtype dtype;
    int64_t shape[4];
    int64_t stride[4];
} sdpa_tensor;

/* A contiguous (row-major) tensor over host memory. */
SDPA_API sdpa_tensor sdpa_tensor_host(void *host, sdpa_dtype dtype, int64_t n0,
                                      int64_t n1, int64_t n2, int64_t n3);
/* A contiguous tensor over a buffer, starting `offset` elements in. */
SDPA_API sdpa_tensor sdpa_tensor_buffer(sdpa_buffer *buf, size_t offset,
                                        sdpa_dtype dtype, int64_t n0, int64_t n1,
                                        int64_t n2, int64_t n3);

/* ---- attention description ------------------------------------------------- */

typedef enum sdpa_diagonal {
    SDPA_DIAGONAL_TOP_LEFT = 0,     /* off = 0 (PyTorch is_causal) */
    SDPA_DIAGONAL_BOTTOM_RIGHT = 1, /* off = kv_len[b] - Sq (FlashAttention) */
    SDPA_DIAGONAL_EXPLICIT = 2,     /* off = diagonal_offset (KV-cache length) */
} sdpa_diagonal;

typedef enum sdpa_qk_norm {
    SDPA_QK_NORM_NONE = 0,
    SDPA_QK_NORM_RMS = 1,   /* x / sqrt(mean(x^2) + eps) */
    SDPA_QK_NORM_LAYER = 2, /* (x - mean) / sqrt(var + eps), population var */
    SDPA_QK_NORM_L2 = 3,    /* x / sqrt(sum(x^2) + eps): cosine attention */
} sdpa_qk_norm;

/* Columns of the stats output, per (batch, query head). See docs/semantics.md
 * for the exact definitions. */
typedef enum sdpa_stat {
    SDPA_STAT_LOGIT_MEAN = 0,
    SDPA_STAT_LOGIT_STD = 1,
    SDPA_STAT_LOGIT_MIN = 2,
    SDPA_STAT_LOGIT_MAX = 3,
    SDPA_STAT_ENTROPY_MEAN = 4,
    SDPA_STAT_ENTROPY_MIN = 5,
    SDPA_STAT_PMAX_MEAN = 6,
    SDPA_STAT_SATURATED_FRAC = 7,
    SDPA_STAT_JACOBIAN_FRO_MEAN = 8,
    SDPA_STAT_SINK_MASS = 9,
    SDPA_STAT_EMPTY_ROWS = 10,
    SDPA_STAT_COUNT = 11
} sdpa_stat;

/* Column name ("logit_mean", ...) or NULL when out of range. */
SDPA_API const char *sdpa_stat_name(int stat);

/* Scale sentinel: 1/sqrt(D) (never Dv). Any other value in [FLT_MIN, FLT_MAX]
 * is used as is; SDPA_SCALE_MUP is the muP preset 1/D. */
#define SDPA_SCALE_DEFAULT (-1.0)
#define SDPA_SCALE_MUP (-2.0)

/* The tensors of one attention call. Inputs: q, k, v and the optional mask,
 * bias, kv_len, q_gain, k_gain, temperature, alibi_slopes, sinks, and for
 * paged K/V k_pages, v_pages and block_table in place of k and v. Outputs:
 * out and the optional lse and stats. The experimental slot API
 * (sdpa_slot_get_info) lists these fields, and those of
 * sdpa_backward_tensors, in declaration order with their roles, dtypes and
 * shapes.
 * K/V dtype: k and v (or k_pages and v_pages) share one storage dtype, which
 * may differ from q's: f32, f16, bf16, q8_0 or q4_0 (the block types forward
 * only, with D and Dv multiples of 32). q, out, dout and dq have q's dtype;
 * dk and dv have K/V's.
 * Paged K/V (forward only): with block_table present, k and v are absent and
 * logical key j of batch b is slot j % page of page block_table[b][j / page];
 * kv_len is required, the logical Skv is max_pages * page, and mask/bias use
 * it. Pages may be shared between batches and appear in any order.
 * Since 0.2 the struct ends with alibi_slopes .. block_table (callers built
 * against 0.1 must be rebuilt; sdpa_attention_desc keeps its v1 size). */
typedef struct sdpa_forward_tensors {
    sdpa_tensor q, k, v;        /* (B,Hq,Sq,D) (B,Hkv,Skv,D) (B,Hkv,Skv,Dv) */
    sdpa_tensor out;            /* (B,Hq,Sq,Dv), same dtype as q */
    sdpa_tensor mask, bias, kv_len;
    sdpa_tensor q_gain, k_gain, temperature;
    sdpa_tensor lse, stats;
    sdpa_tensor alibi_slopes, sinks;
    sdpa_tensor k_pages, v_pages, block_table;
} sdpa_forward_tensors;

/* The extra tensors of a backward call. dout is an input; dq, dk, dv are
 * outputs (dk and dv summed over the query heads sharing a KV head), dq with
 * the dtype of q and dk, dv with K/V's; the optional gradients of the gains
 * (1,1,1,D), of the temperature (1,Hq,1,1) and of the sinks (1,Hq,1,1) are
 * f32 and present only when the forward had them. */
typedef struct sdpa_backward_tensors {
    sdpa_tensor dout;           /* (B,Hq,Sq,Dv) */
    sdpa_tensor dq, dk, dv;
    sdpa_tensor dq_gain, dk_gain, dtemperature;
    sdpa_tensor dsinks;
} sdpa_backward_tensors;

/* Everything a plan is made for. The tensors' dtypes, shapes and presence
 * fix the plan; their data pointers and strides are not used at plan time
 * (they may be NULL) and may change between calls. */
typedef struct sdpa_attention_desc {
    size_t struct_size;          /* set by _init */
    double scale;                /* SDPA_SCALE_DEFAULT (default), SDPA_SCALE_MUP,
                                    or a value in [FLT_MIN, FLT_MAX] */
    sdpa_diagonal diagonal;      /* default TOP_LEFT; matters only with a window */
    int64_t diagonal_offset;     /* used with SDPA_DIAGONAL_EXPLICIT; default 0 */
    int64_t window_left;         /* -1 (default) = unbounded */
    int64_t window_right;        /* -1 (default) = unbounded; causal = (-1, 0) */
    double softcap;              /* 0 (default) = none, else c in
                                    [FLT_MIN, FLT_MAX] */
    sdpa_qk_norm qk_norm;        /* default NONE */
    double qk_norm_eps;          /* default 1e-6; in [FLT_MIN, FLT_MAX] */
    double stats_saturation;     /* p_max threshold for saturated rows, 0.99 */
    sdpa_forward_tensors tensors;
} sdpa_attention_desc;
#define SDPA_ATTENTION_DESC_SIZE_V1 SDPA_SIZE_THROUGH(sdpa_attention_desc, tensors)

/* Defaults as documented per field; all optional tensors absent. */
SDPA_API void sdpa_attention_desc_init(sdpa_attention_desc *desc);

/* Convenience: causal attention = window (-1, 0). */
SDPA_API void sdpa_attention_desc_set_causal(sdpa_attention_desc *desc,
                                             sdpa_diagonal diagonal);

/* ---- plans ----------------------------------------------------------------- */

/* Plan flags. */
#define SDPA_PLAN_BACKWARD 0x1u     /* also prepare the backward kernels */
#define SDPA_PLAN_NONDETERMINISTIC 0x2u /* allow atomics in the backward */

typedef struct sdpa_tile_config sdpa_tile_config; /* experimental, below */

typedef struct sdpa_plan_options {
    size_t struct_size;          /* set by _init */
    unsigned flags;              /* SDPA_PLAN_*; default 0 */
    int64_t workspace_limit;     /* bytes the plan may allocate for paths that
                                    materialise scores; SDPA_AUTO (default) =
                                    256 MiB; 0 = never materialise */
    const sdpa_tile_config *tile;/* experimental: force a configuration;
                                    NULL (default) = profile, else defaults */
} sdpa_plan_options;
#define SDPA_PLAN_OPTIONS_SIZE_V1 SDPA_SIZE_THROUGH(sdpa_plan_options, tile)

SDPA_API void sdpa_plan_options_init(sdpa_plan_options *options);

/* Validates `desc` completely (every field; messages name the field), asks the
 * backend whether it supports it, compiles kernels and allocates the plan's
 * workspace. `options` may be NULL. The plan borrows nothing from `desc`.
 * Returns SDPA_ERR_NULL, SDPA_ERR_SHAPE, SDPA_ERR_STRIDE, SDPA_ERR_DTYPE,
 * SDPA_ERR_EMPTY, SDPA_ERR_INVALID_ARG, SDPA_ERR_UNSUPPORTED, SDPA_ERR_BUILD,
 * SDPA_ERR_OUT_OF_MEMORY, SDPA_ERR_DEVICE. */
SDPA_API sdpa_status sdpa_plan_create(sdpa_context *ctx,
                                      const sdpa_attention_desc *desc,
                                      const sdpa_plan_options *options,
                                      sdpa_plan **out);
SDPA_API void sdpa_plan_destroy(sdpa_plan *plan);

/* Bytes of workspace the plan owns (beyond the caller's tensors). */
SDPA_API size_t sdpa_plan_workspace_size(const sdpa_plan *plan);

/* Enqueues the forward pass. The tensors must have the plan's dtypes, shapes
 * and presence (SDPA_ERR_SHAPE / SDPA_ERR_DTYPE otherwise); strides are
 * checked again. Device-buffer tensors avoid copies; host tensors are staged
 * and the call then waits for completion before returning; only the outputs'
 * own elements are written, never the bytes between them.
 * Aliasing: an output may not share memory with an input or another output
 * (SDPA_ERR_INVALID_ARG, the message names both) nor map two of its elements
 * to the same memory (SDPA_ERR_STRIDE). Views whose spans interleave but whose
 * elements are disjoint are fine: rows of [out, lse], packed QKV / dQKV. The
 * test is exact (docs/semantics.md, "Aliasing"); only a layout it cannot
 * settle within its step budget is refused as if it overlapped.
 * kv_len values in host memory outside [0, Skv] are SDPA_ERR_INVALID_ARG; in
 * a device buffer they are clamped to [0, Skv]. The f32 backends accumulate
 * unnormalised sums of v: `out` is finite and accurate when
 * Skv * max|v| <= FLT_MAX / 2; past that bound a column may overflow to
 * +-inf or NaN (other columns and rows are unaffected).
 * Allocates nothing for device-buffer tensors. */
SDPA_API sdpa_status sdpa_plan_forward(sdpa_plan *plan,
                                       const sdpa_forward_tensors *t);

/* Enqueues the backward pass. `fwd` are the forward's tensors, including its
 * `out` and `lse` (both required); `bwd` holds dout and the gradients. Needs
 * a plan created with SDPA_PLAN_BACKWARD (SDPA_ERR_INVALID_ARG otherwise).
 * Deterministic unless SDPA_PLAN_NONDETERMINISTIC was given. Aliasing as in
 * sdpa_plan_forward: the gradients are the outputs; out, lse and every other
 * tensor of `fwd` (except the unused stats) and dout are inputs. */
SDPA_API sdpa_status sdpa_plan_backward(sdpa_plan *plan,
                                        const sdpa_forward_tensors *fwd,
                                        const sdpa_backward_tensors *bwd);

/* One call: validates, builds (or reuses, from a small per-context cache) a
 * plan for desc, runs the forward and waits. For simple users. */
SDPA_API sdpa_status sdpa_attention_forward(sdpa_context *ctx,
                                            const sdpa_attention_desc *desc);

/* Combines n partial results over disjoint key sets exactly, by their LSE:
 * out = sum_i exp(lse_i - lse) out_i, lse = log sum_i exp(lse_i). Partial
 * outputs are (B,H,S,Dv) and LSEs (B,H,S,1) f32; partials with lse = -inf
 * contribute nothing; when all are -inf the row is 0 and lse -inf. `out`
 * (`lse`) may be exactly one of the partial outputs (LSEs): the same memory,
 * offset and strides. Otherwise the results may not share memory with a
 * partial or with each other (SDPA_ERR_INVALID_ARG) or map two elements to
 * one place, e.g. stride 0 (SDPA_ERR_STRIDE). Waits for completion. */
SDPA_API sdpa_status sdpa_merge(sdpa_context *ctx, int n,
                                const sdpa_tensor *outs, const sdpa_tensor *lses,
                                const sdpa_tensor *out, const sdpa_tensor *lse);

/* sdpa_merge for attention with sinks (since 0.2), which counts each sink
 * once: compute the partials WITHOUT tensors.sinks (a sink given to every
 * partial would be counted n times) and pass the sinks here, (1,H,1,1) f32
 * as in sdpa_forward_tensors (-inf: none). The sink is one more partial with
 * output 0 and lse = sink_h: lse = log(exp(sink_h) + sum_i exp(lse_i)),
 * out = sum_i exp(lse_i - lse) out_i; a row empty in every partial gets out
 * 0 and lse sink_h, as one call over all keys with the sinks gives. sinks
 * may be NULL (then it is sdpa_merge); it is an input, so the results may
 * not share memory with it. */
SDPA_API sdpa_status sdpa_merge_sinks(sdpa_context *ctx, int n,
                                      const sdpa_tensor *outs, const sdpa_tensor *lses,
                                      const sdpa_tensor *sinks,
                                      const sdpa_tensor *out, const sdpa_tensor *lse);

/* ---- devices ----------------------------------------------------------------- */

typedef struct sdpa_device_info {
    size_t struct_size;      /* set to sizeof before the call */
    sdpa_backend_kind backend;
    int index;
    char name[256];
    char vendor[128];
    char driver[128];        /* driver / platform version */
    int is_gpu;              /* 1 for GPUs, 0 for CPU devices */
    int compute_units;
    int64_t global_mem_bytes;
    int64_t local_mem_bytes; /* shared/local memory per work-group */
    int max_workgroup_size;
    int subgroup_size;       /* 0 if unknown */
    int fp16;                /* half arithmetic available */
    int storage16;           /* 16-bit storage available */
    char details[1024];      /* backend-specific capability summary; ends with
                                "profile family <key>" when the device has an
                                architecture family (docs/tuning.md) */
} sdpa_device_info;
#define SDPA_DEVICE_INFO_SIZE_V1 SDPA_SIZE_THROUGH(sdpa_device_info, details)

/* Whether a backend is compiled into this build (1) or not (0). A compiled-in
 * OpenCL or Vulkan backend still needs its loader at run time (see
 * sdpa_context_create). */
SDPA_API int sdpa_backend_compiled(sdpa_backend_kind kind);
/* Number of devices the backend sees now (0 when none, not compiled, or its
 * run-time library, libOpenCL.so.1 / libvulkan.so.1, cannot be loaded). */
SDPA_API sdpa_status sdpa_device_count(sdpa_backend_kind kind, int *count);
SDPA_API sdpa_status sdpa_device_get_info(sdpa_backend_kind kind, int index,
                                          sdpa_device_info *info);

/* ---- experimental ------------------------------------------------------------ */
#ifdef SDPA_EXPERIMENTAL

/* ---- tile parameters (experimental) ----
 * A kernel configuration is a set of parameters addressed by enum, as zstd's
 * compression parameters are (ZSTD_cParameter, ZSTD_CCtx_setParameter,
 * ZSTD_cParam_getBounds): set and read them with sdpa_tile_config_set / _get,
 * ask a backend which values it takes with sdpa_tile_param_get_bounds (the
 * bounds also carry the parameter's meaning on that backend: q_tile is query
 * rows per work-group on OpenCL, per CPU task on the cpu backend and per
 * invocation on Vulkan). Values are pinned and never reused; new parameters
 * take free numbers, so neither the enum nor the struct changes its ABI.
 * Numbers SDPA_TILE_BACKEND_FIRST.. are backend parameters, declared in the
 * backend's header (sdpa_opencl.h) and also found by name
 * (sdpa_tile_param_from_name); each number belongs to one backend. The
 * functions below use no context and are thread-safe. */
typedef enum sdpa_tile_param {
    SDPA_TILE_Q_TILE = 0,    /* query rows per unit of work (per backend) */
    SDPA_TILE_K_TILE = 1,    /* keys per inner tile */
    SDPA_TILE_WG_SIZE = 2,   /* work-group size (threads) */
    SDPA_TILE_VEC_WIDTH = 3, /* vector width of the inner loops */
    SDPA_TILE_STAGE_KV = 4,  /* 1 = stage K/V tiles in local/shared memory */
    SDPA_TILE_SPLIT_KV = 5,  /* number of key splits; 1 = no split */
    SDPA_TILE_UNFUSED = 6,   /* 1 = materialise the scores (OpenCL only) */
    SDPA_TILE_LANES = 7,     /* invocations sharing one query row (Vulkan) */
    /* 8..23: future core parameters; 24..31: backend parameters */
    SDPA_TILE_BACKEND_FIRST = 24
} sdpa_tile_param;
#define SDPA_TILE_PARAM_SLOTS 32 /* entries of sdpa_tile_config.value */

/* A kernel configuration: one value per sdpa_tile_param, SDPA_AUTO = the
 * backend decides (sdpa_tile_config_init sets every value to SDPA_AUTO).
 * Forced values are never clamped or rounded: a value outside the backend's
 * bounds, or a parameter the backend does not have, makes sdpa_plan_create
 * return SDPA_ERR_UNSUPPORTED with "<backend>: tile.<name> <value> is out of
 * range: must be SDPA_AUTO or lo..hi[, a multiple of m | , a power of two]"
 * (or "... has no such parameter (leave it SDPA_AUTO)"), the same on every
 * backend; AUTO contexts then fall back to the CPU. Limits of the device
 * (work-group size, local memory, registers) are checked by the backend with
 * their own messages. struct_size versions the array: the library reads
 * value[i] only where it lies within struct_size (smaller structs of older
 * headers read the rest as SDPA_AUTO); struct_size must cover at least the
 * first seven values (SDPA_TILE_UNFUSED). */
struct sdpa_tile_config {
    size_t struct_size;                /* set by _init */
    int value[SDPA_TILE_PARAM_SLOTS];  /* by sdpa_tile_param; use _set/_get */
};
#define SDPA_TILE_CONFIG_SIZE_V1 SDPA_SIZE_THROUGH(sdpa_tile_config, value[SDPA_TILE_UNFUSED])
SDPA_API void sdpa_tile_config_init(sdpa_tile_config *cfg);
/* Sets one parameter (any int; ranges are the backend's, checked at plan
 * creation). SDPA_ERR_NULL, or SDPA_ERR_INVALID_ARG when param is not a
 * parameter number or lies beyond cfg->struct_size. */
SDPA_API sdpa_status sdpa_tile_config_set(sdpa_tile_config *cfg, sdpa_tile_param param,
                                          int value);
/* The parameter's value; SDPA_AUTO when unset, beyond cfg->struct_size, not a
 * parameter number, or cfg is NULL. */
SDPA_API int sdpa_tile_config_get(const sdpa_tile_config *cfg, sdpa_tile_param param);

/* What one backend takes for one parameter besides SDPA_AUTO. */
typedef struct sdpa_tile_bounds {
    size_t struct_size;      /* set by the call */
    int lo, hi;              /* inclusive */
    int multiple;            /* > 1: the value must be a multiple of it */
    int pow2;                /* 1: the value must be a power of two */
    int default_value;       /* the backend's default, SDPA_AUTO when it is
                                derived from the device and the problem */
    const char *name;        /* the parameter's name, e.g. "q_tile" (static) */
    const char *description; /* its meaning on this backend (static) */
} sdpa_tile_bounds;
/* Fills *bounds for param on backend `kind` (compiled in; no device or
 * loader needed). Returns SDPA_ERR_NULL, SDPA_ERR_UNSUPPORTED when the
 * backend is not compiled in or has no such parameter (only SDPA_AUTO is
 * accepted then), SDPA_ERR_INVALID_ARG for a number that is no parameter. */
SDPA_API sdpa_status sdpa_tile_param_get_bounds(sdpa_backend_kind kind, sdpa_tile_param param,
                                                sdpa_tile_bounds *bounds);
/* The name of a parameter ("q_tile", "gemm_params", ...; the keys of
 * profile records), or NULL when no compiled-in backend has it. */
SDPA_API const char *sdpa_tile_param_name(sdpa_tile_param param);
/* The parameter called `name` (core or of a compiled-in backend):
 * SDPA_OK, SDPA_ERR_NULL, or SDPA_ERR_INVALID_ARG when none is. */
SDPA_API sdpa_status sdpa_tile_param_from_name(const char *name, sdpa_tile_param *param);

typedef struct sdpa_plan_info {
    size_t struct_size;      /* set to sizeof before the call */
    sdpa_backend_kind backend;
    char kernel[64];         /* "fused", "decode", "unfused", "reference" */
    char config[256];        /* the chosen parameters, human-readable */
    char source[64];         /* "profile", "shipped profile", "default", "forced";
                                a profile record of another device of the same
                                architecture family adds " (family <key>)"
                                (docs/tuning.md, "Profiles that travel") */
    sdpa_dtype compute_dtype;/* always f32 accumulation today */
    size_t workspace_bytes;
} sdpa_plan_info;
#define SDPA_PLAN_INFO_SIZE_V1 SDPA_SIZE_THROUGH(sdpa_plan_info, workspace_bytes)
SDPA_API sdpa_status sdpa_plan_get_info(const sdpa_plan *plan,
                                        sdpa_plan_info *info);


/* ---- tensor slots (experimental) ----
 * The tensors of sdpa_forward_tensors and sdpa_backward_tensors as a table,
 * in declaration order, so that tools map names (case-file keys, options) to
 * fields and learn each tensor's role, dtype and shape without listing them.
 * The library's own validation reads the same table. Thread-safe. */
typedef enum sdpa_slot_group {
    SDPA_SLOT_FORWARD = 0,  /* sdpa_forward_tensors: q, k, v, out, mask, ... */
    SDPA_SLOT_BACKWARD = 1, /* sdpa_backward_tensors: dout, dq, dk, dv, ... */
} sdpa_slot_group;

typedef struct sdpa_slot_info {
    size_t struct_size;  /* sizeof(sdpa_slot_info), set by the call */
    const char *name;    /* the field name, also the case-file key: "q",
                            "kv_len", "dq_gain" (static) */
    int output;          /* 1: the call writes it (forward: out, lse, stats;
                            backward: dq, dk, dv and the optional gradients) */
    int saved;           /* forward outputs the backward reads (out, lse) */
    int required;        /* 1: must be present (k and v: unless the call is
                            paged); 0: may be absent (dtype NONE) */
    sdpa_dtype dtype;    /* its dtype; SDPA_DTYPE_NONE = the dtype of q, or
                            with kv = 1 the K/V storage dtype */
    char axes[5];        /* the extent of each axis, one letter per axis:
                            B batch, Q query heads, K key/value heads,
                            s queries (Sq), k keys (Skv), D head dim,
                            V value dim (Dv), C SDPA_STAT_COUNT, 1 one,
                            P pages in the pool, G key slots per page,
                            T block-table entries per batch (max_pages) */
    int broadcast;       /* bit a set: axis a may also have extent 1 */
    int pair;            /* forward slot: index of its gradient in the
                            backward group, -1 when none; backward slot: the
                            forward slot it is the gradient of (and whose
                            dtype and axes it has) */
    size_t offset;       /* offsetof the field in its struct */
    int kv;              /* 1: dtype NONE means the K/V storage dtype (k, v,
                            k_pages, v_pages; dk, dv), which may differ from
                            q's */
    int paged;           /* 1: present exactly in a paged call (k_pages,
                            v_pages, block_table, whose presence makes the
                            call paged); -1: absent from a paged call (k, v;
                            dk, dv, the backward being unpaged); 0: either */
} sdpa_slot_info;

/* Number of slots in the group (0 for an unknown group). */
SDPA_API int sdpa_slot_count(sdpa_slot_group group);
/* Fills *info for slot `index` of the group. Returns SDPA_ERR_NULL (info
 * NULL) or SDPA_ERR_INVALID_ARG (unknown group, index out of range). */
SDPA_API sdpa_status sdpa_slot_get_info(sdpa_slot_group group, int index,
                                        sdpa_slot_info *info);
/* Index of the slot named `name` in the group, or -1. */
SDPA_API int sdpa_slot_find(sdpa_slot_group group, const char *name);
/* The tensor of slot `index` inside t (NULL when t is NULL or the index is
 * out of range). */
SDPA_API sdpa_tensor *sdpa_forward_tensors_get_slot(sdpa_forward_tensors *t, int index);
SDPA_API sdpa_tensor *sdpa_backward_tensors_get_slot(sdpa_backward_tensors *t, int index);

/* ---- tuning (experimental) ----
 * Tuning never starts implicitly: only sdpa_tune (and the sdpa-tune tool)
 * measures. Plans look the winner up in the profiles at creation. */

typedef struct sdpa_tune_progress {
    int done, total;          /* candidates measured / planned */
    double best_ms;           /* best time so far (INFINITY before the first) */
    double elapsed_s, budget_s;
    const char *current;      /* human-readable candidate being measured */
} sdpa_tune_progress;

typedef void (*sdpa_tune_progress_fn)(void *user, const sdpa_tune_progress *p);

typedef struct sdpa_tune_options {
    size_t struct_size;
    unsigned plan_flags;      /* SDPA_PLAN_BACKWARD: tune the backward too */
    double budget_s;          /* wall-clock budget; default 60 */
    int repeats;              /* timed repeats per candidate; default 5 */
    int warmup;               /* untimed runs per candidate; default 1 */
    int write_profile;        /* 1 (default) = record the winner in the profile */
    int dry_run;              /* 1 = list candidates only, measure nothing */
    uint64_t seed;            /* sampling seed; default 1 */
    sdpa_tune_progress_fn progress; /* optional, called after each candidate */
    void *progress_user;
    int verify_exhaustive;    /* 1 = after the budgeted search, measure every candidate it
                                 left out (beyond the budget), then time its winner, the
                                 sweep's fastest and the default interleaved: the
                                 result's verify_* fields (sdpa-tune --verify-exhaustive).
                                 Default 0 */
} sdpa_tune_options;
#define SDPA_TUNE_OPTIONS_SIZE_V1 SDPA_SIZE_THROUGH(sdpa_tune_options, progress_user)
SDPA_API void sdpa_tune_options_init(sdpa_tune_options *options);

typedef struct sdpa_tune_result {
    size_t struct_size;       /* set to sizeof before the call */
    char bucket[160];         /* the profile's shape bucket key */
    sdpa_tile_config best;    /* winner (the default when nothing beat it) */
    sdpa_tile_config fallback;/* the default configuration */
    char best_desc[256], default_desc[256];
    double best_ms, default_ms;
    int candidates, measured, rejected; /* rejected: wrong results or failed */
    int budget_exhausted;
    /* with options.verify_exhaustive (0 otherwise): */
    int verified;             /* 1 when the sweep and the interleaved timing ran */
    sdpa_tile_config sweep_best; /* the fastest candidate of the exhaustive sweep */
    char sweep_desc[256];     /* sweep_best, human-readable */
    double verify_tuned_ms, verify_sweep_ms, verify_default_ms; /* medians of the
                                 interleaved timing of best, sweep_best, fallback */
    double verify_noise;      /* the largest (q3 - q1) / median of those three */
} sdpa_tune_result;
#define SDPA_TUNE_RESULT_SIZE_V1 SDPA_SIZE_THROUGH(sdpa_tune_result, budget_exhausted)

/* Tunes the plan configuration for desc's shape bucket on ctx's device:
 * every candidate is first checked against the reference on a small ragged
 * input, then timed (warm-up, median of repeats; the two best re-measured
 * interleaved). Returns SDPA_ERR_BUDGET only if not even the default could be
 * measured within the budget. Writes the profile unless write_profile = 0. */
SDPA_API sdpa_status sdpa_tune(sdpa_context *ctx, const sdpa_attention_desc *desc,
                               const sdpa_tune_options *options,
                               sdpa_tune_result *result);

/* Profile file this context reads and writes (may not exist yet). */
SDPA_API const char *sdpa_context_profile_path(const sdpa_context *ctx);

/* Checks, before any tuning, that the profile can be written: creates the
 * profile directory if missing and creates and removes a probe file in it
 * (so a read-only mount is caught, also when running as root). SDPA_OK, or
 * SDPA_ERR_IO with a message naming the directory and the reason (the
 * native code is the errno). sdpa-tune calls it before spending its budget. */
SDPA_API sdpa_status sdpa_context_profile_writable(sdpa_context *ctx);

/* ---- shipped profiles (experimental) ----
 * Tuned profiles that come with libsdpa (data/profiles/ in the source tree),
 * read only, consulted after the user's profile. Plans look for them in this
 * folder, decided in this order (docs/tuning.md):
 *  - $SDPA_SHIPPED_PROFILE_DIR when set and not empty (read at every plan);
 *  - the source tree's data/profiles when the library runs uninstalled from
 *    its Meson build directory (the loaded libsdpa file, found with dladdr,
 *    or GetModuleFileNameW on Windows, lies in that directory): tools and
 *    programs run from build/ use them;
 *  - <datadir>/sdpa/profiles relative to the loaded library's folder (for
 *    example <libdir>/../share/sdpa/profiles; <bindir>/../share/... for the
 *    Windows DLL), when it exists: an install finds its own even after
 *    being moved;
 *  - else the configured <prefix>/<datadir>/sdpa/profiles (a static link
 *    into a program elsewhere, or a platform without dladdr). */
typedef struct sdpa_shipped_profiles_info {
    size_t struct_size;  /* set to sizeof before the call */
    char dir[4096];      /* the folder plans read now */
    char found_by[32];   /* which rule chose it: "SDPA_SHIPPED_PROFILE_DIR",
                            "build tree", "library location", "configured prefix" */
    int exists;          /* 1 when dir is a folder */
    int files;           /* profile files (*.jsonl) in it */
    int records;         /* valid records in them */
    int matching;        /* records whose device (backend, vendor, name, compute
                            units) is one the compiled-in backends list now:
                            the records plans on this machine can use */
    int stale;           /* of those, tuned with another driver or other kernel
                            sources (used, with one WARN, until retuned) */
} sdpa_shipped_profiles_info;
#define SDPA_SHIPPED_PROFILES_INFO_SIZE_V1 SDPA_SIZE_THROUGH(sdpa_shipped_profiles_info, stale)

/* Fills *info: the shipped-profile folder and what it holds for this
 * machine. Lists the devices of every compiled-in backend (as
 * sdpa_device_count does) and reads every profile file in the folder; a
 * missing folder or unreadable file counts as empty. Thread-safe. Returns
 * SDPA_ERR_NULL when info is NULL. */
SDPA_API sdpa_status sdpa_shipped_profiles_get_info(sdpa_shipped_profiles_info *info);

/* ---- device peak (experimental) ----
 * The fp32 FMA throughput of the context's device, for "fraction of peak"
 * figures (sdpa-bench). Measured once per device by a built-in micro-benchmark
 * (CPU: independent FMA chains at the vector width of the kernel set the
 * context runs, AVX-512, AVX2 or the portable loops' 4 lanes, so `% peak` is
 * against the kernels' own width; reference: the widest ISA; both on the
 * context's thread count; OpenCL: a kernel of floatN FMA chains timed with
 * profiling events; Vulkan: a compute shader timed with timestamp queries, or
 * the host clock around a fence where timestamps are missing), best of a few
 * runs, about 0.2-0.5 s plus a first kernel build. The result is cached as one
 * JSON line per device in <profile dir>/peak.jsonl (the directory of
 * sdpa_context_profile_path), keyed like profiles (backend, vendor, device,
 * compute units) plus the thread count and kernel set for the CPU backends; a record made
 * with another driver version is stale and re-measured. Damaged lines are
 * skipped with one WARN; an unwritable directory costs only the caching (one
 * WARN). */
typedef struct sdpa_peak_info {
    size_t struct_size;  /* set to sizeof before the call */
    double gflops;       /* fp32 GFLOP/s, 2 flops per FMA lane */
    char method[64];     /* how it was measured, e.g. "opencl fma kernel float16",
                            "cpu avx512 2 threads" */
    int cached;          /* 1 = read from the profile dir, 0 = measured now */
} sdpa_peak_info;
#define SDPA_PEAK_INFO_SIZE_V1 SDPA_SIZE_THROUGH(sdpa_peak_info, cached)

/* Fills *info with the peak of ctx's device (the primary backend's device,
 * not the AUTO CPU fallback): the cached record, or a measurement that is then
 * cached. refresh = 1 measures again and replaces the record. Uses the context
 * like any other call (one thread at a time); blocks while measuring.
 * Returns SDPA_ERR_NULL (ctx or info NULL), SDPA_ERR_UNSUPPORTED (the
 * backend has no micro-benchmark), SDPA_ERR_BUILD, SDPA_ERR_DEVICE, SDPA_ERR_OUT_OF_MEMORY
 * (the measurement failed). Caching problems are never errors. */
SDPA_API sdpa_status sdpa_context_peak(sdpa_context *ctx, int refresh, sdpa_peak_info *info);

/* ---- read bandwidth (experimental) ----
 * The read bandwidth of the memory the context's device streams K and V
 * from, for "fraction of bandwidth" figures of memory-bound calls (decode:
 * sdpa-bench's `% bw`). CPU and reference backends: a STREAM-like read loop
 * (vector loads of the widest ISA summed, nothing written) over a buffer of
 * 4x the last-level cache (at least 64 MiB, at most 1 GiB), split over the
 * context's threads, best of a few passes; about 0.3-1 s with first-touching
 * the buffer. Cached in peak.jsonl beside the FMA peak (metric "read"), keyed
 * by device and thread count, with the same staleness and damage rules.
 * OpenCL and Vulkan have no probe yet (SDPA_ERR_UNSUPPORTED). */
typedef struct sdpa_bandwidth_info {
    size_t struct_size;  /* set to sizeof before the call */
    double gbps;         /* 1e9 bytes read per second, all threads together */
    char method[64];     /* how it was measured, e.g. "cpu read 2 threads 1024 MiB" */
    int cached;          /* 1 = read from the profile dir, 0 = measured now */
} sdpa_bandwidth_info;
#define SDPA_BANDWIDTH_INFO_SIZE_V1 SDPA_SIZE_THROUGH(sdpa_bandwidth_info, cached)

/* Fills *info with the read bandwidth of ctx's device (the primary backend's,
 * as sdpa_context_peak): the cached record, or a measurement that is then
 * cached; refresh = 1 measures again. Returns SDPA_ERR_NULL (ctx or info
 * NULL), SDPA_ERR_UNSUPPORTED (no probe for the backend),
 * SDPA_ERR_OUT_OF_MEMORY (the buffer or threads). Caching problems are never
 * errors. */
SDPA_API sdpa_status sdpa_context_bandwidth(sdpa_context *ctx, int refresh,
                                            sdpa_bandwidth_info *info);

/* ---- read time after a pause (experimental) ----
 * A reference for calls made after a pause (sdpa-bench --read-ref): how long
 * the context's threads take to read `bytes` of host memory once when each
 * read follows a pause of pause_ms, as an application that calls attention
 * between other work sees it. CPU and reference backends: one buffer of
 * `bytes` (rounded up to 512 bytes per thread), split into one slice per
 * thread of the context; the threads are started once per call and each
 * first-touches (writes) its own slice, untimed. Then, `repeat` times: each
 * thread sleeps pause_ms itself (nothing when 0), the threads meet at a spin
 * barrier, and the time runs from the last thread's arrival there to the
 * last thread's end of its slice (the read loop of sdpa_context_bandwidth:
 * vector loads summed, nothing written). So a sample contains the memory
 * hierarchy's cold start after the pause (caches and TLBs another task or
 * the idle CPU left cold; a buffer within the last-level cache is read from
 * it back to back) but no thread wake-up latency, which a library call
 * after a pause does pay. The pause is nanosleep's, so it has the system
 * timer's granularity (on Windows 15.6 ms unless a process asked for less).
 * Nothing is cached; the call blocks for about repeat * (pause_ms + the
 * read) plus first-touching the buffer. OpenCL and Vulkan:
 * SDPA_ERR_UNSUPPORTED. */
typedef struct sdpa_read_time_info {
    size_t struct_size;  /* set to sizeof before the call */
    double median_ms;    /* median of the `repeat` reads, ms */
    double min_ms, max_ms;
    size_t bytes;        /* bytes each read covers (bytes rounded up) */
    int threads;         /* threads that read */
    int repeat;          /* reads timed */
    char method[64];     /* e.g. "cpu read avx512 2 threads" */
} sdpa_read_time_info;
#define SDPA_READ_TIME_INFO_SIZE_V1 SDPA_SIZE_THROUGH(sdpa_read_time_info, method)

/* Measures as above and fills *info. bytes: 1 up to half the machine's
 * memory; pause_ms: 0 to 60000 (ms, finite); repeat: 1 to 1000000. Uses
 * the context like any other call (one thread at a time). Returns
 * SDPA_ERR_NULL (ctx or info NULL), SDPA_ERR_INVALID_ARG (bytes 0 or beyond
 * what a buffer can hold, pause_ms negative, NaN or above 60000, repeat out
 * of range, struct_size below v1), SDPA_ERR_UNSUPPORTED (no reference for
 * the backend), SDPA_ERR_OUT_OF_MEMORY (bytes above half the machine's
 * memory, the buffer or the threads). */
SDPA_API sdpa_status sdpa_context_read_time(sdpa_context *ctx, size_t bytes, double pause_ms,
                                            int repeat, sdpa_read_time_info *info);

#endif /* SDPA_EXPERIMENTAL */

#ifdef __cplusplus
}
#endif
#endif /* SDPA_H */
