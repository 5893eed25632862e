/*
 * common.glsl — what every libsdpa compute shader shares: the descriptor
 * bindings (one layout for all pipelines), the parameter block, the
 * specialization constants, storage-type load/store helpers and indexing.
 *
 * Invariants: tensor slots, bindings, feature bits and record layouts come
 * from shaders/common/sdpa_shared.h (shared with the host). Wide layout:
 * bindings 0..18 the tensors (SDPA_VK_T_*), SDPA_VK_B_WS the workspace,
 * SDPA_VK_B_PARAMS the parameter block. Packed layout (-DSDPA_PACKED, for
 * devices with fewer storage buffers per stage): every tensor in one buffer
 * (SDPA_VK_PK_B_PACK) read through typed views that alias it, the host's
 * element offsets (toff) locating each tensor (src/backend/vulkan/vk_pack.c).
 * The parameter block's layout matches struct sdpa__vk_params in
 * src/backend/vulkan/vk_internal.h. Element
 * indices are uint (the host refuses tensors that would overflow them).
 * Storage variants are chosen by one define at build time: STORAGE_F32,
 * STORAGE_F16 (needs 16-bit storage) or STORAGE_BF16 (uint words, bit ops).
 * Included by every .comp file in this directory.
 */
#extension GL_GOOGLE_include_directive : enable
#include "../common/sdpa_shared.h"
/* Loops over a tile (K_TILE) and record fields are [[unroll]]; loops over
 * D and Dv stay loops (fully unrolled they make llvmpipe's compile time
 * explode) and each of their iterations serves a whole tile of K_TILE keys
 * or rows. That matters for correctness on llvmpipe/lavapipe, which stops an
 * invocation after 65535 loop iterations in total (all loops together): the
 * host keeps (keys / K_TILE) * (D + Dv) and the other loop counts under that
 * budget (vk_plan.c, SDPA__VK_LOOP_BUDGET in vk_internal.h). */
#extension GL_EXT_control_flow_attributes : require

#if defined(STORAGE_F16)
#extension GL_EXT_shader_16bit_storage : require
#define STORE_T float16_t
#define BUF_LOAD(buf, e) float(buf[e])
#define BUF_STORE(buf, e, v) buf[e] = float16_t(v)
#elif defined(STORAGE_BF16)
#define STORE_T uint
#define BUF_LOAD(buf, e) bf16_load(buf[(e) >> 1u], (e))
#define BUF_STORE(buf, e, v) bf16_store_word(buf[(e) >> 1u], (e), (v))
#else
#define STORE_T float
#define BUF_LOAD(buf, e) (buf[e])
#define BUF_STORE(buf, e, v) buf[e] = (v)
#endif

/* ---- specialization constants (host: vk_pipeline.c) ---------------------- */
layout(constant_id = 1) const int K_TILE = 8;      /* keys scored per step */
layout(constant_id = 2) const int HEAD_DIM = 64;   /* D */
layout(constant_id = 3) const int HEAD_DIM_V = 64; /* Dv */
/* Feature bits and the QK-norm mode are specialization constants, so a
 * pipeline contains only the code of its features: with them as runtime
 * values (in P.feat, still filled by the host) llvmpipe took ~10x longer to
 * compile the backward (93 s instead of ~9 s at K_TILE 8). */
layout(constant_id = 4) const uint FLAGS = 0u;     /* SDPA__VK_F_* bits */
layout(constant_id = 5) const int QK_NORM = 0;     /* sdpa_qk_norm */
/* The work-group size again (constant 0 sizes the group through
 * local_size_x_id): llvmpipe folded gl_WorkGroupSize to its default in
 * arithmetic, so indexing uses this copy. The host sets both equal. */
layout(constant_id = 6) const uint WG_SIZE = 64u;
/* K/V storage (SDPA_VK_KV_*; features.glsl): 0 = q's type (STORE_T views),
 * else read as 32-bit words and converted in registers. */
