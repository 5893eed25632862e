/*
 * vk_internal.h — private types of the Vulkan backend: the per-context state
 * (instance, device, queue, probe results, pipeline cache, shared layouts),
 * buffers, plans, the parameter block shared with the shaders, and the
 * functions the backend's files export to each other (sdpa__vk_ prefix).
 *
 * File map: vk_device.c (instance, enumeration, probe, context), vk_alloc.c
 * (device-memory blocks and the sub-allocator), vk_buffer.c (buffers,
 * staging copies), vk_pcache.c (pipeline-cache persistence),
 * vk_pipeline.c (SPIR-V lookup, layouts, pipelines with specialization
 * constants), vk_plan.c (supports, plans, workspace), vk_dispatch.c (forward,
 * backward, finish), vk_pack.c (the packed descriptor layout), vk_spirv_patch.c
 * (float-controls request), vk_persona.c (test-only personas), vk_backend.c
 * (the function table and interop).
 */
#ifndef SDPA_VK_INTERNAL_H
#define SDPA_VK_INTERNAL_H

#include "internal.h"
#include "device_table.h"

#include <vulkan/vulkan.h>

#include "vk_api.h"

/* Host/shader constants (tensor slots, bindings, feature bits, records):
 * shaders/common/sdpa_shared.h, included by common.glsl as well. The names
 * below are the backend's spellings of the same values. */
#include "../../../shaders/common/sdpa_shared.h"

enum {
    SDPA__VK_T_Q = SDPA_VK_T_Q, SDPA__VK_T_K = SDPA_VK_T_K, SDPA__VK_T_V = SDPA_VK_T_V,
    SDPA__VK_T_OUT = SDPA_VK_T_OUT, SDPA__VK_T_MASK = SDPA_VK_T_MASK,
    SDPA__VK_T_BIAS = SDPA_VK_T_BIAS, SDPA__VK_T_KVLEN = SDPA_VK_T_KVLEN,
    SDPA__VK_T_QGAIN = SDPA_VK_T_QGAIN, SDPA__VK_T_KGAIN = SDPA_VK_T_KGAIN,
    SDPA__VK_T_TEMP = SDPA_VK_T_TEMP, SDPA__VK_T_LSE = SDPA_VK_T_LSE,
    SDPA__VK_T_STATS = SDPA_VK_T_STATS, SDPA__VK_T_DOUT = SDPA_VK_T_DOUT,
    SDPA__VK_T_DQ = SDPA_VK_T_DQ, SDPA__VK_T_DK = SDPA_VK_T_DK, SDPA__VK_T_DV = SDPA_VK_T_DV,
    SDPA__VK_T_DQG = SDPA_VK_T_DQG, SDPA__VK_T_DKG = SDPA_VK_T_DKG,
    SDPA__VK_T_DT = SDPA_VK_T_DT, SDPA__VK_T_ALIBI = SDPA_VK_T_ALIBI,
    SDPA__VK_T_SINKS = SDPA_VK_T_SINKS, SDPA__VK_T_BTAB = SDPA_VK_T_BTAB,
    SDPA__VK_T_DSINKS = SDPA_VK_T_DSINKS,
    SDPA__VK_T_COUNT = SDPA_VK_T_COUNT,
    SDPA__VK_B_WS = SDPA_VK_B_WS,
    SDPA__VK_B_PARAMS = SDPA_VK_B_PARAMS,
    SDPA__VK_B_COUNT = SDPA_VK_B_COUNT
};

#define SDPA__VK_F_MASK ((unsigned)SDPA_VK_F_MASK)
#define SDPA__VK_F_BIAS ((unsigned)SDPA_VK_F_BIAS)
#define SDPA__VK_F_KVLEN ((unsigned)SDPA_VK_F_KVLEN)
#define SDPA__VK_F_QGAIN ((unsigned)SDPA_VK_F_QGAIN)
#define SDPA__VK_F_KGAIN ((unsigned)SDPA_VK_F_KGAIN)
#define SDPA__VK_F_TEMP ((unsigned)SDPA_VK_F_TEMP)
#define SDPA__VK_F_LSE ((unsigned)SDPA_VK_F_LSE)
#define SDPA__VK_F_STATS ((unsigned)SDPA_VK_F_STATS)
#define SDPA__VK_F_SOFTCAP ((unsigned)SDPA_VK_F_SOFTCAP)
#define SDPA__VK_F_SPLIT ((unsigned)SDPA_VK_F_SPLIT)
#define SDPA__VK_F_NORMED ((unsigned)SDPA_VK_F_NORMED)
#define SDPA__VK_F_ALIBI ((unsigned)SDPA_VK_F_ALIBI)
#define SDPA__VK_F_SINKS ((unsigned)SDPA_VK_F_SINKS)
#define SDPA__VK_F_PAGED ((unsigned)SDPA_VK_F_PAGED)

