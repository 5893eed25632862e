/*
 * peak.cl — fp32 FMA micro-benchmark for the device peak (sdpa_context_peak).
 * Each work-item runs 8 independent FMA chains on floatPEAK_VEC
 * vectors for `iters` iterations: x = fma(x, a, b) with 0 < a < 1, so values
 * converge to b / (1 - a) and stay finite. The chains are independent so a
 * pipelined FMA unit never waits on its own latency; the sum of all lanes is
 * stored per work-item so the compiler cannot drop the work.
 * Flops per work-item: iters * 8 * PEAK_VEC * 2.
 * Built on its own (no prelude, not part of the attention kernels' source
 * hash) by cl_peak.c, which times it with profiling events.
 */

#ifndef PEAK_VEC
#define PEAK_VEC 16 /* vector width: 4, 8 or 16 (floatN) */
#endif
/* The body below has eight chains; cl_peak.c counts flops with that. */

#define PEAK_CAT_(a, b) a##b
#define PEAK_CAT(a, b) PEAK_CAT_(a, b)
#define VT PEAK_CAT(float, PEAK_VEC)

__kernel void sdpa_peak(__global float *out, int iters, float a, float b)
{
    size_t gid = get_global_id(0);
    float s0 = (float)(gid & 255) * 1e-3f;
    VT x0 = (VT)(s0), x1 = (VT)(s0 + 0.1f), x2 = (VT)(s0 + 0.2f), x3 = (VT)(s0 + 0.3f);
    VT x4 = (VT)(s0 + 0.4f), x5 = (VT)(s0 + 0.5f), x6 = (VT)(s0 + 0.6f), x7 = (VT)(s0 + 0.7f);
    VT va = (VT)(a), vb = (VT)(b);
    for (int i = 0; i < iters; i++) {
        x0 = fma(x0, va, vb);
        x1 = fma(x1, va, vb);
        x2 = fma(x2, va, vb);
        x3 = fma(x3, va, vb);
        x4 = fma(x4, va, vb);
        x5 = fma(x5, va, vb);
        x6 = fma(x6, va, vb);
        x7 = fma(x7, va, vb);
    }
    VT s = ((x0 + x1) + (x2 + x3)) + ((x4 + x5) + (x6 + x7));
    PEAK_CAT(vstore, PEAK_VEC)(s, gid, out);
}
