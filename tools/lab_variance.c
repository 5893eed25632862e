/*
 * lab_variance.c — `sdpa-lab variance`: the spread of raw attention scores
 * grows as sqrt(d). For each head size d, random q and k with unit-variance
 * entries go through one library forward call with scale 1 and one with
 * scale 1/sqrt(d) (SDPA_SCALE_DEFAULT); the standard deviation of the scores
 * is read from the stats output (SDPA_STAT_LOGIT_STD), pooled over heads, and
 * printed next to the analytic values sqrt(d) and 1. Nothing here computes a
 * dot product: the numbers are the library's.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lab_cmds.h"
#include "lab_svg.h"

#define MAX_DIMS 16

static void help(void)
{
    printf("usage: sdpa-lab variance [--dims 8,64,512,4096] [--queries 64] [--keys 128]\n"
           "                         [--heads 4]\n"
           "\n"
           "Standard deviation of the attention scores q.k for random vectors with\n"
           "unit-variance entries, unscaled and scaled by 1/sqrt(d), as measured by the\n"
           "library's logit_std statistic (pooled over heads). Expected: sqrt(d) and 1.\n"
           "Also shows the mean max probability of the softmax rows.\n"
           "\n"
           "  --dims LIST     head sizes d (default 8,64,512,4096)\n"
           "  --queries N     query rows per head (default 64)\n"
           "  --keys N        keys per head (default 128)\n"
           "  --heads N       heads (default 4); each head has queries*keys scores\n"
           "\n%s", lab_global_help);
}

/* Pooled mean and std over heads of equal counts, from per-head mean/std. */
static double pooled_std(const float *stats, int64_t heads)
{
    double m = 0, s2 = 0;
    for (int64_t h = 0; h < heads; h++) {
        double mu = stats[h * SDPA_STAT_COUNT + SDPA_STAT_LOGIT_MEAN];
        double sd = stats[h * SDPA_STAT_COUNT + SDPA_STAT_LOGIT_STD];
        m += mu;
        s2 += sd * sd + mu * mu;
    }
    m /= (double)heads;
    s2 = s2 / (double)heads - m * m;
    return sqrt(s2 > 0 ? s2 : 0);
}

static double mean_col(const float *stats, int64_t heads, int col)
{
    double s = 0;
    for (int64_t h = 0; h < heads; h++)
        s += stats[h * SDPA_STAT_COUNT + col];
    return s / (double)heads;
}

/* The sentences under the table, each only when the measured rows show it:
 * the spreads' largest relative deviation from sqrt(d) and from 1, and
 * whether p_max grows with d unscaled (over the rows in increasing d). */
static void variance_footer(const int64_t *dims, int n, const int *ran, const double *su,
                            const double *ss, const double *pu, const double *ps)
{
    double du = 0, ds = 0, psmax = 0;
    int grows = 1, count = 0, last = -1;
    for (int i = 0; i < n; i++) {
        if (!ran[i])
            continue;
        count++;
        du = fmax(du, fabs(su[i] / sqrt((double)dims[i]) - 1));
        ds = fmax(ds, fabs(ss[i] - 1));
        psmax = fmax(psmax, ps[i]);
        if (last >= 0 && dims[i] > dims[last] && !(pu[i] > pu[last]))
            grows = 0;
        last = i;
    }
    printf("\n");
    if (du < 0.1)
        printf("Unscaled, the scores spread as sqrt(d) (within %.1f%% at every d).\n",
               100 * du);
    else
        printf("Unscaled, the spread differs from sqrt(d) by up to %.1f%%.\n", 100 * du);
    if (ds < 0.1)
        printf("Scaled by 1/sqrt(d), their spread is 1 (within %.1f%%) at every d.\n",
               100 * ds);
    if (count > 1 && grows)
        printf("Unscaled p_max grows with d (to %.3f); scaled, it stays at or below %.3f.\n",
               pu[last], psmax);
}