/* std140 parameter block; layout mirrors common.glsl's Params. */
typedef struct sdpa__vk_params {
    int32_t shape0[4];  /* B, Hq, Hkv, Sq */
    int32_t shape1[4];  /* Skv, D, Dv, group */
    int32_t band[4];    /* diagonal, offset, window left, right */
    int32_t misc[4];    /* nsplit, split_len, rows, kvrows */
    int32_t rflags[4];  /* write dq_gain, dk_gain, dtemperature, dsinks */
    int32_t feat[4];    /* SDPA__VK_F_* bits, qk_norm mode, 0, 0 */
    int32_t ext[4];     /* page size, pool pages, ALiBi's EXPLICIT diagonal offset, 0 */
    float fpar[4];      /* sdpa__vk_plan.fpar */
    uint32_t ws0[4];    /* qn, kn, rowstats, partials */
    uint32_t ws1[4];    /* dvec, dqg rows, dkg rows, dt rows */
    uint32_t toff[(SDPA__VK_T_COUNT + 3) / 4][4];
    uint32_t tstride[SDPA__VK_T_COUNT][4];
} sdpa__vk_params;

/* Capabilities from the probe (after any test masking). */
typedef struct sdpa__vk_caps {
    uint32_t api_version;
    uint32_t subgroup_size;
    uint32_t subgroup_ops;
    uint32_t max_shared;
    uint32_t max_wg;
    uint32_t max_groups[3];
    uint64_t max_storage_range;
    bool storage16;
    bool fp16;
    bool loop_limited;   /* llvmpipe: 65535 loop iterations per invocation */
    uint32_t max_storage_buffers; /* per stage and per set, the smaller; 0: unknown */
    bool packed;         /* fewer than the wide layout needs: packed layout */
    bool float_controls; /* SignedZeroInfNanPreserve for 32-bit floats requested */
    /* SDPA__VK_DENORM_* widths every module requests DenormPreserve for
     * (vk_spirv_patch.c): 16, plus those the device's
     * denormBehaviorIndependence ties to 16; nonzero only where the device
     * guarantees them (shaderDenormPreserveFloat16 ...), so 16-bit
     * subnormals survive every f16 conversion: fwd_fa2h needs it */
    unsigned denorm_widths;
    uint32_t driver_id;  /* VkDriverId, 0 when unknown (vk_vendor.c) */
    sdpa__device_defaults dev; /* vendor defaults table: kernel class, defaults */
    uint32_t device_type; /* VkPhysicalDeviceType (a persona may say GPU) */
} sdpa__vk_caps;

/* Storage buffers of the wide layout (every tensor slot and the workspace). */
#define SDPA__VK_WIDE_STORAGE (SDPA_VK_T_COUNT + 1)

/* llvmpipe's per-invocation loop budget (LP_MAX_TGSI_LOOP_ITERATIONS is
 * 65535, shared by all loops of a shader); we keep a margin. */
#define SDPA__VK_LOOP_BUDGET 60000

/* Specialization constants every pipeline receives (ids 0..10, common.glsl,
 * fwd.comp, fwd_rows.comp, fwd_fa2.comp, kv.glsl; vk_pipeline.c). */
#define SDPA__VK_MAX_SPEC 11

struct sdpa__vk_block;          /* vk_alloc.c: one VkDeviceMemory block */

