/*
 * lab_online.c — `sdpa-lab online`: the streaming (online) softmax computes
 * the same attention as the materialised one, and partial results over key
 * blocks combine exactly. Three measurements, all through the public API:
 *
 *  1. the library's forward (which streams over keys with a running max and
 *     sum) against softmax(QK^T * scale) V formed in float64 by this tool
 *     from the full T x T score matrix;
 *  2. the keys split into blocks, one library forward per block with its
 *     LSE, the partials merged with sdpa_merge, against the forward over all
 *     keys (outputs and LSEs);
 *  3. memory: the bytes a materialised T x T score matrix would take for a
 *     large shape (default T 8192, 32 heads, bf16: 4 GiB) against the
 *     workspace the library's plan for that shape allocates
 *     (sdpa_plan_workspace_size), and the q, k, v, out tensors themselves.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lab_cmds.h"

static void help(void)
{
    printf("usage: sdpa-lab online [--T 256] [--d 64] [--heads 4] [--blocks 4]\n"
           "                       [--mem-T 8192] [--mem-heads 32] [--mem-d 128]\n"
           "\n"
           "The streaming softmax against the materialised one: the library's forward\n"
           "against a float64 softmax over the full score matrix; key blocks run\n"
           "separately and merged with sdpa_merge against one call over all keys; and\n"
           "the memory of a materialised T x T score matrix (bf16) against the\n"
           "workspace of the library's plan for that shape.\n"
           "\n"
           "  --T N           sequence length (default 256, 2..4096)\n"
           "  --d N           head size (default 64, 1..256)\n"
           "  --heads N       heads (default 4, 1..64)\n"
           "  --blocks N      key blocks to merge (default 4, 1..T; T must divide)\n"
           "  --mem-T N       sequence length of the memory comparison (default 8192)\n"
           "  --mem-heads N   heads of the memory comparison (default 32)\n"
           "  --mem-d N       head size of the memory comparison (default 128)\n"
           "\n%s", lab_global_help);
}

/* A (1, H, rows, D) view of x starting at row r0 of a (1, H, T, D) tensor. */
static sdpa_tensor rows_view(float *x, int H, int T, int D, int r0, int rows)
{
    sdpa_tensor t = sdpa_tensor_host(x + (size_t)r0 * D, SDPA_DTYPE_F32, 1, H, rows, D);
    t.stride[1] = (int64_t)T * D;
    t.stride[0] = (int64_t)H * T * D;
    return t;
}

static sdpa_status forward(lab_env *env, float *q, sdpa_tensor k, sdpa_tensor v, int H,
                           int T, int D, float *out, float *lse)
{
    sdpa_attention_desc d;
    sdpa_attention_desc_init(&d);
    d.tensors.q = sdpa_tensor_host(q, SDPA_DTYPE_F32, 1, H, T, D);
    d.tensors.k = k;
    d.tensors.v = v;
    d.tensors.out = sdpa_tensor_host(out, SDPA_DTYPE_F32, 1, H, T, D);
    d.tensors.lse = sdpa_tensor_host(lse, SDPA_DTYPE_F32, 1, H, T, 1);
    return sdpa_attention_forward(env->ctx, &d);
}

/* Largest |out - softmax(scale QK^T) V| with the scores materialised in
 * float64, over every head and row. */
static double materialised_diff(const float *q, const float *k, const float *v,
                                const float *out, int H, int T, int D)
{
    double *s = malloc((size_t)T * sizeof *s), worst = 0, scale = 1 / sqrt((double)D);
    if (!s)
        return NAN;
    for (int h = 0; h < H; h++)
        for (int i = 0; i < T; i++) {
            const float *qi = q + ((size_t)h * T + i) * D;
            double m = -INFINITY, l = 0;
            for (int j = 0; j < T; j++) {
                const float *kj = k + ((size_t)h * T + j) * D;
                double dot = 0;
                for (int c = 0; c < D; c++)
                    dot += (double)qi[c] * kj[c];
                s[j] = scale * dot;
                m = fmax(m, s[j]);
            }
            for (int j = 0; j < T; j++)
                l += (s[j] = exp(s[j] - m));
            for (int c = 0; c < D; c++) {
                double o = 0;
                for (int j = 0; j < T; j++)
                    o += s[j] / l * v[((size_t)h * T + j) * D + c];
                worst = fmax(worst, fabs(o - out[((size_t)h * T + i) * D + c]));
            }
        }
    free(s);
    return worst;
}

