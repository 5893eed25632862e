/*
 * lab_causal.c — `sdpa-lab causal`: causal attention leaks nothing from the
 * future, shown through the library's backward rather than its mask. For
 * each output row i, a backward call with dout nonzero in row i only gives
 * dK and dV: d out_i / d k_j and d out_i / d v_j. Under causal masking every
 * key j > i must get exactly 0 (not a small number), and every j <= i a
 * nonzero gradient. The same probe then shows what the diagonal choice does
 * when Sq != Skv: top-left (PyTorch is_causal) against bottom-right
 * (FlashAttention, KV cache), as the number of keys each query sees, and
 * the rows left empty (library statistic empty_rows).
 *
 * Everything measured comes from sdpa_plan_forward / sdpa_plan_backward with
 * the window set by sdpa_attention_desc_set_causal; the tool only chooses
 * dout and counts nonzero gradient rows.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lab_cmds.h"

static void help(void)
{
    printf("usage: sdpa-lab causal [--T 8] [--d 16]\n"
           "\n"
           "For causal attention over T positions, the gradient of output row i with\n"
           "respect to every key k_j and value v_j, from the library's backward with\n"
           "dout nonzero in row i only: exactly 0 for every j > i (no leakage), nonzero\n"
           "for j <= i. Then the keys each query sees when Sq != Skv, with the diagonal\n"
           "at the top left (PyTorch is_causal) or the bottom right (FlashAttention,\n"
           "a KV cache whose queries are the last Sq positions).\n"
           "\n"
           "  --T N           sequence length of the square case (default 8, 2..256);\n"
           "                  the misaligned cases use Sq = T/2, Skv = T and the reverse\n"
           "  --d N           head size (default 16, 1..256)\n"
           "\n%s", lab_global_help);
}

/* One probed configuration. */
typedef struct probe {
    int sq, skv;
    sdpa_diagonal diag;
    int seen[256];      /* keys with a nonzero dK or dV row, per query row */
    int last_seen[256]; /* largest such key index, -1 when none */
    double leak_row[256], min_row[256]; /* the two below, per query row */
    double leak;        /* largest |dK|, |dV| over keys j > i + off */
    double min_seen;    /* smallest max(|dK_j|, |dV_j|) over keys j <= i + off */
    double empty_rows;  /* library statistic */
} probe;

static double row_absmax(const float *x, int n)
{
    double m = 0;
    for (int i = 0; i < n; i++)
        m = fmax(m, fabs(x[i]));
    return m;
}

/* Runs the forward once and one backward per query row. Returns 0, or 1
 * after printing the library's error. */