typedef struct sdpa__vk_state {
    sdpa_context *ctx;          /* for logging from the validation callback */
    bool owns_device;           /* false for interop contexts */
    VkInstance instance;
    VkPhysicalDevice phys;
    VkDevice device;
    uint32_t queue_family;
    VkQueue queue;
    VkPhysicalDeviceProperties props;
    VkPhysicalDeviceMemoryProperties mem_props;
    sdpa__vk_caps caps;
    VkDebugUtilsMessengerEXT messenger;
    int validation_errors;      /* counted by the debug callback */
    int validation_warnings;
    VkCommandPool cmd_pool;
    VkDescriptorSetLayout set_layout;
    VkPipelineLayout pipe_layout;
    VkPipelineCache pcache;
    size_t pcache_saved_size;   /* size last written, to skip equal writes */
    char pcache_path[1024];     /* "" = not persisted */
    void *dummy;                /* small buffer bound to absent tensors */
    struct sdpa__vk_block *blocks; /* device-memory blocks (vk_alloc.c) */
    int block_count;
    VkPipelineCreateFlags pipeline_flags; /* 0; the static GPU gate's tool asks for
                                           * statistics (tools/internal) */
} sdpa__vk_state;

extern const sdpa__backend sdpa__backend_vulkan;

typedef struct sdpa__vk_buffer {
    VkBuffer buffer;
    VkDeviceMemory memory;      /* the block's memory; VK_NULL_HANDLE for wrapped buffers */
    struct sdpa__vk_block *block; /* NULL for wrapped buffers */
    VkDeviceSize offset;        /* bind offset in the block */
    VkDeviceSize range_start, range_size; /* range taken from the block (with pad) */
    void *mapped;               /* block mapping + offset, or NULL (staging) */
    size_t size;
    bool owned;                 /* created by us (false: wrapped app buffer) */
} sdpa__vk_buffer;

/* Pipelines a plan owns. */
enum {
    SDPA__VK_P_QKNORM = 0, SDPA__VK_P_FWD, SDPA__VK_P_COMBINE,
    SDPA__VK_P_STATS, SDPA__VK_P_BWD_DQ, SDPA__VK_P_BWD_DKV,
    SDPA__VK_P_BWD_REDUCE, SDPA__VK_P_COUNT
};

typedef struct sdpa__vk_plan {
    sdpa__problem p;
    unsigned flags;             /* SDPA_PLAN_* */
    unsigned spec_flags;        /* SDPA__VK_F_* */
    float fpar[4];              /* the score's and statistics' scalars (vk_plan.c) */
    int wg_size, k_tile, nsplit, split_len;
    int stage_kv;               /* 1: fwd.comp stages K/V tiles in shared memory */
    int rows;                   /* > 1: fwd_rows.comp, query rows per invocation;
                                 * with lanes > 0: rows per lane group */
    int lanes;                  /* > 0: fwd_fa2.comp with lanes invocations per row */
    bool fa2_shared_reduce;     /* fwd_fa2sh: no subgroup shuffle on the device */
    bool fa2_f16;               /* fwd_fa2h(sh): f16 storage, shaderFloat16 and f16
                                 * denormals guaranteed (caps.denorm_widths): q in
                                 * f16 registers, products formed exactly in f32 */
    /* the backward's own configuration: lanes > 0 runs bwd_fa2_dq.comp and
     * bwd_fa2_dkv.comp (GPU class) with these; 0 runs bwd_dq/bwd_dkv.comp
     * with the plan's wg_size and k_tile (sdpa__vk_bwd_view) */
    struct { int lanes, rows, wg_size, k_tile; bool shared_reduce; } bwd;
    bool packed;                /* packed descriptor layout (caps.packed, vk_pack.c) */
    int kv_type;                /* SDPA_VK_KV_*: K/V storage (kv.glsl, spec constant 10) */
    sdpa__vk_buffer *pack;      /* packed layout: this call's tensors (vk_pack.c) */
    char source[64];
    VkPipeline pipes[SDPA__VK_P_COUNT];
    VkDescriptorPool desc_pool;
    VkDescriptorSet desc_set;
    VkCommandBuffer cmd;
    VkFence fence;
    bool pending;               /* cmd submitted, fence not yet waited */
    sdpa__vk_buffer *params;    /* host-visible uniform block */
    sdpa__vk_buffer *ws;        /* workspace (f32) */
    size_t ws_bytes;
    uint32_t ws0[4], ws1[4];
} sdpa__vk_plan;

/* vk_plan.c: invocations of the plan's forward dispatch (one per row and
 * key split, or per q_tile rows of a KV slab and split with fwd_rows.comp,
 * or wg_size per block of rows and split with fwd_fa2.comp) */