static double max_diff(const float *a, const float *b, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++)
        m = fmax(m, fabs((double)a[i] - b[i]));
    return m;
}

/* Workspace of a plan for (1, H, T, D) in the first dtype the backend takes
 * of bf16, f16, f32; *dtype gets it. Returns the status of the last try. */
static sdpa_status plan_workspace(lab_env *env, int H, int T, int D, size_t *ws,
                                  sdpa_dtype *dtype)
{
    const sdpa_dtype order[3] = {SDPA_DTYPE_BF16, SDPA_DTYPE_F16, SDPA_DTYPE_F32};
    sdpa_status st = SDPA_ERR_UNSUPPORTED;
    for (int i = 0; i < 3 && st == SDPA_ERR_UNSUPPORTED; i++) {
        sdpa_attention_desc d;
        sdpa_attention_desc_init(&d);
        d.tensors.q = sdpa_tensor_host(NULL, order[i], 1, H, T, D);
        d.tensors.k = d.tensors.q;
        d.tensors.v = d.tensors.q;
        d.tensors.out = d.tensors.q;
        sdpa_plan *plan = NULL;
        st = sdpa_plan_create(env->ctx, &d, NULL, &plan);
        if (st == SDPA_OK) {
            *ws = sdpa_plan_workspace_size(plan);
            *dtype = order[i];
        }
        sdpa_plan_destroy(plan);
    }
    return st;
}

