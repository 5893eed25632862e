/*
 * fa2_common.glsl — what the FlashAttention-2-structured shaders share
 * (fwd_fa2.comp, bwd_fa2_dq.comp, bwd_fa2_dkv.comp): the lane layout (ROWS
 * rows per lane group of LANES invocations, each lane holding vec4 chunks
 * lane, lane + LANES, ... of a row), the staged storage types (f32: vec4;
 * f16 and bf16: 4 values in a uvec2), vector views of q, K, V and dO, the
 * scalar 4-element loads for strided or unaligned rows, the cooperative
 * tile staging and the lane-group sum over subgroup shuffles.
 *
 * Included after common.glsl. A shader built with -DFA2_SHARED_REDUCE (the
 * *sh variants, for devices without subgroup shuffle in compute) sums
 * through shared memory itself; otherwise it enables
 * GL_KHR_shader_subgroup_shuffle before including common.glsl.
 */
layout(constant_id = 8) const int ROWS = 2;      /* rows per lane group */
layout(constant_id = 9) const int LANES = 8;     /* invocations per row (power of 2) */

const int DC = (HEAD_DIM + 3) / 4;               /* vec4 chunks of a K row */
const int DVC = (HEAD_DIM_V + 3) / 4;            /* of a V row */
const int CPL = (DC + LANES - 1) / LANES;        /* K chunks per lane */
const int CPLV = (DVC + LANES - 1) / LANES;      /* V chunks per lane */
const int KC = CPL * LANES;                      /* staged chunks per key (padded) */
const int VC = CPLV * LANES;
const int GROUPS = int(WG_SIZE) / LANES;         /* lane groups per work-group */
const int BR = GROUPS * ROWS;                    /* rows (query or key) per work-group */

/* Vector views of q, K, V, dO and O (4 elements per entry) and the staged types. */
#if defined(STORAGE_F32)
#define VEC_T vec4
#define SH_T vec4
#define SH_ZERO vec4(0.0)
#define SH_UNPACK(w) (w)
#define SH_PACK(a) (a)
#else
#define VEC_T uvec2
#define SH_T uvec2
#define SH_ZERO uvec2(0u)
#if defined(STORAGE_F16)
#define SH_UNPACK(w) vec4(unpackHalf2x16((w).x), unpackHalf2x16((w).y))
#define SH_PACK(a) uvec2(packHalf2x16((a).xy), packHalf2x16((a).zw))
#else /* bf16: the high halves of the f32 values (exact: they are bf16) */
#define SH_UNPACK(w) vec4(uintBitsToFloat((w).x << 16u), uintBitsToFloat((w).x & 0xffff0000u), \
                          uintBitsToFloat((w).y << 16u), uintBitsToFloat((w).y & 0xffff0000u))
#define SH_PACK(a) uvec2((floatBitsToUint((a).x) >> 16u) | (floatBitsToUint((a).y) & 0xffff0000u), \
                         (floatBitsToUint((a).z) >> 16u) | (floatBitsToUint((a).w) & 0xffff0000u))
#endif
#endif
/* acc + a.b as four FMAs (dot() compiles to a multiply, three FMAs and an
 * add) */
float fma4(vec4 a, vec4 b, float acc)
{
    return fma(a.w, b.w, fma(a.z, b.z, fma(a.y, b.y, fma(a.x, b.x, acc))));
}

/* q's registers in fwd_fa2.comp: QVEC_T. In the variant built with
 * -DFA2_F16 (fwd_fa2h, f16 storage only, devices with shaderFloat16 and
 * DenormPreserve 16 requested: the f32 -> f16 -> f32 conversions of q keep
 * subnormals only under it) q
 * stays as stored in f16vec4 (Q_AS_STORED: the scale multiplies the summed
 * score) and fma4 forms each product in f32 from the f16 value: exact (two
 * 11-bit significands fit f32's 24, and the exponents its range), so the
 * contract's f32 accumulation holds; a product rounded to f16 would
 * overflow for |q_d k_d| > 65504 and is never formed. Elsewhere q is held
 * in f32, already scaled. */
#ifdef FA2_F16
#define QVEC_T f16vec4
const bool Q_AS_STORED = true;
#else
#define QVEC_T vec4
const bool Q_AS_STORED = false;
#endif

#ifdef SDPA_PACKED
layout(std430, set = 0, binding = SDPA_VK_PK_B_PACK) readonly buffer PkVec { VEC_T pk_vec[]; };
#define q_vec pk_vec
#define k_vec pk_vec
#define v_vec pk_vec
#define dout_vec pk_vec
#define out_vec pk_vec
#else
layout(std430, set = 0, binding = 0) readonly buffer BQVec { VEC_T q_vec[]; };
layout(std430, set = 0, binding = 1) readonly buffer BKVec { VEC_T k_vec[]; };
layout(std430, set = 0, binding = 2) readonly buffer BVVec { VEC_T v_vec[]; };
layout(std430, set = 0, binding = SDPA_VK_T_DOUT) readonly buffer BDoVec { VEC_T dout_vec[]; };
layout(std430, set = 0, binding = SDPA_VK_T_OUT) readonly buffer BOVec { VEC_T out_vec[]; };
#endif