layout(constant_id = 10) const int KV_TYPE = 0;

const bool HAS_MASK = (FLAGS & uint(SDPA_VK_F_MASK)) != 0u;
const bool HAS_BIAS = (FLAGS & uint(SDPA_VK_F_BIAS)) != 0u;
const bool HAS_KVLEN = (FLAGS & uint(SDPA_VK_F_KVLEN)) != 0u;
const bool HAS_QGAIN = (FLAGS & uint(SDPA_VK_F_QGAIN)) != 0u;
const bool HAS_KGAIN = (FLAGS & uint(SDPA_VK_F_KGAIN)) != 0u;
const bool HAS_TEMP = (FLAGS & uint(SDPA_VK_F_TEMP)) != 0u;
const bool HAS_LSE = (FLAGS & uint(SDPA_VK_F_LSE)) != 0u;
const bool HAS_STATS = (FLAGS & uint(SDPA_VK_F_STATS)) != 0u;
const bool HAS_SOFTCAP = (FLAGS & uint(SDPA_VK_F_SOFTCAP)) != 0u;
const bool SPLIT = (FLAGS & uint(SDPA_VK_F_SPLIT)) != 0u;
const bool NORMED = (FLAGS & uint(SDPA_VK_F_NORMED)) != 0u;
const bool HAS_ALIBI = (FLAGS & uint(SDPA_VK_F_ALIBI)) != 0u;
const bool HAS_SINKS = (FLAGS & uint(SDPA_VK_F_SINKS)) != 0u;
const bool PAGED = (FLAGS & uint(SDPA_VK_F_PAGED)) != 0u;

/* ---- tensor slots (index into toff / tstride) and records ------------------ */
#define T_Q SDPA_VK_T_Q
#define T_K SDPA_VK_T_K
#define T_V SDPA_VK_T_V
#define T_OUT SDPA_VK_T_OUT
#define T_MASK SDPA_VK_T_MASK
#define T_BIAS SDPA_VK_T_BIAS
#define T_KVLEN SDPA_VK_T_KVLEN
#define T_QGAIN SDPA_VK_T_QGAIN
#define T_KGAIN SDPA_VK_T_KGAIN
#define T_TEMP SDPA_VK_T_TEMP
#define T_LSE SDPA_VK_T_LSE
#define T_STATS SDPA_VK_T_STATS
#define T_DOUT SDPA_VK_T_DOUT
#define T_DQ SDPA_VK_T_DQ
#define T_DK SDPA_VK_T_DK
#define T_DV SDPA_VK_T_DV
#define T_DQG SDPA_VK_T_DQG
#define T_DKG SDPA_VK_T_DKG
#define T_DT SDPA_VK_T_DT
#define T_ALIBI SDPA_VK_T_ALIBI
#define T_SINKS SDPA_VK_T_SINKS
#define T_BTAB SDPA_VK_T_BTAB
#define T_DSINKS SDPA_VK_T_DSINKS

#define RS_N SDPA_RS_N
#define RS_MEAN SDPA_RS_MEAN
#define RS_M2 SDPA_RS_M2
#define RS_MIN SDPA_RS_MIN
#define RS_MAX SDPA_RS_MAX
#define RS_ENT SDPA_RS_ENT
#define RS_PMAX SDPA_RS_PMAX
#define RS_JFRO SDPA_RS_JFRO
#define RS_SINK SDPA_RS_SINK
#define RS_VALID SDPA_RS_VALID
#define RS_SIZE SDPA_RS_SIZE

#define PT_M SDPA_PT_M
#define PT_L SDPA_PT_L
#define PT_A SDPA_PT_A
#define PT_L2 SDPA_PT_L2
#define PT_L3 SDPA_PT_L3
#define PT_N SDPA_PT_N
#define PT_MEAN SDPA_PT_MEAN
#define PT_M2 SDPA_PT_M2
#define PT_MIN SDPA_PT_MIN
#define PT_MAX SDPA_PT_MAX
#define PT_S0 SDPA_PT_S0
#define PT_L1 SDPA_PT_L1
#define PT_SIZE SDPA_PT_SIZE

