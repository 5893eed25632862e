/*
 * features.glsl — the pieces of ALiBi, attention sinks, mixed-precision,
 * block-quantized and paged K/V that every shader shares (DESIGN section 3,
 * docs/semantics.md): where key j's K or V row starts (through the block
 * table when paged), element d of such a row in any K/V storage type
 * (converted or dequantized in registers, never a dequantized copy), the
 * ALiBi term of a score and the sink logit a row's softmax starts from.
 *
 * K/V storage (specialization constant KV_TYPE, SDPA_VK_KV_*):
 *  - SDPA_VK_KV_SAME: K/V have q's storage type and are read through the
 *    typed views k_buf / v_buf (BUF_LOAD), as before these features;
 *  - F32, F16, BF16: read as 32-bit words (k_words / v_words) and converted,
 *    so a K/V type other than q's needs neither a second SPIR-V variant nor
 *    16-bit storage; indices count elements;
 *  - Q8_0, Q4_0 (ggml's block_q8_0, 34 bytes, and block_q4_0, 18 bytes):
 *    indices and strides count bytes (the host converts them), so a block
 *    need not be 4-byte aligned: the f16 scale (at an even byte) and the
 *    quant byte are extracted from the 32-bit words that hold them.
 * Paged K/V (PAGED): k and v are the page pools (P, Hkv, page, D); key j of
 * batch b is slot j % page of page block_table[b][j / page], looked up where
 * the row is addressed (kv_row), inside the caller's key loop.
 *
 * Included by common.glsl (before finish_score), so by every shader; the
 * parameters come from P.ext (page size, pool pages, ALiBi's explicit
 * diagonal offset), filled by vk_dispatch.c.
 */

const bool KV_RAW = KV_TYPE != SDPA_VK_KV_SAME;
const bool KV_BLOCK = KV_TYPE == SDPA_VK_KV_Q8_0 || KV_TYPE == SDPA_VK_KV_Q4_0;
/* 1 when K/V are read as words (KV_RAW), as an int for array sizes */
const int KV_RAW_I = (KV_TYPE + 7) / 8;

/* ---- K/V rows ---------------------------------------------------------------- */

/* Index (element, or byte for block types) of element 0 of key j's row of
 * tensor t (T_K or T_V; T_DK / T_DV are never paged) for KV head hk. */
uint kv_row(int t, uint b, uint hk, uint j)
{
    if (PAGED) {
        uint pg = uint(P.ext.x);
        int e = btab_buf[tidx(T_BTAB, b, 0u, 0u, j / pg)];
        /* device values are not checked on the host: stay inside the pool */
        uint page = uint(clamp(e, 0, P.ext.y - 1));
        return tidx(t, page, hk, j % pg, 0u);
    }
    return tidx(t, b, hk, j, 0u);
}

/* Element (or block byte address) of element d of a row at base, element
 * stride st (block types: the block's bytes). */
uint kv_idx(uint base, uint d, uint st)
{
    return KV_BLOCK ? base + (d >> 5u) * st : base + d * st;
}

/* Byte of the quantized value of element d (block types). */
uint kv_qbyte(uint base, uint d, uint st)
{
    uint blk = kv_idx(base, d, st);
    return KV_TYPE == SDPA_VK_KV_Q8_0 ? blk + 2u + (d & 31u) : blk + 2u + (d & 15u);
}

/* The word holding element d (block types: its block's scale) ... */
uint kv_w0(uint base, uint d, uint st)
{
    uint e = kv_idx(base, d, st);
    if (KV_TYPE == SDPA_VK_KV_F32) return e;
    return KV_BLOCK ? e >> 2u : e >> 1u;
}

/* ... and the word holding its quantized value (the same word otherwise). */
uint kv_w1(uint base, uint d, uint st)
{
    return KV_BLOCK ? kv_qbyte(base, d, st) >> 2u : kv_w0(base, d, st);
}

/* Element d from the words kv_w0 and kv_w1 named: f32, f16 or bf16 as
 * stored, or d * q (q8_0) and d * (nibble - 8) (q4_0), exact in f32. */
