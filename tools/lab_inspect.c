/*
 * lab_inspect.c — `sdpa-lab inspect`: the library's per-head statistics of
 * one forward call (all SDPA_STAT_COUNT columns) as a table, followed by a
 * warning line for each head that is saturated (saturated_frac > 0.5) or
 * collapsed (entropy_mean < 0.1 nats).
 *
 * Inputs: --random builds q, k, v with unit-variance entries and gives head h
 * a score spread of 2^(h-1) (q and k times 2^((h-1)/2)) so a default run
 * shows healthy, saturated and collapsed heads side by side. CASE_DIR is an
 * sdpa-case/1 folder read by tools/common/case.c: its inputs and attributes
 * (masks, bias, kv_len, window, softcap, QK-norm, gains, temperature) are
 * run forward with a stats output; its expected outputs are not used.
 * It draws no chart: --plot is refused (exit 2) rather than ignored.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lab_cmds.h"
#include "lab_task.h"
#include "case.h"

#define SAT_LIMIT 0.5
#define COLLAPSE_LIMIT 0.1

static void help(void)
{
    printf("usage: sdpa-lab inspect CASE_DIR\n"
           "       sdpa-lab inspect --random [--shape B,H,S,D] [--causal] [--scale S]\n"
           "\n"
           "Per-head statistics of one attention forward call (logit mean, std, min,\n"
           "max, entropy mean and min, p_max mean, saturated fraction, Jacobian norm,\n"
           "sink mass, empty rows), with a warning for heads that are saturated\n"
           "(saturated_frac > %.1f) or collapsed (entropy_mean < %.1f).\n"
           "\n"
           "  CASE_DIR        an sdpa-case/1 folder (its inputs and attributes)\n"
           "  --random        random inputs; head h has score spread 2^(h-1)\n"
           "  --shape LIST    B,H,S,D for --random (default 1,8,128,64)\n"
           "  --causal        causal attention (window -1,0)\n"
           "  --scale S       1 | rsqrt | inv | a number (default rsqrt)\n"
           "\n%s", SAT_LIMIT, COLLAPSE_LIMIT, lab_global_help);
}



int lab_cmd_inspect(lab_env *env, int argc, char **argv)
{
    int64_t shape[4] = {1, 8, 128, 64};
    int nshape = 4, random = 0, causal = 0;
    double scale = SDPA_SCALE_DEFAULT;
    const char *case_dir = NULL;
    ta_args a;
    ta_init(&a, argc, argv);
    while (ta_next(&a) && !a.error) {
        const char *val;
        int g = lab_global_flag(env, &a);
        if (g == LAB_FLAG_HELP) {
            help();
            return LAB_EXIT_OK;
        }
        if (g == LAB_FLAG_DONE)
            continue;
        if (ta_flag(&a, "--random")) {
            random = 1;
        } else if (ta_flag(&a, "--causal")) {
            causal = 1;
        } else if (ta_value(&a, "--shape", &val)) {
            if (val && (!ta_parse_i64_list(val, 1, 65536, 4, 4, shape, &nshape) ||
                        shape[0] > 1024 || shape[1] > 1024 || shape[3] > 4096 ||
                        shape[0] * shape[1] * shape[2] * shape[3] > (int64_t)1 << 24))
                ta_fail(&a, "--shape wants B,H,S,D (B, H <= 1024, D <= 4096, at most "
                            "2^24 elements), not '%s'", val);
        } else if (ta_value(&a, "--scale", &val)) {
            if (val && !lab_scale_parse(val, &scale))
                ta_fail(&a, "--scale wants 1, rsqrt, inv or a positive number, not '%s'", val);
        } else if (a.positional && !case_dir) {
            case_dir = a.arg;
        } else {
            lab_unknown_arg(&a);
        }
    }
    if (a.error)
        return lab_usage_error(env, "%s", a.message);
    if (case_dir && random)
        return lab_usage_error(env, "give either CASE_DIR or --random, not both");
    if (!random && !case_dir)
        return lab_usage_error(env, "missing input: CASE_DIR or --random");
    if (env->plot)
        return lab_usage_error(env, "inspect draws no chart, so --plot does not apply "
                                    "(variance, saturation, train and qknorm take it)");

    sdpa_attention_desc d;
    sdpa_attention_desc_init(&d);
    sc_case cs;
    int have_case = 0, rc = LAB_EXIT_FAIL;
    float *q = NULL, *k = NULL, *v = NULL, *out = NULL, *st = NULL;
    int64_t B, H, Sq, Skv, D, Dv;
    char label[256];
    if (case_dir) {
        char err[512];
        if (!sc_load(case_dir, &cs, err, sizeof err)) {
            fprintf(stderr, "sdpa-lab inspect: %s: %s\n", case_dir, err);
            return LAB_EXIT_FAIL;
        }
        have_case = 1;
        d = cs.attrs;
        B = cs.B, H = cs.Hq, Sq = cs.Sq, Skv = cs.Skv, D = cs.D, Dv = cs.Dv;
        sc_case_inputs(&cs, &d.tensors, NULL);
        snprintf(label, sizeof label, "case %s (%s, Hkv %lld, Skv %lld)", cs.name,
                 sdpa_dtype_name(cs.dtype), (long long)cs.Hkv, (long long)Skv);
    } else {
        B = shape[0], H = shape[1], Sq = Skv = shape[2], D = Dv = shape[3];
        const size_t n = (size_t)(B * H * Sq * D);
        q = malloc(n * sizeof *q), k = malloc(n * sizeof *k), v = malloc(n * sizeof *v);
        if (!q || !k || !v) {
            fprintf(stderr, "sdpa-lab inspect: out of memory\n");
            goto done;
        }
        tu_rng rng;
        tu_rng_seed(&rng, env->seed);
        for (int64_t b = 0; b < B; b++)
            for (int64_t h = 0; h < H; h++) {
                size_t off = (size_t)((b * H + h) * Sq * D);
                double g = pow(2.0, (double)(h - 1) / 2.0);
                lab_fill_normal(&rng, q + off, (size_t)(Sq * D), g);
                lab_fill_normal(&rng, k + off, (size_t)(Sq * D), g);
                lab_fill_normal(&rng, v + off, (size_t)(Sq * D), 1.0);
            }
        d.scale = scale;
        if (causal)
            sdpa_attention_desc_set_causal(&d, SDPA_DIAGONAL_TOP_LEFT);
        d.tensors.q = sdpa_tensor_host(q, SDPA_DTYPE_F32, B, H, Sq, D);
        d.tensors.k = sdpa_tensor_host(k, SDPA_DTYPE_F32, B, H, Skv, D);
        d.tensors.v = sdpa_tensor_host(v, SDPA_DTYPE_F32, B, H, Skv, Dv);
        snprintf(label, sizeof label, "random inputs%s, head h with score spread 2^(h-1)",
                 causal ? ", causal" : "");
    }
    {
        sdpa_dtype odt = have_case ? cs.dtype : SDPA_DTYPE_F32;
        out = malloc((size_t)(B * H * Sq * Dv) * sdpa_dtype_size(odt));
        st = malloc((size_t)(B * H) * SDPA_STAT_COUNT * sizeof *st);
        if (!out || !st) {
            fprintf(stderr, "sdpa-lab inspect: out of memory\n");
            goto done;
        }
        d.tensors.out = sdpa_tensor_host(out, odt, B, H, Sq, Dv);
        d.tensors.stats = sdpa_tensor_host(st, SDPA_DTYPE_F32, B, H, 1, SDPA_STAT_COUNT);
    }
    if (lab_open(env) || lab_failed(env, sdpa_attention_forward(env->ctx, &d), "forward"))
        goto done;

    if (env->json) {
        printf("{\"command\":\"inspect\",");
        lab_json_env(stdout, env);
        printf(",\"input\":");
        lab_json_str(stdout, label);
        printf(",\"shape\":[%lld,%lld,%lld,%lld,%lld],\"heads\":[", (long long)B,
               (long long)H, (long long)Sq, (long long)Skv, (long long)D);
        for (int64_t i = 0; i < B * H; i++) {
            const float *s = st + i * SDPA_STAT_COUNT;
            printf("%s\n{\"b\":%lld,\"h\":%lld", i ? "," : "", (long long)(i / H),
                   (long long)(i % H));
            for (int c = 0; c < SDPA_STAT_COUNT; c++) {
                printf(",\"%s\":", sdpa_stat_name(c));
                lab_json_num(stdout, s[c]);
            }
            printf(",\"saturated\":%s,\"collapsed\":%s}",
                   s[SDPA_STAT_SATURATED_FRAC] > SAT_LIMIT ? "true" : "false",
                   s[SDPA_STAT_ENTROPY_MEAN] < COLLAPSE_LIMIT ? "true" : "false");
        }
        printf("]}\n");
    } else {
        printf("per-head statistics of one forward call: %s\nB %lld, Hq %lld, Sq %lld, "
               "D %lld (%s backend)\n\n", label, (long long)B, (long long)H, (long long)Sq,
               (long long)D, sdpa_backend_name(sdpa_context_backend(env->ctx)));
        const char *head[2 + SDPA_STAT_COUNT];
        int right[2 + SDPA_STAT_COUNT];
        head[0] = "b", head[1] = "h", right[0] = right[1] = 1;
        for (int c = 0; c < SDPA_STAT_COUNT; c++)
            head[2 + c] = sdpa_stat_name(c), right[2 + c] = 1;
        tu_table t;
        tu_table_init(&t, 2 + SDPA_STAT_COUNT, head, right);
        for (int64_t i = 0; i < B * H; i++) {
            char cell[2 + SDPA_STAT_COUNT][32];
            const char *cells[2 + SDPA_STAT_COUNT];
            snprintf(cell[0], 32, "%lld", (long long)(i / H));
            snprintf(cell[1], 32, "%lld", (long long)(i % H));
            for (int c = 0; c < SDPA_STAT_COUNT; c++)
                lab_fmt(cell[2 + c], 32, st[i * SDPA_STAT_COUNT + c],
                        c == SDPA_STAT_EMPTY_ROWS ? 0 : 3);
            for (int c = 0; c < 2 + SDPA_STAT_COUNT; c++)
                cells[c] = cell[c];
            tu_table_add(&t, cells);
        }
        tu_table_print(&t, stdout);
        tu_table_free(&t);
        int warned = 0;
        for (int64_t i = 0; i < B * H; i++) {
            const float *s = st + i * SDPA_STAT_COUNT;
            if (s[SDPA_STAT_SATURATED_FRAC] > SAT_LIMIT)
                printf("%swarning: batch %lld head %lld is saturated: %.0f%% of rows have "
                       "p_max > 0.99 (softmax Jacobian %.2g)\n", warned++ ? "" : "\n",
                       (long long)(i / H), (long long)(i % H),
                       100.0 * s[SDPA_STAT_SATURATED_FRAC], s[SDPA_STAT_JACOBIAN_FRO_MEAN]);
            if (s[SDPA_STAT_ENTROPY_MEAN] < COLLAPSE_LIMIT)
                printf("%swarning: batch %lld head %lld has collapsed: entropy_mean %.3g "
                       "nats < %.1f\n", warned++ ? "" : "\n", (long long)(i / H),
                       (long long)(i % H), s[SDPA_STAT_ENTROPY_MEAN], COLLAPSE_LIMIT);
        }
        if (!warned)
            printf("\nno saturated or collapsed heads\n");
        if (have_case && cs.want[sc_key_find("stats")].present) {
            const sc_tensor *w = &cs.want[sc_key_find("stats")];
            double worst = 0;
            for (int64_t i = 0; i < B * H; i++)
                for (int col = 0; col < cs.stats_cols; col++) {
                    double want = tu_load(w->data, w->dtype, (size_t)(i * cs.stats_cols + col));
                    double got = st[i * SDPA_STAT_COUNT + cs.stats_map[col]];
                    if (isfinite(want))
                        worst = fmax(worst, fabs(got - want));
                }
            printf("largest difference from the case's expected stats: %.3g\n", worst);
        }
    }
    rc = LAB_EXIT_OK;
done:
    free(q), free(k), free(v), free(out), free(st);
    if (have_case)
        sc_free(&cs);
    return rc;
}
