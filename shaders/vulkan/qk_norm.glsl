/*
 * qk_norm.glsl — QK-norm forward and backward on one row held in registers:
 * RMSNorm x / sqrt(mean(x^2) + eps), LayerNorm (x - mean) / sqrt(var + eps)
 * with population variance, L2 x / sqrt(sum(x^2) + eps); QK_NORM = 0 is the
 * identity. The gain is applied by the callers.
 * Included by qknorm.comp, bwd_dq.comp and bwd_dkv.comp.
 */

/* x := norm(x); returns 1 / divisor. */
float qkn_forward(inout float x[HEAD_DIM])
{
    if (QK_NORM == 0) return 1.0;
    float eps = P.fpar.z;
    float mu = 0.0;
    if (QK_NORM == 2) {
        for (int d = 0; d < HEAD_DIM; d++) mu += x[d];
        mu /= float(HEAD_DIM);
    }
    float ss = 0.0;
    for (int d = 0; d < HEAD_DIM; d++) ss += (x[d] - mu) * (x[d] - mu);
    float den = QK_NORM == 3 ? ss : ss / float(HEAD_DIM);
    float rinv = 1.0 / sqrt(den + eps);
    for (int d = 0; d < HEAD_DIM; d++) x[d] = (x[d] - mu) * rinv;
    return rinv;
}

/* Given y = norm(x), its 1/divisor and dy, dy := dx. */
void qkn_backward(float y[HEAD_DIM], float rinv, inout float dy[HEAD_DIM])
{
    if (QK_NORM == 0) return;
    float dot_ = 0.0, sum_ = 0.0;
    for (int d = 0; d < HEAD_DIM; d++) { dot_ += dy[d] * y[d]; sum_ += dy[d]; }
    float c = QK_NORM == 3 ? dot_ : dot_ / float(HEAD_DIM);
    float mdy = QK_NORM == 2 ? sum_ / float(HEAD_DIM) : 0.0;
    for (int d = 0; d < HEAD_DIM; d++) dy[d] = (dy[d] - mdy - y[d] * c) * rinv;
}
