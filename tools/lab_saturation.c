/*
 * lab_saturation.c — `sdpa-lab saturation`: a fixed row of scores z
 * (normal quantiles, variance a little under 1), multiplied by growing scales t, goes through the library
 * and its stats report the mean max probability (SDPA_STAT_PMAX_MEAN), the
 * entropy and the mean Frobenius norm of the softmax Jacobian
 * diag(p) - p p^T (SDPA_STAT_JACOBIAN_FRO_MEAN). As t grows, p_max -> 1 and
 * the Jacobian, which carries every gradient through the softmax, collapses;
 * the footer says by how much, from the table's own numbers.
 *
 * The row z holds the n quantiles Phi^-1((j + 1/2) / n) of the standard
 * normal in a random order (seeded): a typical row (variance a little under 1:
 * 0.98 at 64 keys, 0.92 at 16; printed) without the
 * luck of a near tie at the top, which would keep ||J|| large. --random uses
 * independent normal rows instead (averaged over --rows).
 *
 * The row is made exact by construction: K is the identity (D = number of
 * keys) and q = z, so q.k_j = z_j and the library's scale is t. The tool also
 * evaluates p_max and ||J||_F in float64 straight from z (the "exact"
 * columns) so the library's float32 in-kernel statistics can be compared;
 * the scores themselves are never computed here.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lab_cmds.h"
#include "lab_svg.h"

#define MAX_SCALES 16

static void help(void)
{
    printf("usage: sdpa-lab saturation [--scales 1,8,32,128] [--keys 64]\n"
           "                           [--random [--rows N]]\n"
           "\n"
           "Max probability, entropy and Frobenius norm of the softmax Jacobian\n"
           "diag(p) - p p^T for a fixed row of scores times each scale,\n"
           "from the library's statistics (pmax_mean, entropy_mean,\n"
           "jacobian_fro_mean), next to float64 values computed from the row. The\n"
           "row holds the normal quantiles Phi^-1((j+1/2)/n) in a seeded random order\n"
           "(variance a little under 1: 0.98 at 64 keys, printed in the header).\n"
           "\n"
           "  --scales LIST   score multipliers (default 1,8,32,128), each in (0, 1e6]\n"
           "  --keys N        keys in the row (default 64, at most 256)\n"
           "  --random        independent N(0,1) rows instead; means over rows decay\n"
           "                  more slowly, because rows with a near tie at the top\n"
           "                  keep a large Jacobian\n"
           "  --rows N        number of --random rows (default 16)\n"
           "\n%s", lab_global_help);
}

/* Exact p_max, entropy and ||diag(p) - p p^T||_F of softmax(t * z), float64,
 * with 1 - p_i formed as the sum of the other probabilities (no
 * cancellation when one p dominates). */
static void exact_row(const float *z, int n, double t, double *pmax, double *ent,
                      double *jfro)
{
    double m = -INFINITY, l = 0, p[256];
    for (int j = 0; j < n; j++)
        m = fmax(m, t * z[j]);
    for (int j = 0; j < n; j++)
        l += (p[j] = exp(t * z[j] - m));
    double pm = 0, h = 0, j2 = 0;
    for (int j = 0; j < n; j++) {
        p[j] /= l;
        pm = fmax(pm, p[j]);
        if (p[j] > 0)
            h -= p[j] * log(p[j]);
    }
    for (int i = 0; i < n; i++) {
        double rest = 0;
        for (int j = 0; j < n; j++)
            if (j != i) {
                rest += p[j];
                j2 += (p[i] * p[j]) * (p[i] * p[j]);
            }
        j2 += (p[i] * rest) * (p[i] * rest);
    }
    *pmax = pm;
    *ent = h;
    *jfro = sqrt(j2);
}