float kv_decode(uint w0, uint w1, uint base, uint d, uint st)
{
    uint e = kv_idx(base, d, st);
    if (KV_TYPE == SDPA_VK_KV_F32) return uintBitsToFloat(w0);
    if (KV_TYPE == SDPA_VK_KV_F16) return unpackHalf2x16(w0 >> ((e & 1u) * 16u)).x;
    if (KV_TYPE == SDPA_VK_KV_BF16) return bf16_load(w0, e);
    float scale = unpackHalf2x16(w0 >> ((e & 2u) * 8u)).x;
    uint qb = kv_qbyte(base, d, st);
    uint byte = (w1 >> ((qb & 3u) * 8u)) & 0xffu;
    if (KV_TYPE == SDPA_VK_KV_Q8_0) return scale * float(bitfieldExtract(int(byte), 0, 8));
    uint nib = (d & 31u) >= 16u ? byte >> 4u : byte & 15u;
    return scale * float(int(nib) - 8);
}

/* Element d of the K (V) row starting at base (kv_row), f32. */
#define KV_AT(store, words, base, d, st)                                            \
    (KV_RAW ? kv_decode(words[kv_w0((base), (d), (st))], words[kv_w1((base), (d), (st))], \
                        (base), (d), (st))                                         \
            : BUF_LOAD(store, (base) + (d) * (st)))
#define K_AT(base, d) KV_AT(k_buf, k_words, (base), uint(d), P.tstride[T_K].w)
#define V_AT(base, d) KV_AT(v_buf, v_words, (base), uint(d), P.tstride[T_V].w)

/* Stores v as element e of dK (dV) in the K/V type (f32, f16 or bf16: the
 * backward has no block types); 16-bit halves with atomics, as bf16 does. */
#define KV_STORE(store, words, e, v)                                                \
    do {                                                                            \
        if (!KV_RAW) {                                                              \
            BUF_STORE(store, (e), (v));                                             \
        } else if (KV_TYPE == SDPA_VK_KV_F32) {                                     \
            words[e] = floatBitsToUint(v);                                          \
        } else {                                                                    \
            uint sh2_ = ((e) & 1u) * 16u;                                           \
            uint h_ = KV_TYPE == SDPA_VK_KV_F16 ? packHalf2x16(vec2((v), 0.0)) & 0xffffu \
                                                : f32_to_bf16(v);                   \
            atomicAnd(words[(e) >> 1u], ~(0xffffu << sh2_));                        \
            atomicOr(words[(e) >> 1u], h_ << sh2_);                                 \
        }                                                                           \
    } while (false)
#define DK_STORE(e, v) KV_STORE(dk_buf, dk_words, (e), (v))
#define DV_STORE(e, v) KV_STORE(dv_buf, dv_words, (e), (v))

/* ---- ALiBi --------------------------------------------------------------------- */

/* The diagonal offset ALiBi measures from (sdpa__alibi_offset): the band's
 * for TOP_LEFT and BOTTOM_RIGHT, the offset as given for EXPLICIT (P.ext.z;
 * the host refuses |offset| >= 2^29). */
int alibi_off(uint b)
{
    if (P.band.x == 2) return P.ext.z;
    return diag_off(valid_keys(int(b)));
}

/* -slope_h * |i + off - j|: 0 on the diagonal, growing with the distance. */
float alibi_bias(uint b, uint h, uint i, uint j)
{
    float slope = alibi_buf[tidx(T_ALIBI, 0u, h, 0u, 0u)];
    return -slope * abs(float(int(i) + alibi_off(b) - int(j)));
}

/* ---- sinks ------------------------------------------------------------------------ */

/* The sink logit row state of head h starts from (-inf = none): only when
 * `carries` (split 0 of a key split, so a merge counts it once). */
float sink_logit(uint h, bool carries)
{
    if (!HAS_SINKS || !carries) return NEG_INF;
    return sinks_buf[tidx(T_SINKS, 0u, h, 0u, 0u)];
}
