/*
 * lab_heads.c — `sdpa-lab heads`: why several heads. One head's output is
 * sum_j p_j v_j with p on the simplex, so it always lies in the convex hull
 * of the value rows, whatever its queries and keys. A target that takes
 * head-sized slices from different positions (slice g from value row a_g)
 * lies outside that hull; h heads of d_model/h, each attending to its own
 * position, reach it.
 *
 * The tool computes, in float64, the nearest point of the hull to the target
 * (projected gradient on the simplex): a lower bound on any single head's
 * error. Then the library runs (a) one head whose scores are log p* for the
 * optimal weights p* (K = I, q = log p*, scale 1), which reaches that bound,
 * and (b) h heads with sharp one-hot queries, which reach the target; the
 * per-head entropies come from the library's statistics.
 *
 * A head's attention pattern is limited too: its scores Q K^T have rank at
 * most d_k. With V = I the library's output is the probability matrix P
 * itself, and log P + lse (per row, from the library) gives back the scores;
 * their float64 numerical rank is d_k, not the number of keys.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lab_cmds.h"

static void help(void)
{
    printf("usage: sdpa-lab heads [--keys 8] [--head-dim 8] [--heads 2]\n"
           "\n"
           "One head outputs a convex combination of the value rows. A target made of\n"
           "head-sized slices of different value rows lies outside their convex hull:\n"
           "the float64 distance to the hull bounds any single head's error. The\n"
           "library then runs one head with the best weights (reaching the bound) and\n"
           "h heads of d_model/h with one sharp query each (reaching the target), and\n"
           "reports each head's entropy. Last, one head with d_k = keys/2 over as many\n"
           "queries as keys and V = I: its scores, recovered from the library's output\n"
           "as log p + lse, have numerical rank d_k (a head's Q K^T has rank <= d_k).\n"
           "\n"
           "  --keys N        value rows (default 8, 2..64)\n"
           "  --head-dim N    dimensions per head (default 8, 1..64)\n"
           "  --heads N       heads h; d_model = h * head-dim (default 2, 2..keys)\n"
           "\n%s", lab_global_help);
}

static double dist(const double *a, const double *b, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += (a[i] - b[i]) * (a[i] - b[i]);
    return sqrt(s);
}

/* Euclidean projection of x (n) onto the probability simplex. */
static void simplex_project(double *x, int n)
{
    double u[64], css = 0, theta = 0;
    memcpy(u, x, (size_t)n * sizeof *u);
    for (int i = 1; i < n; i++) /* insertion sort, descending */
        for (int j = i; j > 0 && u[j] > u[j - 1]; j--) {
            double t = u[j];
            u[j] = u[j - 1], u[j - 1] = t;
        }
    for (int i = 0; i < n; i++) {
        css += u[i];
        double t = (css - 1) / (i + 1);
        if (u[i] - t > 0)
            theta = t;
    }
    for (int i = 0; i < n; i++)
        x[i] = fmax(x[i] - theta, 0);
}

/* min over the simplex of ||p^T V - y||: projected gradient descent with the
 * step 1 / ||V V^T||_F (a bound on the Lipschitz constant). */
static double hull_distance(const double *V, const double *y, int S, int M, double *p)
{
    double L = 0, g[64], o[1024];
    for (int i = 0; i < S; i++)
        for (int j = 0; j < S; j++) {
            double d = 0;
            for (int c = 0; c < M; c++)
                d += V[i * M + c] * V[j * M + c];
            L += d * d;
        }
    L = sqrt(L);
    for (int i = 0; i < S; i++)
        p[i] = 1.0 / S;
    for (int it = 0; it < 20000; it++) {
        for (int c = 0; c < M; c++) {
            o[c] = -y[c];
            for (int j = 0; j < S; j++)
                o[c] += p[j] * V[j * M + c];
        }
        for (int j = 0; j < S; j++) {
            g[j] = 0;
            for (int c = 0; c < M; c++)
                g[j] += V[j * M + c] * o[c];
            p[j] -= g[j] / L;
        }
        simplex_project(p, S);
    }
    for (int c = 0; c < M; c++) {
        o[c] = 0;
        for (int j = 0; j < S; j++)
            o[c] += p[j] * V[j * M + c];
    }
    return dist(o, y, M);
}

/* Numerical rank of the n x n matrix A (destroyed): Gaussian elimination
 * with full pivoting; a pivot below tol * max|A| ends it. */