/* ---- bindings ---------------------------------------------------------------- */
#ifdef SDPA_PACKED
layout(std430, set = 0, binding = SDPA_VK_PK_B_PACK) buffer PkStore { STORE_T pk_store[]; };
layout(std430, set = 0, binding = SDPA_VK_PK_B_PACK) buffer PkUint { uint pk_uint[]; };
layout(std430, set = 0, binding = SDPA_VK_PK_B_PACK) buffer PkFloat { float pk_float[]; };
layout(std430, set = 0, binding = SDPA_VK_PK_B_PACK) readonly buffer PkInt { int pk_int[]; };
layout(std430, set = 0, binding = SDPA_VK_PK_B_WS) buffer BWs { float ws[]; };
#define PARAMS_BINDING SDPA_VK_PK_B_PARAMS
#define q_buf pk_store
#define k_buf pk_store
#define v_buf pk_store
#define out_buf pk_store
#define dout_buf pk_store
#define dq_buf pk_store
#define dk_buf pk_store
#define dv_buf pk_store
#define mask_buf pk_uint
#define kvlen_buf pk_int
#define bias_buf pk_float
#define qgain_buf pk_float
#define kgain_buf pk_float
#define temp_buf pk_float
#define lse_buf pk_float
#define stats_buf pk_float
#define dqg_buf pk_float
#define dkg_buf pk_float
#define dt_buf pk_float
#define alibi_buf pk_float
#define sinks_buf pk_float
#define btab_buf pk_int
#define dsinks_buf pk_float
#define k_words pk_uint
#define v_words pk_uint
#define dk_words pk_uint
#define dv_words pk_uint
#else
layout(std430, set = 0, binding = 0) readonly buffer BQ { STORE_T q_buf[]; };
layout(std430, set = 0, binding = 1) readonly buffer BK { STORE_T k_buf[]; };
layout(std430, set = 0, binding = 2) readonly buffer BV { STORE_T v_buf[]; };
layout(std430, set = 0, binding = 3) buffer BO { STORE_T out_buf[]; };
layout(std430, set = 0, binding = 4) readonly buffer BMask { uint mask_buf[]; };
layout(std430, set = 0, binding = 5) readonly buffer BBias { float bias_buf[]; };
layout(std430, set = 0, binding = 6) readonly buffer BKvl { int kvlen_buf[]; };
layout(std430, set = 0, binding = 7) readonly buffer BQg { float qgain_buf[]; };
layout(std430, set = 0, binding = 8) readonly buffer BKg { float kgain_buf[]; };
layout(std430, set = 0, binding = 9) readonly buffer BTemp { float temp_buf[]; };
layout(std430, set = 0, binding = 10) buffer BLse { float lse_buf[]; };
layout(std430, set = 0, binding = 11) writeonly buffer BStats { float stats_buf[]; };
layout(std430, set = 0, binding = 12) readonly buffer BDo { STORE_T dout_buf[]; };
layout(std430, set = 0, binding = 13) buffer BDq { STORE_T dq_buf[]; };
layout(std430, set = 0, binding = 14) buffer BDk { STORE_T dk_buf[]; };
layout(std430, set = 0, binding = 15) buffer BDv { STORE_T dv_buf[]; };
layout(std430, set = 0, binding = 16) writeonly buffer BDqg { float dqg_buf[]; };
layout(std430, set = 0, binding = 17) writeonly buffer BDkg { float dkg_buf[]; };
layout(std430, set = 0, binding = 18) writeonly buffer BDt { float dt_buf[]; };
layout(std430, set = 0, binding = 19) readonly buffer BAlibi { float alibi_buf[]; };
layout(std430, set = 0, binding = 20) readonly buffer BSinks { float sinks_buf[]; };
layout(std430, set = 0, binding = 21) readonly buffer BBtab { int btab_buf[]; };
layout(std430, set = 0, binding = 22) writeonly buffer BDsinks { float dsinks_buf[]; };
/* K/V (and dK/dV) as 32-bit words, for a K/V type other than q's
 * (features.glsl) */