static int run_probe(lab_env *env, probe *p, int D, tu_rng *rng)
{
    int sq = p->sq, skv = p->skv, rc = 1;
    size_t nq = (size_t)sq * D, nk = (size_t)skv * D;
    float *q = malloc(nq * sizeof *q), *k = malloc(nk * sizeof *k);
    float *v = malloc(nk * sizeof *v), *o = malloc(nq * sizeof *o);
    float *lse = malloc((size_t)sq * sizeof *lse), *dout = malloc(nq * sizeof *dout);
    float *dq = malloc(nq * sizeof *dq), *dk = malloc(nk * sizeof *dk);
    float *dv = malloc(nk * sizeof *dv), st[SDPA_STAT_COUNT];
    sdpa_plan *plan = NULL;
    if (!q || !k || !v || !o || !lse || !dout || !dq || !dk || !dv) {
        fprintf(stderr, "sdpa-lab causal: out of memory\n");
        goto done;
    }
    lab_fill_normal(rng, q, nq, 1.0);
    lab_fill_normal(rng, k, nk, 1.0);
    lab_fill_normal(rng, v, nk, 1.0);
    sdpa_attention_desc d;
    sdpa_attention_desc_init(&d);
    sdpa_attention_desc_set_causal(&d, p->diag);
    sdpa_forward_tensors *t = &d.tensors;
    t->q = sdpa_tensor_host(q, SDPA_DTYPE_F32, 1, 1, sq, D);
    t->k = sdpa_tensor_host(k, SDPA_DTYPE_F32, 1, 1, skv, D);
    t->v = sdpa_tensor_host(v, SDPA_DTYPE_F32, 1, 1, skv, D);
    t->out = sdpa_tensor_host(o, SDPA_DTYPE_F32, 1, 1, sq, D);
    t->lse = sdpa_tensor_host(lse, SDPA_DTYPE_F32, 1, 1, sq, 1);
    t->stats = sdpa_tensor_host(st, SDPA_DTYPE_F32, 1, 1, 1, SDPA_STAT_COUNT);
    sdpa_backward_tensors b;
    memset(&b, 0, sizeof b);
    b.dout = sdpa_tensor_host(dout, SDPA_DTYPE_F32, 1, 1, sq, D);
    b.dq = sdpa_tensor_host(dq, SDPA_DTYPE_F32, 1, 1, sq, D);
    b.dk = sdpa_tensor_host(dk, SDPA_DTYPE_F32, 1, 1, skv, D);
    b.dv = sdpa_tensor_host(dv, SDPA_DTYPE_F32, 1, 1, skv, D);
    sdpa_plan_options po;
    sdpa_plan_options_init(&po);
    po.flags = SDPA_PLAN_BACKWARD;
    if (lab_failed(env, sdpa_plan_create(env->ctx, &d, &po, &plan), "plan_create") ||
        lab_failed(env, sdpa_plan_forward(plan, t), "forward"))
        goto done;
    p->empty_rows = st[SDPA_STAT_EMPTY_ROWS];
    p->leak = 0;
    p->min_seen = INFINITY;
    int off = p->diag == SDPA_DIAGONAL_BOTTOM_RIGHT ? skv - sq : 0;
    for (int i = 0; i < sq; i++) {
        memset(dout, 0, nq * sizeof *dout);
        for (int c = 0; c < D; c++)
            dout[(size_t)i * D + c] = (float)(1.0 + tu_rng_uniform(rng));
        if (lab_failed(env, sdpa_plan_backward(plan, t, &b), "backward"))
            goto done;
        p->seen[i] = 0;
        p->last_seen[i] = -1;
        p->leak_row[i] = 0;
        p->min_row[i] = INFINITY;
        for (int j = 0; j < skv; j++) {
            double g = fmax(row_absmax(dk + (size_t)j * D, D), row_absmax(dv + (size_t)j * D, D));
            if (g != 0) {
                p->seen[i]++;
                p->last_seen[i] = j;
            }
            if (j > i + off)
                p->leak_row[i] = fmax(p->leak_row[i], g);
            else
                p->min_row[i] = fmin(p->min_row[i], g);
        }
        p->leak = fmax(p->leak, p->leak_row[i]);
        p->min_seen = fmin(p->min_seen, p->min_row[i]);
    }
    rc = 0;
done:
    sdpa_plan_destroy(plan);
    free(q), free(k), free(v), free(o), free(lse), free(dout), free(dq), free(dk), free(dv);
    return rc;
}

/* "0 (exact)" for an exact zero, else the number. */
static const char *fmt_leak(char *buf, double v)
{
    return v == 0 ? "0 (exact)" : lab_fmt(buf, 32, v, 3);
}

static const char *diag_name(sdpa_diagonal d)
{
    return d == SDPA_DIAGONAL_BOTTOM_RIGHT ? "bottom_right" : "top_left";
}