static int numerical_rank(double *A, int n, double tol)
{
    double amax = 0;
    for (int i = 0; i < n * n; i++)
        amax = fmax(amax, fabs(A[i]));
    int r = 0;
    for (; r < n; r++) {
        int pi = r, pj = r;
        for (int i = r; i < n; i++)
            for (int j = r; j < n; j++)
                if (fabs(A[i * n + j]) > fabs(A[pi * n + pj]))
                    pi = i, pj = j;
        if (!(fabs(A[pi * n + pj]) > tol * amax))
            break;
        for (int j = 0; j < n; j++) { /* rows r <-> pi */
            double t = A[r * n + j];
            A[r * n + j] = A[pi * n + j], A[pi * n + j] = t;
        }
        for (int i = 0; i < n; i++) { /* columns r <-> pj */
            double t = A[i * n + r];
            A[i * n + r] = A[i * n + pj], A[i * n + pj] = t;
        }
        for (int i = r + 1; i < n; i++) {
            double f = A[i * n + r] / A[r * n + r];
            for (int j = r; j < n; j++)
                A[i * n + j] -= f * A[r * n + j];
        }
    }
    return r;
}

/* One head with d_k = dk over S keys and S queries, V = I: out = P. Returns
 * the numerical rank of the scores log P + lse recovered from the library's
 * output (-1 when the forward failed). */
static int score_rank(lab_env *env, tu_rng *rng, int S, int dk)
{
    static float q[64 * 64], k[64 * 64], v[64 * 64], o[64 * 64], lse[64];
    static double A[64 * 64];
    lab_fill_normal(rng, q, (size_t)S * dk, 1.0);
    lab_fill_normal(rng, k, (size_t)S * dk, 1.0);
    memset(v, 0, sizeof v);
    for (int j = 0; j < S; j++)
        v[j * S + j] = 1.0f;
    sdpa_attention_desc d;
    sdpa_attention_desc_init(&d);
    d.scale = 1.0 / sqrt((double)dk);
    d.tensors.q = sdpa_tensor_host(q, SDPA_DTYPE_F32, 1, 1, S, dk);
    d.tensors.k = sdpa_tensor_host(k, SDPA_DTYPE_F32, 1, 1, S, dk);
    d.tensors.v = sdpa_tensor_host(v, SDPA_DTYPE_F32, 1, 1, S, S);
    d.tensors.out = sdpa_tensor_host(o, SDPA_DTYPE_F32, 1, 1, S, S);
    d.tensors.lse = sdpa_tensor_host(lse, SDPA_DTYPE_F32, 1, 1, S, 1);
    if (lab_failed(env, sdpa_attention_forward(env->ctx, &d), "forward (score rank)"))
        return -1;
    for (int i = 0; i < S * S; i++)
        A[i] = log((double)o[i]) + (double)lse[i / S];
    return numerical_rank(A, S, 1e-4);
}

