/*
 * combine.cl — merges the split-KV partial results of fwd.cl exactly by their
 * LSE (the same math as sdpa_merge): lse = log sum_s exp(lse_s),
 * out = sum_s exp(lse_s - lse) out_s. Partials with lse = -inf contribute
 * nothing; when all are -inf the row is 0 and lse -inf.
 * Layout: part_o[(s * R + r) * HDV + c], part_l[s * R + r], r = bh * Sq + i.
 * Called by cl_forward.c after sdpa_fwd with nsplit > 1; one work-item per
 * row, global size rounded up to the local size. Fixed summation order, so
 * results are deterministic.
 */

#ifndef HDV
#define HDV 64 /* head size of v and out */
#endif

__kernel void sdpa_combine(global const float *part_o, global const float *part_l,
                           int nsplit, long R, int Hq, int Sq,
                           global STYPE *out, long o_off, long4 os,
                           global float *lse, long l_off, long4 ls, int has_lse)
{
    long r = get_global_id(0);
    if (r >= R) return;
    long bh = r / Sq, i = r % Sq;
    long b = bh / Hq, h = bh % Hq;
    float M = SDPA_NEG_INF;
    for (int s = 0; s < nsplit; s++) {
        float x = part_l[s * R + r];
        M = (isnan(x) || x > M) ? x : M;
    }
    long obase = o_off + b * os.s0 + h * os.s1 + i * os.s2;
    if (M == SDPA_NEG_INF) {
        for (int c = 0; c < HDV; c++) ST(out, obase + c * os.s3, 0.0f);
        if (has_lse) lse[l_off + b * ls.s0 + h * ls.s1 + i * ls.s2] = SDPA_NEG_INF;
        return;
    }
    float W = 0.0f;
    for (int s = 0; s < nsplit; s++) W += exp(part_l[s * R + r] - M);
    float iw = 1.0f / W;
    for (int c = 0; c < HDV; c++) {
        float acc = 0.0f;
        for (int s = 0; s < nsplit; s++) {
            float w = exp(part_l[s * R + r] - M);
            if (w > 0.0f) acc = fma(w, part_o[(s * R + r) * HDV + c], acc);
        }
        ST(out, obase + c * os.s3, acc * iw);
    }
    if (has_lse) lse[l_off + b * ls.s0 + h * ls.s1 + i * ls.s2] = M + log(W);
}