layout(std430, set = 0, binding = 1) readonly buffer BKw { uint k_words[]; };
layout(std430, set = 0, binding = 2) readonly buffer BVw { uint v_words[]; };
layout(std430, set = 0, binding = 14) buffer BDkw { uint dk_words[]; };
layout(std430, set = 0, binding = 15) buffer BDvw { uint dv_words[]; };
layout(std430, set = 0, binding = SDPA_VK_B_WS) buffer BWs { float ws[]; };

#define PARAMS_BINDING SDPA_VK_B_PARAMS
#endif

layout(std140, set = 0, binding = PARAMS_BINDING) uniform Params {
    ivec4 shape0;     /* B, Hq, Hkv, Sq */
    ivec4 shape1;     /* Skv, D, Dv, group = Hq / Hkv */
    ivec4 band;       /* diagonal mode, diagonal offset, window left, right */
    ivec4 misc;       /* nsplit, split_len, rows = B*Hq*Sq, kvrows = B*Hkv*Skv */
    ivec4 rflags;     /* backward: write dq_gain, dk_gain, dtemperature, dsinks */
    ivec4 feat;       /* feature bits (SDPA__VK_F_*), QK-norm mode, 0, 0 */
    ivec4 ext;        /* page size, pool pages, ALiBi's EXPLICIT diagonal offset, 0 */
    vec4 fpar;        /* scale, softcap, qk_norm eps, stats saturation */
    uvec4 ws0;        /* workspace offsets: qn, kn, rowstats, partials */
    uvec4 ws1;        /* workspace offsets: dvec, dq_gain rows, dk_gain rows, dt rows */
    uvec4 toff[(SDPA_VK_T_COUNT + 3) / 4]; /* element offset of tensor t at toff[t / 4][t % 4] */
    uvec4 tstride[SDPA_VK_T_COUNT]; /* element strides of tensor t (broadcast axes are 0);
                                       bytes for block-quantized K/V */
} P;

#define NEG_INF (-1.0 / 0.0)

/* ---- bf16 helpers ---------------------------------------------------------------- */
float bf16_load(uint word, uint e)
{
    return uintBitsToFloat(((word >> ((e & 1u) * 16u)) & 0xffffu) << 16u);
}
uint f32_to_bf16(float v)
{
    uint u = floatBitsToUint(v);
    if (isnan(v)) return (u >> 16u) | 0x40u;
    u += 0x7fffu + ((u >> 16u) & 1u);
    return u >> 16u;
}
/* Two invocations may own the two halves of one word: clear and set our half
 * with atomics so neither overwrites the other. */
#define bf16_store_word(word, e, v)                                          \
    do {                                                                     \
        uint sh_ = ((e) & 1u) * 16u;                                         \
        atomicAnd(word, ~(0xffffu << sh_));                                  \
        atomicOr(word, f32_to_bf16(v) << sh_);                               \
    } while (false)

/* ---- indexing ---------------------------------------------------------------- */
uint tidx(int t, uint i0, uint i1, uint i2, uint i3)
{
    uvec4 s = P.tstride[t];
    return P.toff[t >> 2][t & 3] + i0 * s.x + i1 * s.y + i2 * s.z + i3 * s.w;
}