/* Standard normal quantile by bisection on 0.5 erfc(-x / sqrt 2). */
static double normal_quantile(double u)
{
    double lo = -40, hi = 40;
    for (int i = 0; i < 200 && hi - lo > 1e-15; i++) {
        double mid = 0.5 * (lo + hi);
        if (0.5 * erfc(-mid / sqrt(2.0)) < u)
            lo = mid;
        else
            hi = mid;
    }
    return 0.5 * (lo + hi);
}

/* The sentences under the table, from the library's ||J||_F column: how it
 * moves from the smallest to the largest scale (orders of magnitude only
 * when it falls by 100x or more, a rise named where there is one), and the
 * float32 caveat only on a float32 backend whose values are small enough to
 * be affected. */
static void saturation_footer(const lab_env *env, const double *scales, const double *jf,
                              int nsc)
{
    int lo = 0, hi = 0;
    for (int s = 1; s < nsc; s++) {
        if (scales[s] < scales[lo])
            lo = s;
        if (scales[s] > scales[hi])
            hi = s;
    }
    char a[32], b[32], c[32];
    printf("\nJ = diag(p) - p p^T carries every gradient through the softmax.\n");
    if (lo == hi || !isfinite(jf[lo]) || !isfinite(jf[hi]))
        return;
    for (int s = 0; s < nsc; s++) /* a rise between consecutive larger scales */
        for (int t = 0; t < nsc; t++)
            if (scales[t] > scales[s] && jf[t] > jf[s]) {
                int between = 0;
                for (int u = 0; u < nsc; u++)
                    between |= scales[u] > scales[s] && scales[u] < scales[t];
                if (!between)
                    printf("||J||_F rises from %s at scale %g to %s at scale %g.\n",
                           lab_fmt(a, 32, jf[s], 3), scales[s], lab_fmt(b, 32, jf[t], 3),
                           scales[t]);
            }
    double ratio = jf[hi] > 0 ? jf[lo] / jf[hi] : INFINITY;
    if (!isfinite(ratio) && jf[lo] > 0)
        printf("From scale %g to %g it falls from %s to 0 (below what the statistic\n"
               "resolves): the row saturates and gradients through it vanish.\n",
               scales[lo], scales[hi], lab_fmt(a, 32, jf[lo], 3));
    else
    if (ratio >= 100)
        printf("From scale %g to %g it falls by more than %s orders of magnitude (%s to %s):\n"
               "the row saturates and gradients through it vanish.\n", scales[lo], scales[hi],
               lab_fmt(c, 32, floor(log10(ratio)), 0),
               lab_fmt(a, 32, jf[lo], 3), lab_fmt(b, 32, jf[hi], 3));
    else if (ratio > 1)
        printf("From scale %g to %g it falls %.1fx (%s to %s), less than 100x.\n",
               scales[lo], scales[hi], ratio, lab_fmt(a, 32, jf[lo], 3),
               lab_fmt(b, 32, jf[hi], 3));
    else
        printf("From scale %g to %g it does not fall (%s to %s).\n", scales[lo], scales[hi],
               lab_fmt(a, 32, jf[lo], 3), lab_fmt(b, 32, jf[hi], 3));
    int small = 0;
    for (int s = 0; s < nsc; s++)
        small |= jf[s] < 1e-6;
    if (small && sdpa_context_backend(env->ctx) != SDPA_BACKEND_REFERENCE)
        printf("(The %s backend accumulates the statistic in float32 without cancellation:\n"
               "3 digits down to 1e-6; far below, where p^2 underflows float32, it may read\n"
               "less than the exact value, down to 0: compare the exact column.)\n",
               sdpa_backend_name(sdpa_context_backend(env->ctx)));
}