int lab_cmd_variance(lab_env *env, int argc, char **argv)
{
    int64_t dims[MAX_DIMS] = {8, 64, 512, 4096};
    int ndims = 4, Sq = 64, Skv = 128, H = 4;
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
        if (ta_value(&a, "--dims", &v)) {
            if (v && !ta_parse_i64_list(v, 1, 4096, 1, MAX_DIMS, dims, &ndims))
                ta_fail(&a, "--dims wants up to %d integers in [1, 4096], not '%s'",
                        MAX_DIMS, v);
        } else if (ta_value(&a, "--queries", &v)) {
            if (v && !ta_parse_int(v, 1, 4096, &Sq))
                ta_fail(&a, "--queries wants an integer in [1, 4096], not '%s'", v);
        } else if (ta_value(&a, "--keys", &v)) {
            if (v && !ta_parse_int(v, 2, 4096, &Skv))
                ta_fail(&a, "--keys wants an integer in [2, 4096], not '%s'", v);
        } else if (ta_value(&a, "--heads", &v)) {
            if (v && !ta_parse_int(v, 1, 64, &H))
                ta_fail(&a, "--heads wants an integer in [1, 64], not '%s'", v);
        } else {
            lab_unknown_arg(&a);
        }
    }
    if (a.error)
        return lab_usage_error(env, "%s", a.message);
    for (int i = 0; i < ndims; i++)
        if ((int64_t)H * (Sq > Skv ? Sq : Skv) * dims[i] > ((int64_t)1 << 26))
            return lab_usage_error(env, "heads x max(queries, keys) x d = %lld elements is "
                                        "too large (limit 2^26)",
                                   (long long)H * (Sq > Skv ? Sq : Skv) * dims[i]);
    if (lab_open(env))
        return LAB_EXIT_FAIL;

    const int64_t Dv = 8;
    double std_u[MAX_DIMS], std_s[MAX_DIMS], pmax_u[MAX_DIMS], pmax_s[MAX_DIMS];
    double dd[MAX_DIMS], want_u[MAX_DIMS], want_s[MAX_DIMS];
    int rc = LAB_EXIT_OK, ran[MAX_DIMS], nran = 0;
    tu_rng rng;
    tu_rng_seed(&rng, env->seed);
    for (int i = 0; i < ndims && rc == LAB_EXIT_OK; i++) {
        int64_t d = dims[i];
        size_t nq = (size_t)H * Sq * d, nk = (size_t)H * Skv * d;
        float *q = malloc(nq * sizeof *q), *k = malloc(nk * sizeof *k);
        float *vv = malloc((size_t)H * Skv * Dv * sizeof *vv);
        float *out = malloc((size_t)H * Sq * Dv * sizeof *out);
        float st[2][64 * SDPA_STAT_COUNT];
        if (!q || !k || !vv || !out) {
            fprintf(stderr, "sdpa-lab variance: out of memory at d = %lld\n", (long long)d);
            rc = LAB_EXIT_FAIL;
        } else {
            lab_fill_normal(&rng, q, nq, 1.0);
            lab_fill_normal(&rng, k, nk, 1.0);
            lab_fill_normal(&rng, vv, (size_t)H * Skv * Dv, 1.0);
            sdpa_status s1 = lab_forward_stats(env, q, k, vv, 1, H, Sq, Skv, d, Dv, 1.0,
                                               out, st[0]);
            sdpa_status s2 = s1 != SDPA_OK ? s1
                             : lab_forward_stats(env, q, k, vv, 1, H, Sq, Skv, d, Dv,
                                                 SDPA_SCALE_DEFAULT, out, st[1]);
            ran[i] = s2 == SDPA_OK;
            if (s2 == SDPA_ERR_UNSUPPORTED) /* e.g. head size above the backend's limit */
                fprintf(stderr, "sdpa-lab variance: d = %lld skipped: %s does not run it\n",
                        (long long)d, sdpa_backend_name(sdpa_context_backend(env->ctx)));
            else if (lab_failed(env, s2, "forward"))
                rc = LAB_EXIT_FAIL;
        }
        dd[i] = (double)d;
        want_u[i] = sqrt((double)d);
        want_s[i] = 1.0;
        std_u[i] = std_s[i] = pmax_u[i] = pmax_s[i] = NAN;
        if (rc == LAB_EXIT_OK && ran[i]) {
            nran++;
            std_u[i] = pooled_std(st[0], H);
            std_s[i] = pooled_std(st[1], H);
            pmax_u[i] = mean_col(st[0], H, SDPA_STAT_PMAX_MEAN);
            pmax_s[i] = mean_col(st[1], H, SDPA_STAT_PMAX_MEAN);
        }
        free(q);
        free(k);
        free(vv);
        free(out);
    }
    if (rc != LAB_EXIT_OK)
        return rc;
    if (nran == 0) {
        fprintf(stderr, "sdpa-lab variance: the %s backend runs none of the head sizes\n",
                sdpa_backend_name(sdpa_context_backend(env->ctx)));
        return LAB_EXIT_FAIL;
    }

    if (env->json) {
        printf("{\"command\":\"variance\",");
        lab_json_env(stdout, env);
        printf(",\"queries\":%d,\"keys\":%d,\"heads\":%d,\"rows\":[", Sq, Skv, H);
        for (int i = 0; i < ndims; i++) {
            printf("%s\n{\"d\":%lld,\"supported\":%s,\"std_unscaled\":", i ? "," : "",
                   (long long)dims[i], ran[i] ? "true" : "false");
            lab_json_num(stdout, std_u[i]);
            printf(",\"expected_unscaled\":");
            lab_json_num(stdout, want_u[i]);
            printf(",\"std_scaled\":");
            lab_json_num(stdout, std_s[i]);
            printf(",\"expected_scaled\":1,\"pmax_unscaled\":");
            lab_json_num(stdout, pmax_u[i]);
            printf(",\"pmax_scaled\":");
            lab_json_num(stdout, pmax_s[i]);
            printf("}");
        }
        printf("]}\n");
    } else {
        printf("std of attention scores over %d x %d random unit-variance q, k per head, "
               "%d heads (%s backend)\n\n",
               Sq, Skv, H, sdpa_backend_name(sdpa_context_backend(env->ctx)));
        const char *head[] = {"d", "std(q.k)", "sqrt(d)", "std(q.k/sqrt(d))", "expected",
                              "p_max unscaled", "p_max scaled"};
        const int right[] = {1, 1, 1, 1, 1, 1, 1};
        tu_table t;
        tu_table_init(&t, 7, head, right);
        for (int i = 0; i < ndims; i++) {
            char c[7][32];
            snprintf(c[0], 32, "%lld", (long long)dims[i]);
            lab_fmt(c[1], 32, std_u[i], 3);
            lab_fmt(c[2], 32, want_u[i], 3);
            lab_fmt(c[3], 32, std_s[i], 3);
            lab_fmt(c[4], 32, 1.0, 3);
            lab_fmt(c[5], 32, pmax_u[i], 3);
            lab_fmt(c[6], 32, pmax_s[i], 3);
            static const int measured[4] = {1, 3, 5, 6}; /* columns from the library */
            for (int j = 0; j < 4 && !ran[i]; j++)
                snprintf(c[measured[j]], 32, "%s", j == 0 ? "unsupported" : "-");
            const char *cells[7] = {c[0], c[1], c[2], c[3], c[4], c[5], c[6]};
            tu_table_add(&t, cells);
        }
        tu_table_print(&t, stdout);
        tu_table_free(&t);
        variance_footer(dims, ndims, ran, std_u, std_s, pmax_u, pmax_s);
    }

    if (env->plot) {
        lab_chart c = {.title = "variance: spread of attention scores vs head size",
                       .xlabel = "head size d", .ylabel = "std of scores", .logx = 1,
                       .logy = 1};
        lab_chart_add(&c, "unscaled (libsdpa)", ndims, dd, std_u, 1, 0);
        lab_chart_add(&c, "sqrt(d)", ndims, dd, want_u, 1, 1);
        lab_chart_add(&c, "scaled 1/sqrt(d) (libsdpa)", ndims, dd, std_s, 0, 0);
        lab_chart_add(&c, "1", ndims, dd, want_s, 0, 1);
        if (lab_svg_write(env->plot, &c) != 0) {
            perror(env->plot);
            return LAB_EXIT_FAIL;
        }
        if (!env->json)
            printf("plot written to %s\n", env->plot);
    }
    return LAB_EXIT_OK;
}