/* Flat invocation id over a 2-D dispatch grid (x wraps at 65535 groups). */
uint flat_id()
{
    return (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * WG_SIZE +
           gl_LocalInvocationID.x;
}

/* Valid keys of batch b: kv_len clamped into [0, Skv] (device values are not
 * checked on the host; docs/semantics.md), Skv without kv_len. */
int valid_keys(int b)
{
    if (HAS_KVLEN) return clamp(kvlen_buf[tidx(T_KVLEN, uint(b), 0u, 0u, 0u)], 0, P.shape1.x);
    return P.shape1.x;
}

int diag_off(int kvl)
{
    if (P.band.x == 1) return kvl - P.shape0.w;
    if (P.band.x == 2) return P.band.y;
    return 0;
}

/* Kept-key range [lo, hi) of row i (band and kv_len); see sdpa__row_range. */
void row_range(int kvl, int i, out int lo, out int hi)
{
    int off = diag_off(kvl);
    int a = 0, b = kvl;
    if (P.band.z >= 0) a = max(a, i + off - P.band.z);
    if (P.band.w >= 0) b = min(b, i + off + P.band.w + 1);
    lo = a;
    hi = max(a, b);
}

float head_scale(int h)
{
    if (HAS_TEMP) return temp_buf[tidx(T_TEMP, 0u, uint(h), 0u, 0u)];
    return P.fpar.x;
}

/* x^-3 (tanh(x) - x) for |x| <= 0.625: Cephes' tanhf polynomial in x^2. */
float tanh_poly(float x2)
{
    return (((-5.70498872745e-3 * x2 + 2.06390887954e-2) * x2 - 5.37397155531e-2) * x2 +
            1.33314422036e-1) * x2 - 3.33332819422e-1;
}

/* tanh to a few ulp for every x: the polynomial for small |x|, where the
 * exp form 1 - 2 / (e^2|x| + 1) cancels, and that form (never inf / inf)
 * above. The built-in tanh is neither on every driver. */
float safe_tanh(float x)
{
    float a = abs(x);
    if (a <= 0.625) return x + x * (x * x) * tanh_poly(x * x);
    float r = 1.0 - 2.0 / (exp(2.0 * a) + 1.0);
    return x < 0.0 ? -r : r;
}

/* Softcap c tanh(z / c) of a scaled dot product z, accurate for every c in
 * [FLT_MIN, FLT_MAX]: for small |z / c| as z + z x^2 P(x^2), so that z
 * survives a z / c that is subnormal (or flushed to 0) when c is huge. */
float softcap_score(float z, float c)
{
    float x = z / c;
    if (abs(x) <= 0.625) return z + z * (x * x) * tanh_poly(x * x);
    return c * safe_tanh(x);
}

#include "features.glsl"

/* The score function, one for every shader: from the scaled dot product z,
 * the softcap, then the additive terms (bias), then the drop decision (a
 * -inf bias or a zero mask byte); -inf when the key is dropped. A new
 * per-key input goes here (and its slope into score_slope). ALiBi
 * (features.glsl) is additive, a constant of the score. */
float finish_score(float z, uint b, uint h, uint i, uint j)
{
    float s = z;
    if (HAS_SOFTCAP) s = softcap_score(z, P.fpar.y);
    if (HAS_BIAS) s += bias_buf[tidx(T_BIAS, b, h, i, j)];
    if (HAS_ALIBI) s += alibi_bias(b, h, i, j);
    /* a -inf bias drops the key like the mask, even where z is NaN */
    if (HAS_BIAS && bias_buf[tidx(T_BIAS, b, h, i, j)] == NEG_INF) s = NEG_INF;
    if (HAS_MASK) {
        uint e = tidx(T_MASK, b, h, i, j);
        if (((mask_buf[e >> 2u] >> ((e & 3u) * 8u)) & 0xffu) == 0u) s = NEG_INF;
    }
    return s;
}

/* d finish_score / d z for a kept key: the softcap's 1 - tanh^2(z / c); the
 * additive terms have slope 1. The backward shaders multiply dS by it when
 * HAS_SOFTCAP. */
float score_slope(float z)
{
    float th = safe_tanh(z / P.fpar.y);
    return 1.0 - th * th;
}