uint64_t sdpa__vk_fwd_invocations(const sdpa__vk_plan *pl);
/* vk_plan.c: the plan as its backward pipelines see it (view = *pl with
 * lanes, rows, wg_size, k_tile and the reduction variant of pl->bwd when
 * the GPU-class backward runs; lanes 0 otherwise): what their pipelines are
 * created, specialised and dispatched with; and the invocations of the
 * backward dispatch pipe (SDPA__VK_P_BWD_DQ or _DKV) for such a view. */
void sdpa__vk_bwd_view(const sdpa__vk_plan *pl, sdpa__vk_plan *view);
uint64_t sdpa__vk_bwd_invocations(const sdpa__vk_plan *view, int pipe);
/* vk_plan.c: whether the device gets the GPU-class shaders (fwd_fa2.comp by
 * default); one function, so a vendor table can replace it. */
bool sdpa__vk_gpu_class(const sdpa__vk_caps *caps);

/* vk_device.c */
sdpa_status sdpa__vk_device_count(int *count);
sdpa_status sdpa__vk_device_info(int index, sdpa_device_info *info);
sdpa_status sdpa__vk_context_init(sdpa_context *ctx, int device_index, void **state);
void sdpa__vk_context_free(sdpa_context *ctx, void *state);
/* Second half of context setup shared with interop: probe, pools, layouts,
 * pipeline cache, dummy buffer. */
sdpa_status sdpa__vk_state_setup(sdpa_context *ctx, sdpa__vk_state *s);
void sdpa__vk_probe(VkPhysicalDevice phys, sdpa__vk_caps *caps,
                    VkPhysicalDeviceProperties *props);
/* vk_vendor.c: the vendor defaults table's answer for a device (pure), and
 * caps->driver_id + caps->dev filled from phys (called by sdpa__vk_probe). */
void sdpa__vk_device_defaults(const VkPhysicalDeviceProperties *pr, uint32_t driver_id,
                              sdpa__device_defaults *out);
void sdpa__vk_classify(VkPhysicalDevice phys, const VkPhysicalDeviceProperties *pr,
                       sdpa__vk_caps *caps);
/* Whether caps' device gets GPU-style shaders (kernel class not cpu-style). */
#define SDPA__VK_GPU_STYLE(caps) ((caps)->dev.kclass != SDPA__KCLASS_CPU)
/* Maps a VkResult to a status (OOM, device lost, else `otherwise`). */
sdpa_status sdpa__vk_status(VkResult r, sdpa_status otherwise);
const char *sdpa__vk_result_name(VkResult r);

/* vk_alloc.c: carves memory of `type` for b->buffer from a block (a new one
 * when none has room), binds it and sets b->block, memory, offset, mapped. */
sdpa_status sdpa__vk_alloc_bind(sdpa_context *ctx, sdpa__vk_state *s, sdpa__vk_buffer *b,
                                const VkMemoryRequirements *req, uint32_t type);
/* Returns b's range (after its VkBuffer is destroyed); no-op when unbound. */
void sdpa__vk_alloc_release(sdpa__vk_state *s, sdpa__vk_buffer *b);
/* Frees every block (context teardown, after all buffers). */
void sdpa__vk_alloc_destroy_all(sdpa__vk_state *s);

/* vk_buffer.c */
sdpa_status sdpa__vk_buffer_alloc(sdpa_context *ctx, void *state, size_t bytes, void **handle);
void sdpa__vk_buffer_free(sdpa_context *ctx, void *state, void *handle);
sdpa_status sdpa__vk_buffer_write(sdpa_context *ctx, void *state, void *handle, size_t offset,
                                  const void *src, size_t bytes);
sdpa_status sdpa__vk_buffer_read(sdpa_context *ctx, void *state, void *handle, size_t offset,
                                 void *dst, size_t bytes);
/* Allocation with an explicit usage (the uniform block needs UNIFORM). */
sdpa_status sdpa__vk_buffer_create(sdpa_context *ctx, sdpa__vk_state *s, size_t bytes,
                                   VkBufferUsageFlags usage, bool want_mapped,
                                   sdpa__vk_buffer **out);
void sdpa__vk_buffer_destroy(sdpa__vk_state *s, sdpa__vk_buffer *b);

/* Descriptor bindings of the context's layout (wide or packed). */
static inline uint32_t sdpa__vk_binding_count(const sdpa__vk_state *s)
{
    return s->caps.packed ? SDPA_VK_PK_B_COUNT : SDPA_VK_B_COUNT;
}
static inline uint32_t sdpa__vk_params_binding(const sdpa__vk_state *s)
{
    return s->caps.packed ? SDPA_VK_PK_B_PARAMS : SDPA_VK_B_PARAMS;
}

