/*
 * pack.cl — copies a strided q/k/v/dout tensor into a dense f32 workspace
 * array, applying the QK-norm, gain and scale on the way, optionally
 * transposed.
 *
 * Layouts written (rows padded with zeros from S up to SP, a multiple of 64,
 * so vector loads of a tile never read past the end or see garbage):
 *   transpose = 0: dst[(bh * SP + s) * dim + d]   (row-major rows)
 *   transpose = 1: dst[(bh * dim + d) * SP + s]   (feature-major, for
 *                  outer-product score tiles: one vector load = KT keys)
 *   transpose = 2: dst[bh * dim * SP + ((s / T) * dim + d) * T + s % T]
 *                  (tile-major: each tile of T keys is one contiguous
 *                  feature-major block, so a tile streams sequentially)
 * Element value: ((x - mean) * r) * gain[d] * mul, where mean/r come from the
 * norm (identity when norm = 0) and mul is temperature[h] or `scale`.
 * Called by cl_forward.c / cl_backward.c once per tensor per call; one
 * work-item per (bh, s) row, global size rounded up to the local size.
 */

__kernel void sdpa_pack(global const STYPE *x, long x_off, long4 xs,
                        int H, int S, int SP, int dim, long rows, int transpose, int T,
                        int norm, float eps,
                        global const float *gain, long g_off, long g_st, int has_gain,
                        global const float *temp, long t_off, long t_st, int has_temp,
                        float scale, global float *dst)
{
    long r = get_global_id(0);
    if (r >= rows) return;
    long bh = r / SP;
    int s = (int)(r % SP);
    long b = bh / H, h = bh % H;
    /* Destination of element d: dst[dbase + d * dstep]. */
    long dbase, dstep;
    if (transpose == 2) {
        dbase = bh * dim * SP + (long)(s / T) * dim * T + s % T;
        dstep = T;
    } else if (transpose == 1) {
        dbase = bh * dim * SP + s;
        dstep = SP;
    } else {
        dbase = r * dim;
        dstep = 1;
    }
    global float *out = dst + dbase;
    if (s >= S) {
        for (int d = 0; d < dim; d++) out[d * dstep] = 0.0f;
        return;
    }
    long base = x_off + b * xs.s0 + h * xs.s1 + (long)s * xs.s2;
    long st = xs.s3;
    float mean;
    float rn = sdpa_norm_params(x, base, st, dim, norm, eps, &mean);
    float mul = (has_temp ? temp[t_off + h * t_st] : scale) * rn;
    global const STYPE *xr = x + base;
    if (has_gain) {
        global const float *g = gain + g_off;
        for (int d = 0; d < dim; d++)
            out[d * dstep] = (LD(xr, d * st) - mean) * mul * g[d * g_st];
    } else {
        for (int d = 0; d < dim; d++) out[d * dstep] = (LD(xr, d * st) - mean) * mul;
    }
}