int lab_cmd_heads(lab_env *env, int argc, char **argv)
{
    int S = 8, dh = 8, h = 2, rc;
    const lab_int_opt opts[] = {
        {"--keys", 2, 64, &S}, {"--head-dim", 1, 64, &dh}, {"--heads", 2, 64, &h}};
    if (!lab_parse_int_opts(env, argc, argv, help, opts, 3, &rc))
        return rc;
    if (h > S)
        return lab_usage_error(env, "--heads %d needs at least as many --keys (%d)", h, S);
    if (h * dh > 1024)
        return lab_usage_error(env, "heads x head-dim = %d is above 1024", h * dh);
    if (lab_open(env))
        return LAB_EXIT_FAIL;
    const int M = h * dh;
    /* at most 64 rows of 1024: static, not on the stack (one call per process) */
    static double V[64 * 1024];
    static float k1[64 * 64], v1[64 * 1024];
    double y[1024], p[64];
    tu_rng rng;
    tu_rng_seed(&rng, env->seed);
    for (int i = 0; i < S * M; i++)
        V[i] = tu_rng_normal(&rng);
    for (int g = 0; g < h; g++) /* slice g of the target: value row g */
        for (int c = g * dh; c < (g + 1) * dh; c++)
            y[c] = V[g * M + c];
    double bound = hull_distance(V, y, S, M, p);

    /* (a) one head, d_k = S, K = I, q = log p*: softmax(q) = p* */
    float q1[64], o1[1024], st1[SDPA_STAT_COUNT];
    memset(k1, 0, sizeof k1);
    for (int j = 0; j < S; j++) {
        q1[j] = (float)log(fmax(p[j], 1e-30));
        k1[j * S + j] = 1.0f;
    }
    for (int i = 0; i < S * M; i++)
        v1[i] = (float)V[i];
    if (lab_failed(env, lab_forward_stats(env, q1, k1, v1, 1, 1, 1, S, S, M, 1.0, o1, st1),
                   "forward (one head)"))
        return LAB_EXIT_FAIL;
    double o1d[1024];
    for (int c = 0; c < M; c++)
        o1d[c] = o1[c];
    double err1 = dist(o1d, y, M);

    /* (b) h heads of dh: head g attends sharply to row g */
    const double sharp = 40.0;
    float *qh = calloc((size_t)h * S, sizeof *qh), *kh = calloc((size_t)h * S * S, sizeof *kh);
    float *vh = malloc((size_t)h * S * dh * sizeof *vh), *oh = malloc((size_t)M * sizeof *oh);
    float *sth = malloc((size_t)h * SDPA_STAT_COUNT * sizeof *sth);
    if (!qh || !kh || !vh || !oh || !sth) {
        free(qh), free(kh), free(vh), free(oh), free(sth);
        fprintf(stderr, "sdpa-lab heads: out of memory\n");
        return LAB_EXIT_FAIL;
    }
    for (int g = 0; g < h; g++) {
        qh[g * S + g] = (float)sharp;
        for (int j = 0; j < S; j++) {
            kh[((size_t)g * S + j) * S + j] = 1.0f;
            for (int c = 0; c < dh; c++)
                vh[((size_t)g * S + j) * dh + c] = (float)V[j * M + g * dh + c];
        }
    }
    sdpa_status st = lab_forward_stats(env, qh, kh, vh, 1, h, 1, S, S, dh, 1.0, oh, sth);
    double errh = NAN, ent[64];
    if (!lab_failed(env, st, "forward (h heads)")) {
        double ohd[1024];
        for (int c = 0; c < M; c++) /* out (1,h,1,dh) is the concatenation */
            ohd[c] = oh[c];
        errh = dist(ohd, y, M);
        for (int g = 0; g < h; g++)
            ent[g] = sth[(size_t)g * SDPA_STAT_COUNT + SDPA_STAT_ENTROPY_MEAN];
    }
    free(qh), free(kh), free(vh), free(oh), free(sth);
    if (st != SDPA_OK)
        return LAB_EXIT_FAIL;
    const int rank_dk = S / 2 > 0 ? S / 2 : 1;
    int rank = score_rank(env, &rng, S, rank_dk);
    if (rank < 0)
        return LAB_EXIT_FAIL;
    double ynorm = 0;
    for (int c = 0; c < M; c++)
        ynorm += y[c] * y[c];
    ynorm = sqrt(ynorm);

    if (env->json) {
        printf("{\"command\":\"heads\",");
        lab_json_env(stdout, env);
        printf(",\"keys\":%d,\"head_dim\":%d,\"heads\":%d,\"target_norm\":", S, dh, h);
        lab_json_num(stdout, ynorm);
        printf(",\"hull_distance\":");
        lab_json_num(stdout, bound);
        printf(",\"one_head_error\":");
        lab_json_num(stdout, err1);
        printf(",\"one_head_entropy\":");
        lab_json_num(stdout, st1[SDPA_STAT_ENTROPY_MEAN]);
        printf(",\"multi_head_error\":");
        lab_json_num(stdout, errh);
        printf(",\"head_entropy\":[");
        for (int g = 0; g < h; g++) {
            printf("%s", g ? "," : "");
            lab_json_num(stdout, ent[g]);
        }
        printf("],\"score_rank_dk\":%d,\"score_rank\":%d}\n", rank_dk, rank);
        return LAB_EXIT_OK;
    }
    char a[32], b[32], c[32];
    printf("target: slice g (%d dims) of value row g, for g < %d; %d value rows of %d dims,\n"
           "seed %llu (%s backend); |target| = %s\n\n", dh, h, S, M,
           (unsigned long long)env->seed, sdpa_backend_name(sdpa_context_backend(env->ctx)),
           lab_fmt(a, 32, ynorm, 3));
    printf("  distance from the target to the convex hull of the value rows (float64): %s\n",
           lab_fmt(a, 32, bound, 4));
    printf("  one head, d_k = %d, best weights:  error %s, entropy %s nats\n", S,
           lab_fmt(b, 32, err1, 4), lab_fmt(c, 32, st1[SDPA_STAT_ENTROPY_MEAN], 3));
    printf("  %d heads of %d dims, one query each: error %s, entropies", h, dh,
           lab_fmt(a, 32, errh, 2));
    for (int g = 0; g < h; g++)
        printf(" %s", lab_fmt(b, 32, ent[g], 2));
    printf(" nats\n");
    printf("  one head, d_k = %d over %d keys: its scores (log p + lse, from the\n"
           "  library's output with V = I) have numerical rank %d\n", rank_dk, S, rank);
    if (bound > 1e-3 && err1 >= bound * (1 - 1e-4))
        printf("\nNo single head can do better than %s: its output is a convex combination\n"
               "of the value rows, and the library's best single head sits at that bound.\n",
               lab_fmt(a, 32, bound, 3));
    if (errh < 1e-3 * ynorm && bound > 1e-3)
        printf("%d heads of d_model/%d reach the target (error %s): each head picks its\n"
               "own row, and the concatenation leaves the hull.\n", h, h,
               lab_fmt(a, 32, errh, 2));
    if (rank == rank_dk && rank < S)
        printf("A head's scores Q K^T have rank at most d_k = %d: with fewer dimensions\n"
               "than keys it cannot express an arbitrary pattern over %d keys.\n",
               rank_dk, S);
    return LAB_EXIT_OK;
}