int lab_cmd_causal(lab_env *env, int argc, char **argv)
{
    int T = 8, D = 16, rc;
    const lab_int_opt opts[] = {{"--T", 2, 256, &T}, {"--d", 1, 256, &D}};
    if (!lab_parse_int_opts(env, argc, argv, help, opts, 2, &rc))
        return rc;
    if (lab_open(env))
        return LAB_EXIT_FAIL;
    int h = T / 2 > 0 ? T / 2 : 1;
    probe pr[5] = {
        {.sq = T, .skv = T, .diag = SDPA_DIAGONAL_TOP_LEFT},
        {.sq = h, .skv = T, .diag = SDPA_DIAGONAL_TOP_LEFT},
        {.sq = h, .skv = T, .diag = SDPA_DIAGONAL_BOTTOM_RIGHT},
        {.sq = T, .skv = h, .diag = SDPA_DIAGONAL_TOP_LEFT},
        {.sq = T, .skv = h, .diag = SDPA_DIAGONAL_BOTTOM_RIGHT},
    };
    tu_rng rng;
    tu_rng_seed(&rng, env->seed);
    double leak = 0;
    for (int c = 0; c < 5; c++) {
        if (run_probe(env, &pr[c], D, &rng))
            return LAB_EXIT_FAIL;
        leak = fmax(leak, pr[c].leak);
    }
    const char *be = sdpa_backend_name(sdpa_context_backend(env->ctx));

    if (env->json) {
        printf("{\"command\":\"causal\",");
        lab_json_env(stdout, env);
        printf(",\"T\":%d,\"d\":%d,\"leak_max\":", T, D);
        lab_json_num(stdout, leak);
        printf(",\"cases\":[");
        for (int c = 0; c < 5; c++) {
            printf("%s\n{\"sq\":%d,\"skv\":%d,\"diagonal\":\"%s\",\"leak_max\":", c ? "," : "",
                   pr[c].sq, pr[c].skv, diag_name(pr[c].diag));
            lab_json_num(stdout, pr[c].leak);
            printf(",\"min_visible_grad\":");
            lab_json_num(stdout, pr[c].min_seen);
            printf(",\"empty_rows\":");
            lab_json_num(stdout, pr[c].empty_rows);
            printf(",\"keys_seen\":[");
            for (int i = 0; i < pr[c].sq; i++)
                printf("%s%d", i ? "," : "", pr[c].seen[i]);
            printf("],\"last_key_seen\":[");
            for (int i = 0; i < pr[c].sq; i++)
                printf("%s%d", i ? "," : "", pr[c].last_seen[i]);
            printf("]}");
        }
        printf("]}\n");
        return LAB_EXIT_OK;
    }

    char a[32], b[32];
    printf("causal attention over T = %d positions, d = %d (%s backend): the gradient of\n"
           "output row i with respect to k_j and v_j, from sdpa_plan_backward\n\n", T, D, be);
    printf("  %4s  %10s  %22s  %22s\n", "row", "keys seen", "max |dK|,|dV|, j > i",
           "min |dK|,|dV|, j <= i");
    for (int i = 0; i < T; i++)
        printf("  %4d  %10d  %22s  %22s\n", i, pr[0].seen[i],
               pr[0].leak_row[i] == 0 ? (i < T - 1 ? "0 (exact)" : "(no j > i)")
                                      : lab_fmt(a, 32, pr[0].leak_row[i], 3),
               lab_fmt(b, 32, pr[0].min_row[i], 3));
    printf("\n  all rows: largest future gradient %s, smallest past one %s\n",
           fmt_leak(a, pr[0].leak), lab_fmt(b, 32, pr[0].min_seen, 3));
    if (pr[0].leak == 0 && pr[0].min_seen > 0)
        printf("No leakage: for every i, dK_j and dV_j are exactly 0 for all j > i, and\n"
               "nonzero for every j <= i.\n");
    else
        printf("LEAKAGE: a key after row i gets a gradient from output i (%s), or a\n"
               "visible key gets none.\n", a);

    printf("\nSq != Skv: keys each query row sees (last key seen in brackets)\n\n");
    for (int c = 1; c < 5; c++) {
        printf("  Sq=%-3d Skv=%-3d %-12s ", pr[c].sq, pr[c].skv, diag_name(pr[c].diag));
        for (int i = 0; i < pr[c].sq && i < 16; i++)
            printf(" %d[%d]", pr[c].seen[i], pr[c].last_seen[i]);
        printf("%s  empty rows %g, leak %s\n", pr[c].sq > 16 ? " ..." : "", pr[c].empty_rows,
               fmt_leak(a, pr[c].leak));
    }
    const probe *tl = &pr[1], *br = &pr[2];
    int last = tl->sq - 1;
    printf("\nWith Sq=%d < Skv=%d, top-left lets the last query see keys 0..%d (%d of %d);\n"
           "bottom-right lets it see keys 0..%d (%d of %d). For a KV cache whose queries\n"
           "are the newest positions, bottom-right is the causal one.\n",
           tl->sq, tl->skv, tl->last_seen[last], tl->seen[last], tl->skv,
           br->last_seen[last], br->seen[last], br->skv);
    if (pr[4].empty_rows > 0)
        printf("With Sq=%d > Skv=%d, bottom-right leaves the first %g query rows with no\n"
               "key at all (empty rows: output 0).\n", pr[4].sq, pr[4].skv, pr[4].empty_rows);
    return leak == 0 ? LAB_EXIT_OK : LAB_EXIT_FAIL;
}