/* vk_pack.c: packed layout. Groups the call's tensors by buffer, places
 * each group's byte span in the plan's pack buffer (grown as needed) and
 * returns each tensor's element offset there; records the copies in (before
 * the dispatches) and out again (groups holding a written tensor). */
typedef struct sdpa__vk_pack_job {
    int n;
    struct {
        const sdpa__vk_buffer *src;
        VkDeviceSize lo, hi, dst; /* source span [lo, hi), its offset in the pack */
        bool written;
    } g[SDPA_VK_T_COUNT];
} sdpa__vk_pack_job;
/* refs[t] (NULL or no mem: absent), esize[t] bytes per element (block
 * types: 1, indexed in bytes), last[t] the index of t's last element in its
 * buffer, written[t]; base[t] = t's first element's index in its buffer on
 * entry, in the pack on return. */
sdpa_status sdpa__vk_pack_prepare(sdpa_context *ctx, sdpa__vk_state *s, sdpa__vk_plan *pl,
                                  const sdpa__ref *const *refs, const size_t *esize,
                                  const uint64_t *last, const bool *written, uint64_t *base,
                                  sdpa__vk_pack_job *job);
void sdpa__vk_pack_copy_in(VkCommandBuffer cb, const sdpa__vk_plan *pl,
                           const sdpa__vk_pack_job *job);
void sdpa__vk_pack_copy_out(VkCommandBuffer cb, const sdpa__vk_plan *pl,
                            const sdpa__vk_pack_job *job);

/* vk_dispatch.c: one global memory barrier. */
void sdpa__vk_barrier(VkCommandBuffer cb, VkPipelineStageFlags src, VkAccessFlags sa,
                      VkPipelineStageFlags dst, VkAccessFlags da);

/* Float-control requests a module can carry (vk_spirv_patch.c):
 * SignedZeroInfNanPreserve 32, DenormPreserve 16 / 32 / 64. */
#define SDPA__VK_INF_NAN_32 1u
#define SDPA__VK_DENORM_16 2u
#define SDPA__VK_DENORM_32 4u
#define SDPA__VK_DENORM_64 8u

/* vk_spirv_patch.c: *patched = a malloc'd copy of the SPIR-V module with
 * the float controls in `modes` (SDPA__VK_INF_NAN_32 | SDPA__VK_DENORM_*)
 * requested (capabilities, extension, execution modes): returns 1; 0
 * (nothing done) when modes is 0, the module is malformed or it already
 * declares one of those capabilities; -1 when out of memory. */
int sdpa__vk_spirv_float_controls(const uint32_t *code, size_t size, unsigned modes,
                                  uint32_t **patched, size_t *out_size);

/* vk_persona.c: test-only personas (SDPA_TEST_PERSONA=vk-...); wraps the
 * device queries of the loader table; called at instance creation. */
void sdpa__vk_persona_apply(void);

/* vk_pcache.c */
sdpa_status sdpa__vk_pcache_open(sdpa_context *ctx, sdpa__vk_state *s);
void sdpa__vk_pcache_save(sdpa_context *ctx, sdpa__vk_state *s);

/* vk_pipeline.c */
sdpa_status sdpa__vk_layouts_create(sdpa_context *ctx, sdpa__vk_state *s);
void sdpa__vk_layouts_destroy(sdpa__vk_state *s);
/* A compute pipeline from SPIR-V code: shader module, specialization
 * constants 0..nspec-1 (nspec <= 8) from spec[], the given layout and the
 * context's pipeline cache; failures are SDPA_ERR_BUILD / device statuses
 * naming `name`. The module is destroyed again; *out is VK_NULL_HANDLE on
 * failure. Used for the attention shaders and the peak shader. */
sdpa_status sdpa__vk_compute_pipeline(sdpa_context *ctx, const sdpa__vk_state *s,
                                      const uint32_t *code, size_t size,
                                      VkPipelineLayout layout, const uint32_t *spec,
                                      uint32_t nspec, const char *name, VkPipeline *out);
/* The embedded SPIR-V of a plan's pipeline `name` ("fwd" runs fwd_rows with
 * plan->rows > 1): its file name <shader>_<dtype>.spv in file, its code
 * (NULL when not embedded) and *size in bytes. */