int lab_cmd_online(lab_env *env, int argc, char **argv)
{
    int T = 256, D = 64, H = 4, NB = 4, MT = 8192, MH = 32, MD = 128, rc;
    const lab_int_opt opts[] = {
        {"--T", 2, 4096, &T},          {"--d", 1, 256, &D},
        {"--heads", 1, 64, &H},        {"--blocks", 1, 4096, &NB},
        {"--mem-T", 1, 1 << 20, &MT},  {"--mem-heads", 1, 1024, &MH},
        {"--mem-d", 1, 256, &MD},
    };
    if (!lab_parse_int_opts(env, argc, argv, help, opts, 7, &rc))
        return rc;
    if (NB > T || T % NB != 0)
        return lab_usage_error(env, "--blocks %d must divide --T %d", NB, T);
    if (lab_open(env))
        return LAB_EXIT_FAIL;

    size_t n = (size_t)H * T * D, nl = (size_t)H * T;
    float *q = malloc(n * sizeof *q), *k = malloc(n * sizeof *k), *v = malloc(n * sizeof *v);
    float *out = malloc(n * sizeof *out), *lse = malloc(nl * sizeof *lse);
    float *pout = malloc(n * NB * sizeof *pout), *plse = malloc(nl * NB * sizeof *plse);
    float *mout = malloc(n * sizeof *mout), *mlse = malloc(nl * sizeof *mlse);
    sdpa_tensor *to = malloc((size_t)NB * sizeof *to), *tl = malloc((size_t)NB * sizeof *tl);
    rc = LAB_EXIT_FAIL;
    if (!q || !k || !v || !out || !lse || !pout || !plse || !mout || !mlse || !to || !tl) {
        fprintf(stderr, "sdpa-lab online: out of memory\n");
        goto done;
    }
    tu_rng rng;
    tu_rng_seed(&rng, env->seed);
    lab_fill_normal(&rng, q, n, 1.0);
    lab_fill_normal(&rng, k, n, 1.0);
    lab_fill_normal(&rng, v, n, 1.0);
    if (lab_failed(env, forward(env, q, rows_view(k, H, T, D, 0, T),
                                rows_view(v, H, T, D, 0, T), H, T, D, out, lse),
                   "forward"))
        goto done;
    double d_full = materialised_diff(q, k, v, out, H, T, D);
    int tb = T / NB;
    for (int b = 0; b < NB; b++) {
        float *po = pout + n * b, *pl = plse + nl * b;
        if (lab_failed(env, forward(env, q, rows_view(k, H, T, D, b * tb, tb),
                                    rows_view(v, H, T, D, b * tb, tb), H, T, D, po, pl),
                       "forward (block)"))
            goto done;
        to[b] = sdpa_tensor_host(po, SDPA_DTYPE_F32, 1, H, T, D);
        tl[b] = sdpa_tensor_host(pl, SDPA_DTYPE_F32, 1, H, T, 1);
    }
    sdpa_tensor mo = sdpa_tensor_host(mout, SDPA_DTYPE_F32, 1, H, T, D);
    sdpa_tensor ml = sdpa_tensor_host(mlse, SDPA_DTYPE_F32, 1, H, T, 1);
    if (lab_failed(env, sdpa_merge(env->ctx, NB, to, tl, &mo, &ml), "merge"))
        goto done;
    double d_merge = max_diff(mout, out, n), d_lse = max_diff(mlse, lse, nl);

    size_t ws = 0;
    sdpa_dtype mdt = SDPA_DTYPE_NONE;
    sdpa_status wst = plan_workspace(env, MH, MT, MD, &ws, &mdt);
    if (wst != SDPA_OK && wst != SDPA_ERR_UNSUPPORTED && lab_failed(env, wst, "plan_create"))
        goto done;
    double scores = (double)MT * MT * MH * 2; /* bf16 */
    double tensors = 4.0 * MT * MH * MD * (mdt != SDPA_DTYPE_NONE ? sdpa_dtype_size(mdt) : 2);
    const double tol = 1e-5;

    if (env->json) {
        printf("{\"command\":\"online\",");
        lab_json_env(stdout, env);
        printf(",\"T\":%d,\"d\":%d,\"heads\":%d,\"blocks\":%d,\"stream_vs_materialised\":",
               T, D, H, NB);
        lab_json_num(stdout, d_full);
        printf(",\"merge_vs_whole_out\":");
        lab_json_num(stdout, d_merge);
        printf(",\"merge_vs_whole_lse\":");
        lab_json_num(stdout, d_lse);
        printf(",\"mem_T\":%d,\"mem_heads\":%d,\"mem_d\":%d,\"scores_bf16_bytes\":%.0f,"
               "\"plan_dtype\":", MT, MH, MD, scores);
        lab_json_str(stdout, mdt != SDPA_DTYPE_NONE ? sdpa_dtype_name(mdt) : "");
        printf(",\"plan_workspace_bytes\":");
        if (wst == SDPA_OK)
            printf("%zu", ws);
        else
            printf("null");
        printf(",\"tensor_bytes\":%.0f}\n", tensors);
        rc = LAB_EXIT_OK;
        goto done;
    }
    char a[32], b[32], c[32];
    printf("online softmax: T = %d, d = %d, %d heads, seed %llu (%s backend)\n\n", T, D, H,
           (unsigned long long)env->seed, sdpa_backend_name(sdpa_context_backend(env->ctx)));
    printf("  library forward vs float64 softmax over the full T x T scores: max |diff| %s\n",
           lab_fmt(a, 32, d_full, 2));
    printf("  %d key blocks of %d, merged with sdpa_merge, vs one call: out %s, lse %s\n",
           NB, tb, lab_fmt(b, 32, d_merge, 2), lab_fmt(c, 32, d_lse, 2));
    if (d_full <= tol && d_merge <= tol && d_lse <= tol)
        printf("\nThe streaming softmax equals the full softmax, and the merged blocks equal\n"
               "the whole, to float32 rounding (every difference <= %g).\n", tol);
    else
        printf("\nA difference exceeds %g: the streaming and full results do not agree to\n"
               "float32 rounding here.\n", tol);
    printf("\nmemory at T = %d, %d heads, d = %d:\n", MT, MH, MD);
    printf("  materialised T x T scores (bf16):  %s GiB\n", lab_fmt(a, 32, scores / 1073741824.0, 2));
    printf("  q, k, v, out (%s):               %s GiB\n",
           mdt != SDPA_DTYPE_NONE ? sdpa_dtype_name(mdt) : "bf16",
           lab_fmt(b, 32, tensors / 1073741824.0, 3));
    if (wst == SDPA_OK)
        printf("  the library's plan workspace (%s):  %zu bytes\n", sdpa_dtype_name(mdt), ws);
    else
        printf("  the %s backend plans no such shape (unsupported)\n",
               sdpa_backend_name(sdpa_context_backend(env->ctx)));
    if (wst == SDPA_OK && (double)ws < scores)
        printf("\nThe plan's workspace is %s of the materialised scores' memory: the\n"
               "scores are never held whole.\n", ws == 0 ? "none" : lab_fmt(a, 32, ws / scores, 2));
    rc = LAB_EXIT_OK;
done:
    free(q), free(k), free(v), free(out), free(lse), free(pout), free(plse), free(mout);
    free(mlse), free(to), free(tl);
    return rc;
}