/* 4 elements d0..d0+3 of a row of q, K, V, dO or O at element index base with
 * element stride st, zeros past the row (the scalar path, for rows that are
 * strided or not 16-byte aligned). */
#define LOAD4(name, buf, n)                                                  \
    vec4 name(uint base, uint st, int d0)                                    \
    {                                                                        \
        vec4 a = vec4(0.0);                                                  \
        [[unroll]] for (int c = 0; c < 4; c++)                               \
            if (d0 + c < n) a[c] = BUF_LOAD(buf, base + uint(d0 + c) * st);  \
        return a;                                                            \
    }
LOAD4(load4_q, q_buf, HEAD_DIM)
LOAD4(load4_k, k_buf, HEAD_DIM)
LOAD4(load4_v, v_buf, HEAD_DIM_V)
LOAD4(load4_do, dout_buf, HEAD_DIM_V)
LOAD4(load4_o, out_buf, HEAD_DIM_V)

/* Stages K_TILE rows j0, j0 + 1, ... of a [rows x n] tensor (row r at element
 * base + r * rs, columns cs apart) into sh[t * NCH + c] (NCH chunks per row,
 * padded with zeros past the NREAL real ones); rows past jlast repeat row
 * jlast (a valid load whose values no row keeps). One vector load per chunk,
 * unrolled, when vecok (uniform: contiguous, 16-byte aligned rows), the
 * scalar LOAD4 path in a loop otherwise. Called by every invocation. */
#define FA2_STAGE(sh, vbuf, load4, base, rs, cs, NCH, NREAL, j0, jlast, vecok)              \
    if (vecok) {                                                                          \
        [[unroll]] for (int it_ = 0; it_ < (K_TILE * NCH + int(WG_SIZE) - 1) / int(WG_SIZE); \
                        it_++) {                                                          \
            uint e_ = gl_LocalInvocationID.x + uint(it_) * WG_SIZE;                       \
            if (e_ < uint(K_TILE * NCH)) {                                                \
                int t_ = int(e_) / NCH, c_ = int(e_) % NCH;                               \
                uint j_ = uint(min((j0) + t_, (jlast)));                                  \
                sh[e_] = c_ < NREAL ? vbuf[((base) + j_ * (rs)) / 4u + uint(c_)] : SH_ZERO; \
            }                                                                             \
        }                                                                                 \
    } else {                                                                              \
        [[dont_unroll]] for (uint e_ = gl_LocalInvocationID.x; e_ < uint(K_TILE * NCH);   \
                             e_ += WG_SIZE) {                                             \
            int t_ = int(e_) / NCH, c_ = int(e_) % NCH;                                   \
            uint j_ = uint(min((j0) + t_, (jlast)));                                      \
            sh[e_] = SH_PACK(load4((base) + j_ * (rs), (cs), 4 * c_));                    \
        }                                                                                 \
    }

/* This lane's CPN chunks of one row (n elements at base, columns st apart)
 * into dst[0..CPN-1], zeros past the row: one vector load per chunk when the
 * row is contiguous and 16-byte aligned, the scalar path in a loop
 * otherwise. */
#define FA2_LOAD_ROW(dst, vbuf, load4, base, st, n, CPN)                                    \
    if (fa2_vec_ok(n, base, 0u, st)) {                                                    \
        [[unroll]] for (int m_ = 0; m_ < CPN; m_++) {                                     \
            int c_ = int(gl_LocalInvocationID.x % uint(LANES)) + m_ * LANES;              \
            dst[m_] = c_ < ((n) + 3) / 4 ? SH_UNPACK(vbuf[(base) / 4u + uint(c_)]) : vec4(0.0); \
        }                                                                                 \
    } else {                                                                              \
        [[dont_unroll]] for (int m_ = 0; m_ < CPN; m_++)                                  \
            dst[m_] = load4(base, st, 4 * (int(gl_LocalInvocationID.x % uint(LANES)) + m_ * LANES)); \
    }

/* Whether rows of a tensor with n columns starting at element base, rs
 * apart, columns cs apart, can be read as vec4 chunks. */
bool fa2_vec_ok(int n, uint base, uint rs, uint cs)
{
    return n % 4 == 0 && cs == 1u && base % 4u == 0u && rs % 4u == 0u;
}

#ifndef FA2_SHARED_REDUCE
/* Sum of x over the LANES lanes of this lane group, in every lane. The
 * masks are constants, one step each (lanes m apart, m = LANES / 2 down to
 * 1): a loop over m (LANES is a specialization constant) was kept rolled by
 * RADV, and a shuffle by a non-constant mask became a loop over the active
 * lanes (readlane) instead of a swizzle. */
float lanes_sum(float x)
{
    if (LANES >= 64) x += subgroupShuffleXor(x, 32u);
    if (LANES >= 32) x += subgroupShuffleXor(x, 16u);
    if (LANES >= 16) x += subgroupShuffleXor(x, 8u);
    if (LANES >= 8) x += subgroupShuffleXor(x, 4u);
    if (LANES >= 4) x += subgroupShuffleXor(x, 2u);
    if (LANES >= 2) x += subgroupShuffleXor(x, 1u);
    return x;
}
#else
#define lanes_sum(x) (x)
#endif