int lab_cmd_saturation(lab_env *env, int argc, char **argv)
{
    double scales[MAX_SCALES] = {1, 8, 32, 128};
    int nsc = 4, n = 64, R = 16, random = 0;
    ta_args a;
    ta_init(&a, argc, argv);
    while (ta_next(&a) && !a.error) {
        const char *v;
        int g = lab_global_flag(env, &a);
        if (g == LAB_FLAG_HELP) {
            help();
            return LAB_EXIT_OK;
        }
        if (g == LAB_FLAG_DONE)
            continue;
        if (ta_value(&a, "--scales", &v)) {
            if (v && (!lab_parse_double_list(v, 1e-12, 1e6, MAX_SCALES, scales, &nsc)))
                ta_fail(&a, "--scales wants up to %d numbers in (0, 1e6], not '%s'",
                        MAX_SCALES, v);
        } else if (ta_value(&a, "--keys", &v)) {
            if (v && !ta_parse_int(v, 2, 256, &n))
                ta_fail(&a, "--keys wants an integer in [2, 256], not '%s'", v);
        } else if (ta_flag(&a, "--random")) {
            random = 1;
        } else if (ta_value(&a, "--rows", &v)) {
            if (v && !ta_parse_int(v, 1, 1024, &R))
                ta_fail(&a, "--rows wants an integer in [1, 1024], not '%s'", v);
        } else {
            lab_unknown_arg(&a);
        }
    }
    if (a.error)
        return lab_usage_error(env, "%s", a.message);
    if (!random)
        R = 1;
    if (lab_open(env))
        return LAB_EXIT_FAIL;

    const int Dv = 8;
    float *q = malloc((size_t)R * n * sizeof *q), *k = calloc((size_t)n * n, sizeof *k);
    float *v = malloc((size_t)n * Dv * sizeof *v), *out = malloc((size_t)R * Dv * sizeof *out);
    if (!q || !k || !v || !out) {
        fprintf(stderr, "sdpa-lab saturation: out of memory\n");
        free(q), free(k), free(v), free(out);
        return LAB_EXIT_FAIL;
    }
    tu_rng rng;
    tu_rng_seed(&rng, env->seed);
    if (random) {
        lab_fill_normal(&rng, q, (size_t)R * n, 1.0); /* q = z: the score rows */
    } else {
        for (int j = 0; j < n; j++)
            q[j] = (float)normal_quantile((j + 0.5) / n);
        for (int j = n - 1; j > 0; j--) { /* seeded shuffle */
            int i = (int)(tu_rng_uniform(&rng) * (j + 1));
            float t = q[i];
            q[i] = q[j], q[j] = t;
        }
    }
    double row_var = 0; /* of the first row: the quantile row is not unit-variance */
    for (int j = 0; j < n; j++)
        row_var += (double)q[j] * q[j] / n;
    lab_fill_normal(&rng, v, (size_t)n * Dv, 1.0);
    for (int j = 0; j < n; j++)
        k[(size_t)j * n + j] = 1.0f; /* K = I, so q.k_j = z_j */

    double pm[MAX_SCALES], ent[MAX_SCALES], jf[MAX_SCALES], sat[MAX_SCALES];
    double xpm[MAX_SCALES], xent[MAX_SCALES], xjf[MAX_SCALES];
    int rc = LAB_EXIT_OK;
    for (int s = 0; s < nsc; s++) {
        float st[SDPA_STAT_COUNT];
        if (lab_failed(env, lab_forward_stats(env, q, k, v, 1, 1, R, n, n, Dv, scales[s],
                                              out, st), "forward")) {
            rc = LAB_EXIT_FAIL;
            break;
        }
        pm[s] = st[SDPA_STAT_PMAX_MEAN];
        ent[s] = st[SDPA_STAT_ENTROPY_MEAN];
        jf[s] = st[SDPA_STAT_JACOBIAN_FRO_MEAN];
        sat[s] = st[SDPA_STAT_SATURATED_FRAC];
        xpm[s] = xent[s] = xjf[s] = 0;
        for (int r = 0; r < R; r++) {
            double a1, a2, a3;
            exact_row(q + (size_t)r * n, n, scales[s], &a1, &a2, &a3);
            xpm[s] += a1 / R;
            xent[s] += a2 / R;
            xjf[s] += a3 / R;
        }
    }
    free(q), free(k), free(v), free(out);
    if (rc != LAB_EXIT_OK)
        return rc;

    if (env->json) {
        printf("{\"command\":\"saturation\",");
        lab_json_env(stdout, env);
        printf(",\"keys\":%d,\"random\":%s,\"nrows\":%d,\"row_variance\":", n,
               random ? "true" : "false", R);
        lab_json_num(stdout, row_var);
        printf(",\"rows\":[");
        for (int s = 0; s < nsc; s++) {
            printf("%s\n{\"scale\":", s ? "," : "");
            lab_json_num(stdout, scales[s]);
            const char *names[] = {"pmax", "entropy", "jacobian_fro", "saturated_frac",
                                   "exact_pmax", "exact_entropy", "exact_jacobian_fro"};
            double vals[] = {pm[s], ent[s], jf[s], sat[s], xpm[s], xent[s], xjf[s]};
            for (int c = 0; c < 7; c++) {
                printf(",\"%s\":", names[c]);
                lab_json_num(stdout, vals[c]);
            }
            printf("}");
        }
        printf("]}\n");
    } else {
        if (random)
            printf("softmax of %d random N(0,1) score rows of %d keys (means over rows) "
                   "times a scale (%s backend)\n\n", R, n,
                   sdpa_backend_name(sdpa_context_backend(env->ctx)));
        else
            printf("softmax of a fixed row of %d scores, the normal quantiles (variance "
                   "%.3f), times a scale (%s backend)\n\n", n, row_var,
                   sdpa_backend_name(sdpa_context_backend(env->ctx)));
        const char *head[] = {"scale", "p_max", "entropy", "||J||_F", "saturated",
                              "exact p_max", "exact ||J||_F"};
        const int right[] = {1, 1, 1, 1, 1, 1, 1};
        tu_table t;
        tu_table_init(&t, 7, head, right);
        for (int s = 0; s < nsc; s++) {
            char c[7][32];
            snprintf(c[0], 32, "%g", scales[s]);
            lab_fmt(c[1], 32, pm[s], 4);
            lab_fmt(c[2], 32, ent[s], 4);
            lab_fmt(c[3], 32, jf[s], 4);
            lab_fmt(c[4], 32, sat[s], 2);
            lab_fmt(c[5], 32, xpm[s], 4);
            lab_fmt(c[6], 32, xjf[s], 4);
            const char *cells[7] = {c[0], c[1], c[2], c[3], c[4], c[5], c[6]};
            tu_table_add(&t, cells);
        }
        tu_table_print(&t, stdout);
        tu_table_free(&t);
        saturation_footer(env, scales, jf, nsc);
    }

    if (env->plot) {
        char title[96];
        if (random)
            snprintf(title, sizeof title, "saturation --random: %d N(0,1) rows of %d "
                     "keys (means)", R, n);
        else
            snprintf(title, sizeof title, "saturation: one fixed row of %d "
                     "keys", n);
        lab_chart c = {.title = title, .xlabel = "scale", .ylabel = "value", .logx = 1,
                       .logy = 1};
        lab_chart_add(&c, "||J||_F (libsdpa)", nsc, scales, jf, 0, 0);
        lab_chart_add(&c, "||J||_F exact", nsc, scales, xjf, 0, 1);
        lab_chart_add(&c, "p_max (libsdpa)", nsc, scales, pm, 1, 0);
        lab_chart_add(&c, "entropy (libsdpa)", nsc, scales, ent, 2, 0);
        if (lab_svg_write(env->plot, &c) != 0) {
            perror(env->plot);
            return LAB_EXIT_FAIL;
        }
        if (!env->json)
            printf("plot written to %s\n", env->plot);
    }
    return LAB_EXIT_OK;
}