const uint32_t *sdpa__vk_spirv_embedded(const char *name, sdpa_dtype dtype,
                                        const sdpa__vk_plan *plan, char *file,
                                        size_t file_size, size_t *size);
/* The specialization constants (ids 0..SDPA__VK_MAX_SPEC-1) of plan's pipelines. */
void sdpa__vk_spec_constants(const sdpa__vk_plan *plan, uint32_t spec[SDPA__VK_MAX_SPEC]);
/* Compute pipeline for shader `name` ("fwd", ...) in the dtype's variant. */
sdpa_status sdpa__vk_pipeline_create(sdpa_context *ctx, sdpa__vk_state *s,
                                     const char *name, sdpa_dtype dtype,
                                     const sdpa__vk_plan *plan, VkPipeline *out);

/* vk_plan.c */
sdpa_status sdpa__vk_supports(sdpa_context *ctx, void *state, const sdpa__problem *p,
                              unsigned plan_flags);
/* The configuration plan_create chooses on a device with capabilities caps
 * (no device needed; tools/internal/sdpa-gpu-config.c): pl's p, flags, tile
 * fields and spec_flags; failures recorded on ctx (which may be NULL). */
sdpa_status sdpa__vk_plan_config(sdpa_context *ctx, const sdpa__vk_caps *caps,
                                 const sdpa__problem *p, const sdpa_plan_options *options,
                                 sdpa__vk_plan *pl);
sdpa_status sdpa__vk_plan_create(sdpa_context *ctx, void *state, const sdpa__problem *p,
                                 const sdpa_plan_options *options, void **plan_state);
void sdpa__vk_plan_free(sdpa_context *ctx, void *state, void *plan_state);
size_t sdpa__vk_plan_workspace(const void *plan_state);
void sdpa__vk_plan_describe(const void *plan_state, sdpa_plan_info *info);
/* Forced tile ranges of the backend table (vk_plan.c). */
#define SDPA__VK_TILE_PARAMS 7 /* entries of sdpa__vk_tile_params (vk_plan.c) */
extern const sdpa__tile_param_info sdpa__vk_tile_params[SDPA__VK_TILE_PARAMS];
/* Tuning slots: default configuration, candidate space, shader hash. */
sdpa_status sdpa__vk_default_tile(sdpa_context *ctx, void *state, const sdpa__problem *p,
                                  unsigned flags, const sdpa_tile_config *forced,
                                  sdpa_tile_config *tile);
int sdpa__vk_tile_candidates(sdpa_context *ctx, void *state, const sdpa__problem *p, unsigned flags,
                             sdpa_tile_config *out, int max);
const char *sdpa__vk_source_hash(void);
/* Waits for the plan's previous submission. */
sdpa_status sdpa__vk_plan_wait(sdpa_context *ctx, sdpa__vk_state *s, sdpa__vk_plan *pl);

/* vk_dispatch.c */
sdpa_status sdpa__vk_forward(sdpa_context *ctx, void *state, void *plan_state,
                             const sdpa__problem *p, const sdpa__fwd_args *a);
sdpa_status sdpa__vk_backward(sdpa_context *ctx, void *state, void *plan_state,
                              const sdpa__problem *p, const sdpa__fwd_args *a,
                              const sdpa__bwd_args *g);
sdpa_status sdpa__vk_finish(sdpa_context *ctx, void *state);

/* vk_peak.c: measure_peak slot, times shaders/vulkan/peak.comp. */
sdpa_status sdpa__vk_measure_peak(sdpa_context *ctx, void *state, double seconds, double *gflops,
                                  char *method, size_t method_len);

/* Test hooks (tests/test_vulkan.c): validation messages counted on the
 * context's state since it was created; -1 when ctx is not a Vulkan context. */
int sdpa__vk_validation_error_count(sdpa_context *ctx);
/* 1 when the validation layer and its messenger are active on ctx. */
int sdpa__vk_validation_active(sdpa_context *ctx);
/* 1 when ctx uses the packed descriptor layout (vk_pack.c), 0 when the wide
 * one; -1 when ctx is not a Vulkan context. */
int sdpa__vk_packed_layout(sdpa_context *ctx);
/* Number of VkDeviceMemory blocks alive on ctx (vk_alloc.c); -1 when ctx is
 * not a Vulkan context. */
int sdpa__vk_memory_block_count(sdpa_context *ctx);

#endif /* SDPA_VK_INTERNAL_H */
