/*
 * qknorm.comp — writes f32 copies of q and k after QK-norm and gain into the
 * plan's workspace (qn: one contiguous row of D per query row, kn: per key
 * row), so the attention shaders read prepared rows instead of normalising
 * every (query, key) pair again.
 *
 * Invariants: row r < rows is query row (b, h, i) in row-major order; the
 * following kvrows invocations are key rows (b, hk, j). Run by vk_dispatch.c
 * first in a forward or backward that has QK-norm or gains.
 */
#version 450
#include "common.glsl"
#include "qk_norm.glsl"

layout(local_size_x_id = 0) in;

void main()
{
    uint gid = flat_id();
    uint rows = uint(P.misc.z), kvrows = uint(P.misc.w);
    if (gid >= rows + kvrows) return;
    float x[HEAD_DIM];
    bool isq = gid < rows;
    uint r = isq ? gid : gid - rows;
    uint S = uint(isq ? P.shape0.w : P.shape1.x);
    uint H = uint(isq ? P.shape0.y : P.shape0.z);
    uint i = r % S, h = (r / S) % H, b = r / (S * H);
    for (int d = 0; d < HEAD_DIM; d++)
        x[d] = isq ? BUF_LOAD(q_buf, tidx(T_Q, b, h, i, uint(d)))
                   : K_AT(kv_row(T_K, b, h, i), d);
    qkn_forward(x);
    uint base = (isq ? P.ws0.x : P.ws0.y) + r * uint(HEAD_DIM);
    for (int d = 0; d < HEAD_DIM; d++) {
        float g = 1.0;
        if (isq && HAS_QGAIN) g = qgain_buf[tidx(T_QGAIN, 0u, 0u, 0u, uint(d))];
        if (!isq && HAS_KGAIN) g = kgain_buf[tidx(T_KGAIN, 0u, 0u, 0u, uint(d))];
        ws[base + uint(d)] = x[d] * g;
    }
}
