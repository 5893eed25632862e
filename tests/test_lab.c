/*
 * test_lab.c — sdpa-lab as a user runs it: its numbers, exit codes and
 * output files.
 *
 * The binary is found through $SDPA_TOOLS_DIR (tests/meson.build points it at
 * the build's tools folder). Every run uses --backend cpu when the cpu
 * backend is compiled in, else reference, and --json so results are read
 * with cJSON. Checks:
 *  - variance: the library's logit_std matches sqrt(d) unscaled and 1 scaled
 *    for d = 8..4096 (8% tolerance: 32k correlated samples per d);
 *  - saturation: p_max matches the float64 value computed from the row, the
 *    Jacobian norm matches at scale 1 and falls by more than 3 orders of
 *    magnitude by scale 32;
 *  - train --quick: every 1/sqrt(d) run reaches >= 90% held-out accuracy,
 *    the unscaled d = 1024 run starts with entropy < 0.15 nats and ends well
 *    below the scaled one; a second run with the same seed is identical;
 *  - qknorm --quick: without QK-norm the logits grow past 5x the RMS-normed
 *    run, whose logits stay within scale * d;
 *  - inspect: per-head spreads, saturation/collapse flags and warnings;
 *    the corpus case tests/conformance/basic (and basic of an extra corpus,
 *    tests/common/corpus.h) is read and matches its expected stats;
 *  - --plot writes a well-formed SVG, refuses a file name not ending in
 *    .svg (nothing written) and is refused by inspect, which draws no chart;
 *    bad flags exit 2 with a message; no such device exits 1 like every tool;
 *    --help exits 0 for the tool and every subcommand.
 * Run time: about 5 s on the cpu backend (under 15 s on reference).
 */
#include "testutil.h"
#include "corpus.h"

#include <cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char g_tmp[256];
static char *g_out, *g_err; /* stdout and stderr of the last run */

static const char *tools_dir(void)
{
    const char *d = getenv("SDPA_TOOLS_DIR");
    return d && *d ? d : "tools";
}

static const char *backend(void)
{
    return sdpa_backend_compiled(SDPA_BACKEND_CPU) ? "cpu" : "reference";
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return strdup("");
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)(n < 0 ? 0 : n) + 1);
    ck_assert_ptr_nonnull(b);
    size_t got = n > 0 ? fread(b, 1, (size_t)n, f) : 0;
    b[got] = '\0';
    fclose(f);
    return b;
}

static void setup(void)
{
    snprintf(g_tmp, sizeof g_tmp, "/tmp/sdpa-test-lab-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(g_tmp));
}

static void teardown(void)
{
    char cmd[512];
    free(g_out), free(g_err);
    g_out = g_err = NULL;
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_tmp);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", g_tmp);
}

/* Runs `sdpa-lab ARGS` (a shell fragment); keeps stdout/stderr, returns the
 * exit status. `with_backend` prepends --backend. */
static int lab(int with_backend, const char *args)
{
    char cmd[2048], o[300], e[300];
    snprintf(o, sizeof o, "%s/out.txt", g_tmp);
    snprintf(e, sizeof e, "%s/err.txt", g_tmp);
    snprintf(cmd, sizeof cmd, "'%s/sdpa-lab' %s%s %s >'%s' 2>'%s'", tools_dir(),
             with_backend ? "--backend " : "", with_backend ? backend() : "", args, o, e);
    int st = system(cmd);
    free(g_out), free(g_err);
    g_out = slurp(o);
    g_err = slurp(e);
    ck_assert_msg(st != -1 && WIFEXITED(st), "could not run: %s", cmd);
    return WEXITSTATUS(st);
}

/* Runs `sdpa-lab --backend BE ARGS`; like lab(). */
static int lab_on(const char *be, const char *args)
{
    char a[1500];
    snprintf(a, sizeof a, "--backend %s %s", be, args);
    return lab(0, a);
}

/* The backends every behaviour test runs on: reference, and cpu when built. */
static int backends(const char **out)
{
    int n = 0;
    out[n++] = "reference";
    if (sdpa_backend_compiled(SDPA_BACKEND_CPU))
        out[n++] = "cpu";
    return n;
}

/* Runs a --json command on backend `be` that must succeed and returns the
 * parsed document. */
static cJSON *lab_json_on(const char *be, const char *args)
{
    char a[1024];
    snprintf(a, sizeof a, "--json %s", args);
    int rc = lab_on(be, a);
    ck_assert_msg(rc == 0, "sdpa-lab --backend %s %s: exit %d, stderr: %s", be, a, rc, g_err);
    cJSON *doc = cJSON_Parse(g_out);
    ck_assert_msg(doc != NULL, "sdpa-lab %s: output is not JSON: %.300s", a, g_out);
    return doc;
}

/* Runs a --json command that must succeed and returns the parsed document. */
static cJSON *lab_json(const char *args)
{
    char a[1024];
    snprintf(a, sizeof a, "--json %s", args);
    int rc = lab(1, a);
    ck_assert_msg(rc == 0, "sdpa-lab %s: exit %d, stderr: %s", a, rc, g_err);
    cJSON *doc = cJSON_Parse(g_out);
    ck_assert_msg(doc != NULL, "sdpa-lab %s: output is not JSON: %.300s", a, g_out);
    return doc;
}

static double num(const cJSON *obj, const char *key)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
    ck_assert_msg(cJSON_IsNumber(it), "missing number \"%s\"", key);
    return it->valuedouble;
}

static const char *str(const cJSON *obj, const char *key)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
    ck_assert_msg(cJSON_IsString(it), "missing string \"%s\"", key);
    return it->valuestring;
}

static const cJSON *arr(const cJSON *obj, const char *key, int n)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
    ck_assert_msg(cJSON_IsArray(it), "missing array \"%s\"", key);
    if (n >= 0)
        ck_assert_int_eq(cJSON_GetArraySize(it), n);
    return it;
}

START_TEST(test_variance_matches_sqrt_d)
{
    cJSON *doc = lab_json("variance --dims 8,64,512,4096");
    ck_assert_str_eq(str(doc, "backend"), backend());
    const cJSON *rows = arr(doc, "rows", 4), *r;
    double last_pmax = 0;
    cJSON_ArrayForEach(r, rows) {
        double d = num(r, "d"), su = num(r, "std_unscaled"), ss = num(r, "std_scaled");
        ck_assert_double_eq_tol(num(r, "expected_unscaled"), sqrt(d), 1e-6);
        ck_assert_msg(fabs(su / sqrt(d) - 1) < 0.08, "d=%g: unscaled std %g, want %g", d,
                      su, sqrt(d));
        ck_assert_msg(fabs(ss - 1) < 0.08, "d=%g: scaled std %g, want 1", d, ss);
        /* the library's scale is exactly 1/sqrt(d): same scores, rescaled */
        ck_assert_msg(fabs(ss * sqrt(d) / su - 1) < 1e-3, "d=%g: %g vs %g", d, ss, su);
        double pu = num(r, "pmax_unscaled");
        ck_assert_msg(pu > last_pmax, "p_max unscaled must grow with d (%g)", pu);
        ck_assert_msg(num(r, "pmax_scaled") < 0.2, "scaled p_max stays small");
        last_pmax = pu;
    }
    ck_assert_msg(last_pmax > 0.9, "d=4096 unscaled is saturated (p_max %g)", last_pmax);
    cJSON_Delete(doc);
    /* the footer is computed from the table */
    ck_assert_int_eq(lab(1, "variance --dims 8,64"), 0);
    ck_assert_msg(strstr(g_out, "spread as sqrt(d) (within") &&
                      strstr(g_out, "p_max grows with d"), "%s", g_out);
}
END_TEST

START_TEST(test_saturation_collapses_jacobian)
{
    cJSON *doc = lab_json("saturation --scales 1,8,32,128");
    const cJSON *rows = arr(doc, "rows", 4), *r;
    double j[4], pm[4];
    int i = 0;
    cJSON_ArrayForEach(r, rows) {
        pm[i] = num(r, "pmax");
        j[i] = num(r, "jacobian_fro");
        ck_assert_msg(fabs(pm[i] - num(r, "exact_pmax")) < 1e-3, "scale %g: p_max %g vs %g",
                      num(r, "scale"), pm[i], num(r, "exact_pmax"));
        ck_assert_msg(fabs(num(r, "entropy") - num(r, "exact_entropy")) < 1e-3,
                      "scale %g: entropy", num(r, "scale"));
        i++;
    }
    ck_assert_msg(fabs(j[0] / num(cJSON_GetArrayItem(rows, 0), "exact_jacobian_fro") - 1) <
                      1e-3, "||J|| at scale 1: %g", j[0]);
    /* saturated (||J|| ~ 2e-6): still 3 digits, no cancellation */
    ck_assert_msg(fabs(j[2] / num(cJSON_GetArrayItem(rows, 2), "exact_jacobian_fro") - 1) <
                      1e-3, "||J|| at scale 32: %g", j[2]);
    ck_assert_msg(j[0] > 0.1 && j[0] > j[1] && j[1] > j[2] && j[3] <= j[2] + 1e-7,
                  "||J|| must fall with scale: %g %g %g %g", j[0], j[1], j[2], j[3]);
    ck_assert_msg(j[0] / fmax(j[2], 1e-30) > 1e3, "||J|| falls > 3 orders by scale 32: %g -> %g",
                  j[0], j[2]);
    ck_assert_msg(pm[0] < 0.2 && pm[3] > 0.999, "p_max %g .. %g", pm[0], pm[3]);
    cJSON_Delete(doc);
}
END_TEST

static const cJSON *find_run(const cJSON *runs, int d, const char *scale)
{
    const cJSON *r;
    cJSON_ArrayForEach(r, runs) {
        if ((int)num(r, "d") == d && strcmp(str(r, "scale"), scale) == 0)
            return r;
    }
    ck_abort_msg("no run d=%d scale=%s", d, scale);
    return NULL;
}

START_TEST(test_train_quick_scaled_learns_unscaled_saturated)
{
    cJSON *doc = lab_json("--seed 3 train --quick");
    const cJSON *runs = arr(doc, "runs", 4);
    int dims[2] = {64, 1024};
    for (int i = 0; i < 2; i++) {
        const cJSON *r = find_run(runs, dims[i], "rsqrt");
        ck_assert_msg(num(r, "final_acc") >= 0.9, "d=%d 1/sqrt(d): accuracy %g", dims[i],
                      num(r, "final_acc"));
        ck_assert_msg(num(r, "initial_entropy") > 1.0, "d=%d 1/sqrt(d) starts diffuse",
                      dims[i]);
        arr(r, "epochs", 6); /* epochs 0..5 */
    }
    const cJSON *u = find_run(runs, 1024, "1"), *s = find_run(runs, 1024, "rsqrt");
    ck_assert_msg(num(u, "initial_entropy") < 0.15, "unscaled d=1024 initial entropy %g",
                  num(u, "initial_entropy"));
    ck_assert_msg(num(u, "final_acc") < num(s, "final_acc") - 0.1,
                  "unscaled d=1024 learns slower: %g vs %g", num(u, "final_acc"),
                  num(s, "final_acc"));
    const cJSON *e0 = cJSON_GetArrayItem(arr(u, "epochs", 6), 0);
    ck_assert_msg(num(e0, "jacobian_fro") < 0.5 * num(cJSON_GetArrayItem(arr(s, "epochs", 6), 0),
                                                      "jacobian_fro"),
                  "unscaled Jacobian starts small");

    /* same seed, same numbers (everything after the timing) */
    char *first = strdup(strstr(g_out, "\"runs\""));
    cJSON_Delete(doc);
    doc = lab_json("--seed 3 train --quick");
    ck_assert_str_eq(strstr(g_out, "\"runs\""), first);
    free(first);
    cJSON_Delete(doc);
}
END_TEST

/* Issue 20: the train footer used to say that unscaled scores at large d make
 * "every gradient near 0" while the JSON showed a larger weight gradient than
 * at 1/sqrt(d). The per-row figures show why: most rows are dead (median row
 * ||J|| tiny, most rows saturated), a few carry the gradient. The footer now
 * says what the numbers say, and "never" became "> E". */
START_TEST(test_train_footer_from_data)
{
    const char *args = "train --steps 1 --epochs 1 --dims 1024 --scales 1,rsqrt";
    cJSON *doc = lab_json(args);
    const cJSON *runs = arr(doc, "runs", 2);
    const cJSON *u = find_run(runs, 1024, "1"), *s = find_run(runs, 1024, "rsqrt");
    double gu = num(u, "grad_norm_epoch1"), gs = num(s, "grad_norm_epoch1");
    ck_assert_msg(gu > gs, "unscaled d=1024 gradient %g is larger than scaled %g", gu, gs);
    const cJSON *u0 = cJSON_GetArrayItem(arr(u, "epochs", 2), 0);
    const cJSON *s0 = cJSON_GetArrayItem(arr(s, "epochs", 2), 0);
    ck_assert_msg(num(u0, "saturated_frac") > 0.5, "most unscaled rows saturated: %g",
                  num(u0, "saturated_frac"));
    ck_assert_msg(num(s0, "saturated_frac") < 0.1, "scaled rows not saturated");
    ck_assert_msg(num(u0, "jacobian_fro_median") < 1e-3 * num(u0, "jacobian_fro"),
                  "median row ||J|| %g far below the mean %g",
                  num(u0, "jacobian_fro_median"), num(u0, "jacobian_fro"));
    ck_assert_msg(num(u0, "jacobian_fro_q10") <= num(u0, "jacobian_fro_median"), "q10");
    ck_assert_msg(fabs(num(s0, "jacobian_fro_median") / num(s0, "jacobian_fro") - 1) < 0.2,
                  "scaled rows alike");
    cJSON_Delete(doc);

    ck_assert_int_eq(lab(1, args), 0);
    ck_assert_msg(!strstr(g_out, "every gradient"), "unsupported claim: %s", g_out);
    ck_assert_msg(!strstr(g_out, "never"), "'never' is a horizon artefact: %s", g_out);
    ck_assert_msg(strstr(g_out, "d=1024, scale 1 starts saturated") &&
                      strstr(g_out, "still larger than at 1/sqrt(d)"), "%s", g_out);
    ck_assert_msg(strstr(g_out, "sat@0") && strstr(g_out, "med ||J||@0") &&
                      strstr(g_out, "|grad| ep1") && strstr(g_out, "> 1"), "%s", g_out);
    /* a run that does not start saturated gets no such sentence */
    ck_assert_int_eq(lab(1, "train --steps 1 --epochs 1 --dims 16 --scales rsqrt"), 0);
    ck_assert_msg(!strstr(g_out, "starts saturated") && !strstr(g_out, "larger than"), "%s",
                  g_out);
}
END_TEST

/* Issue 20: a diverged run printed entropy 0, ||J|| 0, logit_max 0 on cpu
 * (NaN rows counted as empty) and nan on reference. Now both say nan. */
START_TEST(test_diverged_run_reads_nan)
{
    const char *bes[2];
    int nb = backends(bes);
    for (int b = 0; b < nb; b++) {
        const char *args = "train --lr 1e300 --dims 64 --scales rsqrt --epochs 1 --steps 2";
        cJSON *doc = lab_json_on(bes[b], args);
        const cJSON *r = cJSON_GetArrayItem(arr(doc, "runs", 1), 0);
        ck_assert_msg(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "diverged")),
                      "%s: diverged", bes[b]);
        const cJSON *e1 = cJSON_GetArrayItem(arr(r, "epochs", 2), 1);
        const char *keys[] = {"entropy", "jacobian_fro", "logit_max", "saturated_frac",
                              "loss"};
        for (int k = 0; k < 5; k++)
            ck_assert_msg(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(e1, keys[k])),
                          "%s: %s of a diverged epoch must be null (NaN)", bes[b], keys[k]);
        ck_assert_msg(num(e1, "nonfinite_rows") > 0, "%s", bes[b]);
        cJSON_Delete(doc);
        ck_assert_int_eq(lab_on(bes[b], args), 0);
        ck_assert_msg(strstr(g_out, "diverged at epoch 1") && strstr(g_out, "nan"), "%s: %s",
                      bes[b], g_out);
    }
}
END_TEST

/* Issue 20: the saturation footer claimed "orders of magnitude" under
 * --random tables where ||J|| first rises and then falls about 5x, and
 * printed the float32 caveat on the float64 reference backend. */
START_TEST(test_saturation_footer_from_table)
{
    ck_assert_int_eq(lab_on("reference", "saturation --random"), 0);
    ck_assert_msg(!strstr(g_out, "orders of magnitude"), "%s", g_out);
    ck_assert_msg(strstr(g_out, "rises from") && strstr(g_out, "less than 100x"), "%s", g_out);
    ck_assert_msg(!strstr(g_out, "float32"), "no float32 caveat on reference: %s", g_out);
    ck_assert_int_eq(lab_on("reference", "saturation"), 0);
    ck_assert_msg(strstr(g_out, "orders of magnitude") && !strstr(g_out, "rises"), "%s", g_out);
    ck_assert_msg(strstr(g_out, "variance 0.98"), "the quantile row's variance: %s", g_out);
    if (sdpa_backend_compiled(SDPA_BACKEND_CPU)) {
        ck_assert_int_eq(lab_on("cpu", "saturation"), 0);
        ck_assert_msg(strstr(g_out, "float32"), "float32 caveat where it applies: %s", g_out);
    }
}
END_TEST

/* Issue 20: qknorm had no loss column, and argmax accuracy hides diffuse
 * attention (RMS norm + 1/d: accuracy 1 with entropy near log(pairs)). */
START_TEST(test_qknorm_loss_and_diffuse)
{
    ck_assert_int_eq(lab(1, "qknorm --quiet --scale inv"), 0);
    ck_assert_msg(strstr(g_out, "final loss"), "%s", g_out);
    ck_assert_msg(strstr(g_out, "qk_norm rms: accuracy") && strstr(g_out, "diffuse"), "%s",
                  g_out);
    ck_assert_msg(!strstr(g_out, "never move"), "%s", g_out);
    cJSON *doc = lab_json("qknorm --quiet --scale inv");
    const cJSON *rms = cJSON_GetArrayItem(arr(doc, "runs", 2), 1);
    ck_assert_msg(num(rms, "final_loss") > 0.5 && num(rms, "final_acc") >= 0.9,
                  "diffuse but accurate: loss %g acc %g", num(rms, "final_loss"),
                  num(rms, "final_acc"));
    cJSON_Delete(doc);
}
END_TEST

/* causal: on every backend, the gradient of output i w.r.t. k_j, v_j is
 * exactly 0 for j > i and nonzero for j <= i; with Sq != Skv the diagonal
 * decides which keys each query sees, and bottom-right with Sq > Skv leaves
 * the first rows empty. */
START_TEST(test_causal_no_leak_and_diagonals)
{
    const char *bes[2];
    int nb = backends(bes);
    for (int b = 0; b < nb; b++) {
        cJSON *doc = lab_json_on(bes[b], "causal --T 8 --d 16");
        ck_assert_msg(num(doc, "leak_max") == 0, "%s: future gradient %g", bes[b],
                      num(doc, "leak_max"));
        const cJSON *cases = arr(doc, "cases", 5), *c;
        cJSON_ArrayForEach(c, cases) {
            int sq = (int)num(c, "sq"), skv = (int)num(c, "skv");
            int br = strcmp(str(c, "diagonal"), "bottom_right") == 0;
            int off = br ? skv - sq : 0;
            ck_assert_msg(num(c, "leak_max") == 0, "%s", bes[b]);
            const cJSON *seen = arr(c, "keys_seen", sq), *last = arr(c, "last_key_seen", sq);
            int empty = 0;
            for (int i = 0; i < sq; i++) {
                int want = i + off + 1;
                want = want < 0 ? 0 : want > skv ? skv : want;
                empty += want == 0;
                ck_assert_msg(cJSON_GetArrayItem(seen, i)->valueint == want,
                              "%s sq=%d skv=%d %s row %d sees %d keys, want %d", bes[b], sq,
                              skv, str(c, "diagonal"), i, cJSON_GetArrayItem(seen, i)->valueint,
                              want);
                ck_assert_int_eq(cJSON_GetArrayItem(last, i)->valueint, want - 1);
            }
            ck_assert_msg(num(c, "empty_rows") == empty, "%s: empty rows %g want %d", bes[b],
                          num(c, "empty_rows"), empty);
            if (sq <= skv)
                ck_assert_msg(num(c, "min_visible_grad") > 0, "visible keys get gradients");
        }
        cJSON_Delete(doc);
        ck_assert_int_eq(lab_on(bes[b], "causal"), 0);
        ck_assert_msg(strstr(g_out, "No leakage") && strstr(g_out, "0 (exact)"), "%s", g_out);
    }
}
END_TEST

/* online: the streaming forward equals a float64 softmax over materialised
 * scores, key blocks merged with sdpa_merge equal one call (float32
 * rounding), and the T=8192, 32-head bf16 score matrix is 4 GiB while the
 * plan's workspace is far smaller. */
START_TEST(test_online_matches_full_and_merge)
{
    const char *bes[2];
    int nb = backends(bes);
    for (int b = 0; b < nb; b++) {
        cJSON *doc = lab_json_on(bes[b], "online --T 128 --d 32 --heads 2 --blocks 4");
        ck_assert_msg(num(doc, "stream_vs_materialised") < 1e-5, "%s: %g", bes[b],
                      num(doc, "stream_vs_materialised"));
        ck_assert_msg(num(doc, "merge_vs_whole_out") < 1e-5, "%s: %g", bes[b],
                      num(doc, "merge_vs_whole_out"));
        ck_assert_msg(num(doc, "merge_vs_whole_lse") < 1e-5, "%s: %g", bes[b],
                      num(doc, "merge_vs_whole_lse"));
        ck_assert_double_eq(num(doc, "scores_bf16_bytes"), 4.0 * 1024 * 1024 * 1024);
        ck_assert_msg(num(doc, "plan_workspace_bytes") < 0.01 * num(doc, "scores_bf16_bytes"),
                      "%s: workspace %g", bes[b], num(doc, "plan_workspace_bytes"));
        cJSON_Delete(doc);
    }
    ck_assert_int_eq(lab(1, "online --T 10 --blocks 3"), 2); /* blocks must divide T */
}
END_TEST

/* heads: one head's best output sits at the float64 distance from the
 * target to the convex hull of V (> 0); h heads of d_model/h reach the
 * target with (near) zero entropy each; one head's scores, recovered from
 * the library's output with V = I, have rank d_k (4 of 8 keys). */
START_TEST(test_heads_hull_and_recovery)
{
    const char *bes[2];
    int nb = backends(bes);
    for (int b = 0; b < nb; b++) {
        cJSON *doc = lab_json_on(bes[b], "heads --keys 8 --head-dim 8 --heads 2");
        double bound = num(doc, "hull_distance"), e1 = num(doc, "one_head_error");
        ck_assert_msg(bound > 0.1 * num(doc, "target_norm"), "%s: target outside the hull: %g",
                      bes[b], bound);
        ck_assert_msg(e1 >= bound * (1 - 1e-4) && e1 <= bound * (1 + 1e-3),
                      "%s: one head %g at the bound %g", bes[b], e1, bound);
        ck_assert_msg(num(doc, "one_head_entropy") > 0.3, "%s: one head averages", bes[b]);
        ck_assert_msg(num(doc, "multi_head_error") < 1e-4 * num(doc, "target_norm"),
                      "%s: two heads reach the target: %g", bes[b],
                      num(doc, "multi_head_error"));
        const cJSON *ent = arr(doc, "head_entropy", 2), *e;
        cJSON_ArrayForEach(e, ent)
            ck_assert_msg(e->valuedouble < 0.01, "%s: sharp heads", bes[b]);
        /* the scores of one head recovered from the library have rank d_k */
        ck_assert_msg(num(doc, "score_rank_dk") == 4 && num(doc, "score_rank") == 4,
                      "%s: score rank %g, d_k %g", bes[b], num(doc, "score_rank"),
                      num(doc, "score_rank_dk"));
        cJSON_Delete(doc);
    }
}
END_TEST

/* init: W_Q, W_K shrunk by d^(-1/4) with scale 1 gives the same attention at
 * initialisation as scale 1/sqrt(d); Adam's first step is then d^(1/4)
 * times larger relative to the weights, and the runs part. */
START_TEST(test_init_same_scores_different_training)
{
    const char *bes[2];
    int nb = backends(bes);
    for (int b = 0; b < nb; b++) {
        cJSON *doc = lab_json_on(bes[b], "init --d 64 --epochs 3 --steps 5");
        ck_assert_msg(num(doc, "epoch0_max_diff") < 1e-4, "%s: epoch 0 differs by %g", bes[b],
                      num(doc, "epoch0_max_diff"));
        ck_assert_msg(fabs(num(doc, "update_rel_ratio") - pow(64, 0.25)) < 0.05,
                      "%s: Adam first-step ratio %g vs d^(1/4)", bes[b],
                      num(doc, "update_rel_ratio"));
        const cJSON *runs = arr(doc, "runs", 2);
        const cJSON *a = cJSON_GetArrayItem(arr(cJSON_GetArrayItem(runs, 0), "epochs", 4), 3);
        const cJSON *c = cJSON_GetArrayItem(arr(cJSON_GetArrayItem(runs, 1), "epochs", 4), 3);
        ck_assert_msg(fabs(num(a, "logit_max") - num(c, "logit_max")) >
                          0.1 * num(a, "logit_max"),
                      "%s: the runs part: logit_max %g vs %g", bes[b], num(a, "logit_max"),
                      num(c, "logit_max"));
        cJSON_Delete(doc);
    }
}
END_TEST

/* --seeds N: each seed's figures are those of a run with that --seed, the
 * mean and sd are theirs, and the tables show mean+-sd. */
START_TEST(test_seeds_mean_and_spread)
{
    cJSON *doc = lab_json("--seed 1 train --dims 64 --scales 1 --epochs 2 --steps 3 --seeds 3");
    const cJSON *r = cJSON_GetArrayItem(arr(doc, "runs", 1), 0);
    const cJSON *acc = arr(r, "final_loss_per_seed", 3);
    double v[3], m = 0, sd = 0;
    for (int k = 0; k < 3; k++)
        m += (v[k] = cJSON_GetArrayItem(acc, k)->valuedouble) / 3;
    for (int k = 0; k < 3; k++)
        sd += (v[k] - m) * (v[k] - m) / 2;
    ck_assert_double_eq_tol(num(r, "final_loss_mean"), m, 1e-7 * m);
    ck_assert_double_eq_tol(num(r, "final_loss_sd"), sqrt(sd), 1e-6 * sqrt(sd));
    ck_assert_msg(sd > 0, "seeds differ");
    cJSON_Delete(doc);
    doc = lab_json("--seed 2 train --dims 64 --scales 1 --epochs 2 --steps 3");
    r = cJSON_GetArrayItem(arr(doc, "runs", 1), 0);
    ck_assert_double_eq_tol(num(r, "final_loss"), v[1], 1e-7 * v[1]);
    cJSON_Delete(doc);

    ck_assert_int_eq(lab(1, "train --dims 64 --scales 1,rsqrt --epochs 2 --steps 3 --seeds 3 "
                            "--quiet"), 0);
    ck_assert_msg(strstr(g_out, "+-") && strstr(g_out, "mean+-sd over the seeds"), "%s", g_out);
    doc = lab_json("qknorm --quick --seeds 2");
    const cJSON *none = cJSON_GetArrayItem(arr(doc, "runs", 2), 0);
    arr(none, "peak_logit_max_per_seed", 2);
    arr(none, "final_loss_per_seed", 2);
    cJSON_Delete(doc);
    ck_assert_int_eq(lab(1, "qknorm --quick --quiet --seeds 2"), 0);
    ck_assert_msg(strstr(g_out, "in every seed") && strstr(g_out, "of 2 seeds"), "%s", g_out);
}
END_TEST

START_TEST(test_qknorm_bounds_logits)
{
    cJSON *doc = lab_json("qknorm --quick --d 64");
    const cJSON *runs = arr(doc, "runs", 2);
    const cJSON *none = cJSON_GetArrayItem(runs, 0), *rms = cJSON_GetArrayItem(runs, 1);
    ck_assert_str_eq(str(none, "qk_norm"), "none");
    ck_assert_str_eq(str(rms, "qk_norm"), "rms");
    ck_assert_msg(num(rms, "peak_logit_max") <= 8.0 * 1.001, "rms logits bounded by sqrt(64): %g",
                  num(rms, "peak_logit_max"));
    ck_assert_msg(num(none, "peak_logit_max") > 5 * num(rms, "peak_logit_max"),
                  "logits grow without QK-norm: %g", num(none, "peak_logit_max"));
    ck_assert_msg(num(none, "min_entropy") < 0.05, "entropy collapses: %g",
                  num(none, "min_entropy"));
    ck_assert_msg(num(rms, "min_entropy") > 0.1, "entropy stays: %g", num(rms, "min_entropy"));
    ck_assert_msg(num(rms, "final_acc") >= 0.9, "rms learns: %g", num(rms, "final_acc"));
    cJSON_Delete(doc);
}
END_TEST

START_TEST(test_inspect_random_flags_heads)
{
    cJSON *doc = lab_json("inspect --random --shape 1,8,64,32");
    const cJSON *heads = arr(doc, "heads", 8), *h;
    cJSON_ArrayForEach(h, heads) {
        int i = (int)num(h, "h");
        double want = pow(2.0, i - 1);
        ck_assert_msg(fabs(num(h, "logit_std") / want - 1) < 0.15, "head %d spread %g vs %g", i,
                      num(h, "logit_std"), want);
        ck_assert_double_eq(num(h, "empty_rows"), 0);
        const cJSON *sat = cJSON_GetObjectItemCaseSensitive(h, "saturated");
        const cJSON *col = cJSON_GetObjectItemCaseSensitive(h, "collapsed");
        ck_assert(cJSON_IsBool(sat) && cJSON_IsBool(col));
        ck_assert_int_eq(cJSON_IsTrue(sat), num(h, "saturated_frac") > 0.5);
        ck_assert_int_eq(cJSON_IsTrue(col), num(h, "entropy_mean") < 0.1);
        if (i <= 2)
            ck_assert(!cJSON_IsTrue(sat) && !cJSON_IsTrue(col));
    }
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(heads, 7),
                                                            "saturated")));
    cJSON_Delete(doc);

    ck_assert_int_eq(lab(1, "inspect --random"), 0);
    ck_assert_msg(strstr(g_out, "warning: batch 0 head 7 is saturated") != NULL, "%s", g_out);
    ck_assert_msg(strstr(g_out, "warning: batch 0 head 0") == NULL, "%s", g_out);
    ck_assert_msg(strstr(g_out, "jacobian_fro_mean") != NULL, "table header");
}
END_TEST

START_TEST(test_inspect_case_dir)
{
    /* basic of the repository's corpus, and of each extra corpus that has one */
    char dirs[TCORPUS_MAX][1024], args[1200], probe[1200];
    int nd = tcorpus_dirs(dirs, TCORPUS_MAX);
    for (int k = 0; k < nd; k++) {
        snprintf(probe, sizeof probe, "%.1023s/basic/case.json", dirs[k]);
        if (k > 0 && access(probe, R_OK) != 0)
            continue;
        snprintf(args, sizeof args, "inspect '%.1023s/basic'", dirs[k]);
        int rc = lab(1, args);
        ck_assert_msg(rc == 0, "%s: exit %d: %s", dirs[k], rc, g_err);
        const char *p = strstr(g_out, "largest difference from the case's expected stats: ");
        ck_assert_msg(p != NULL, "%s", g_out);
        double diff = strtod(strchr(p, ':') + 1, NULL);
        ck_assert_msg(diff < 1e-4, "%s: stats differ from the case by %g", dirs[k], diff);
    }
    ck_assert_int_eq(lab(1, "inspect /nonexistent/case"), 1);
    ck_assert_msg(strlen(g_err) > 0, "a message for a missing case");
}
END_TEST

/* Numeric attribute `name` of the tag starting at `tag` (NAN if absent). */
static double svg_attr(const char *tag, const char *name)
{
    char key[64];
    snprintf(key, sizeof key, " %s=\"", name);
    const char *end = strchr(tag, '>'), *p = strstr(tag, key);
    if (!p || (end && p > end))
        return NAN;
    return strtod(p + strlen(key), NULL);
}

/* Renders path with rsvg-convert (Debian librsvg2-bin, listed in
 * scripts/install-deps.sh) and checks the PNG's size is the viewBox's. */
static void render_svg(const char *path, double W, double H)
{
    char png[600], cmd[1400];
    snprintf(png, sizeof png, "%s.png", path);
    snprintf(cmd, sizeof cmd, "rsvg-convert -o '%s' '%s' 2>&1", png, path);
    int st = system(cmd);
    ck_assert_msg(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
                  "rsvg-convert failed on %s (install librsvg2-bin: scripts/install-deps.sh)",
                  path);
    FILE *f = fopen(png, "rb");
    unsigned char h[24];
    ck_assert_msg(f && fread(h, 1, 24, f) == 24 && memcmp(h + 1, "PNG", 3) == 0,
                  "%s: no PNG", png);
    fclose(f);
    unsigned w = (unsigned)h[16] << 24 | h[17] << 16 | h[18] << 8 | h[19];
    unsigned ht = (unsigned)h[20] << 24 | h[21] << 16 | h[22] << 8 | h[23];
    ck_assert_msg(w == (unsigned)W && ht == (unsigned)H, "%s: rendered %ux%u, viewBox %gx%g",
                  png, w, ht, W, H);
}

/* A well-formed chart whose legend and legend texts lie inside the viewBox
 * (text width estimated at 7.2 px per 12 px character, as lab_svg.c
 * does), with `want_entries` legend entries (-1: any) whose colour and dash
 * pairs are all different; rendered with rsvg-convert. Returns the text. */
static char *check_svg_n(const char *path, int want_entries)
{
    char *s = slurp(path);
    size_t n = strlen(s);
    ck_assert_msg(strncmp(s, "<?xml", 5) == 0 && strstr(s, "<svg") && strstr(s, "<polyline"),
                  "%s is not an SVG chart", path);
    ck_assert_msg(n > 8 && strcmp(s + n - 7, "</svg>\n") == 0, "%s is truncated", path);
    ck_assert_msg(!strstr(s, "nan") && !strstr(s, "inf"), "%s has non-finite coordinates",
                  path);
    const char *vb = strstr(s, "viewBox=\"0 0 ");
    ck_assert_ptr_nonnull(vb);
    double W = strtod(vb + 13, NULL), H = strtod(strchr(vb + 13, ' ') + 1, NULL);
    /* every horizontal text inside the view (0.6 em per character) */
    for (const char *t = strstr(s, "<text "); t; t = strstr(t + 1, "<text ")) {
        const char *end = strchr(t, '>'), *c1 = strstr(end, "</text>");
        const char *tr = strstr(t, "transform="), *an = strstr(t, "text-anchor=\"");
        if (tr && tr < end)
            continue;
        double fs = svg_attr(t, "font-size"), tx = svg_attr(t, "x");
        double tw = 0.6 * (isnan(fs) ? 12 : fs) * (double)(c1 - end - 1);
        double lo = tx, hi = tx + tw;
        if (an && an < end && strncmp(an + 13, "middle", 6) == 0)
            lo = tx - tw / 2, hi = tx + tw / 2;
        else if (an && an < end && strncmp(an + 13, "end", 3) == 0)
            lo = tx - tw, hi = tx;
        ck_assert_msg(lo >= 0 && hi <= W, "%s: text '%.*s' (%g..%g) is clipped by the view "
                      "0..%g", path, (int)(c1 - end - 1), end + 1, lo, hi, W);
        double ty = svg_attr(t, "y");
        ck_assert_msg(ty - (isnan(fs) ? 12 : fs) >= 0 && ty + 4 <= H, "%s: text '%.*s' at "
                      "y %g is clipped by the view height %g", path, (int)(c1 - end - 1),
                      end + 1, ty, H);
    }
    const char *g = strstr(s, "<g id=\"legend\">");
    ck_assert_msg(g != NULL, "%s: no legend group", path);
    const char *r = strstr(g, "<rect");
    double x = svg_attr(r, "x"), y = svg_attr(r, "y");
    double w = svg_attr(r, "width"), h = svg_attr(r, "height");
    ck_assert_msg(x >= 0 && y >= 0 && x + w <= W && y + h <= H,
                  "%s: legend box (%g,%g %gx%g) outside the view %gx%g", path, x, y, w, h, W, H);
    int entries = 0;
    char styles[80][96];
    for (const char *t = strstr(g, "<line"); t && t < strstr(g, "</g>");
         t = strstr(t + 1, "<line")) {
        const char *st = strstr(t, "stroke=\"");
        const char *da = strstr(t, "stroke-dasharray=\"");
        const char *end = strchr(t, '>');
        ck_assert_int_lt(entries, 80);
        snprintf(styles[entries], sizeof styles[0], "%.7s %.12s", st + 8,
                 da && da < end ? da + 18 : "solid");
        for (int i = 0; i < entries; i++)
            ck_assert_msg(strcmp(styles[i], styles[entries]) != 0,
                          "%s: legend entries %d and %d share colour and dash (%s)", path, i,
                          entries, styles[i]);
        const char *txt = strstr(t, "class=\"legend-entry\"");
        double tx = svg_attr(txt - 5, "x");
        const char *c0 = strchr(txt, '>') + 1, *c1 = strstr(c0, "</text>");
        ck_assert_msg(tx + 7.2 * (double)(c1 - c0) <= x + w + 1e-6 && x + w <= W,
                      "%s: legend text '%.*s' runs past the legend box", path, (int)(c1 - c0),
                      c0);
        entries++;
    }
    if (want_entries >= 0)
        ck_assert_msg(entries == want_entries, "%s: %d legend entries, want %d", path,
                      entries, want_entries);
    render_svg(path, W, H);
    return s;
}

static void check_svg(const char *path) { free(check_svg_n(path, -1)); }

START_TEST(test_plots)
{
    const char *cmds[] = {"variance --dims 8,64", "saturation", "train --quick --quiet",
                          "qknorm --quick --quiet"};
    for (int i = 0; i < 4; i++) {
        char args[1024], path[512];
        snprintf(path, sizeof path, "%s/plot%d.svg", g_tmp, i);
        snprintf(args, sizeof args, "--plot '%s' %s", path, cmds[i]);
        int rc = lab(1, args);
        ck_assert_msg(rc == 0, "%s: exit %d: %s", args, rc, g_err);
        check_svg(path);
    }
    ck_assert_int_eq(lab(1, "--plot /nonexistent/dir/x.svg variance --dims 8"), 1);
}
END_TEST
/* Issue 20: train --dims 8..1024 --scales 1,rsqrt,inv,2 drew 24 of 32 runs,
 * the legend ran off the canvas, colours repeated after 12, and the epoch
 * axis had fractional ticks. Now: 32 distinct legend entries inside the
 * view, integer epoch ticks, the mode in the title. */
START_TEST(test_plot_train_every_run)
{
    char args[1024], path[512];
    snprintf(path, sizeof path, "%s/train.svg", g_tmp);
    snprintf(args, sizeof args, "--plot '%s' train --dims 8,16,32,64,128,256,512,1024 "
             "--scales 1,rsqrt,inv,2 --epochs 2 --steps 1 --quiet", path);
    ck_assert_int_eq(lab(1, args), 0);
    char *s = check_svg_n(path, 32);
    ck_assert_msg(strstr(s, "d=1024, 2<") && strstr(s, "d=512, 1<"), "every run named");
    ck_assert_msg(strstr(s, ">train: "), "the title names the mode");
    /* x tick labels sit 16 px under the plot (y = 400.0): integers only */
    int ticks = 0;
    for (const char *t = strstr(s, "y=\"400.0\" text-anchor=\"middle\">"); t;
         t = strstr(t + 1, "y=\"400.0\" text-anchor=\"middle\">")) {
        const char *lab = strchr(t, '>') + 1;
        ck_assert_msg(strspn(lab, "0123456789") == (size_t)(strstr(lab, "<") - lab),
                      "epoch tick '%.6s' is not an integer", lab);
        ticks++;
    }
    ck_assert_int_ge(ticks, 2);
    free(s);
}
END_TEST

/* Issue 20: zeros on a log axis vanished silently; the --random saturation
 * chart had the fixed row's title. A 0 (the cpu's float32 ||J|| at scale
 * 128) is drawn at the floor with a note; no note when nothing is <= 0. */
START_TEST(test_plot_log_zeros_and_titles)
{
    const char *bes[2];
    int nb = backends(bes);
    for (int b = 0; b < nb; b++) {
        char args[1024], path[512];
        snprintf(path, sizeof path, "%s/sat-%s.svg", g_tmp, bes[b]);
        snprintf(args, sizeof args, "--plot '%s' saturation", path);
        cJSON *doc = lab_json_on(bes[b], args);
        int zeros = 0;
        const cJSON *r;
        cJSON_ArrayForEach(r, arr(doc, "rows", 4)) {
            const char *k[] = {"jacobian_fro", "exact_jacobian_fro", "pmax", "entropy"};
            for (int i = 0; i < 4; i++)
                zeros += num(r, k[i]) <= 0;
        }
        cJSON_Delete(doc);
        char *s = check_svg_n(path, 4);
        int floor = 0;
        for (const char *t = strstr(s, "class=\"floor\""); t;
             t = strstr(t + 1, "class=\"floor\""))
            floor++;
        ck_assert_msg(floor == zeros, "%s: %d floor markers for %d zeros", bes[b], floor,
                      zeros);
        ck_assert_int_eq(strstr(s, "drawn at the floor") != NULL, zeros > 0);
        ck_assert_msg(strstr(s, ">saturation: one fixed row") != NULL, "%s: title", bes[b]);
        free(s);
    }
    char args[1024], path[512];
    snprintf(path, sizeof path, "%s/rand.svg", g_tmp);
    snprintf(args, sizeof args, "--plot '%s' saturation --random", path);
    ck_assert_int_eq(lab(1, args), 0);
    char *s = check_svg_n(path, 4);
    ck_assert_msg(strstr(s, ">saturation --random: 16 N(0,1) rows") != NULL, "random title");
    free(s);
}
END_TEST

/* A chart is SVG, so --plot x.png (which used to get SVG data under a PNG
 * name) is refused before anything runs, whatever the case of the suffix
 * or where the flag stands; inspect draws no chart and refuses --plot
 * instead of ignoring it. */
START_TEST(test_plot_refusals)
{
    const char *cases[][2] = {
        {"--plot %s/x.png variance --dims 8", ".svg"},
        {"variance --dims 8 --plot %s/x.PNG", ".svg"},
        {"--plot %s/.svg saturation", ".svg"},
        {"inspect --random --plot %s/x.svg", "inspect draws no chart"},
        {"--plot %s/x.svg inspect --random", "inspect draws no chart"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char args[1024], cmd[600];
        snprintf(args, sizeof args, cases[i][0], g_tmp);
        int rc = lab(1, args);
        ck_assert_msg(rc == 2, "'sdpa-lab %s' exited %d, want 2", args, rc);
        ck_assert_msg(strstr(g_err, cases[i][1]) && strstr(g_err, "--plot"),
                      "'sdpa-lab %s': stderr lacks \"%s\": %s", args, cases[i][1], g_err);
        ck_assert_str_eq(g_out, "");
        /* nothing was written */
        snprintf(cmd, sizeof cmd, "ls -A '%s' | grep -qv -e out.txt -e err.txt", g_tmp);
        ck_assert_msg(system(cmd) != 0, "'sdpa-lab %s' left a file in %s", args, g_tmp);
    }
    /* an upper-case .SVG is an SVG file name */
    char args[1024];
    snprintf(args, sizeof args, "--plot '%s/x.SVG' variance --dims 8", g_tmp);
    ck_assert_int_eq(lab(1, args), 0);
}
END_TEST

/* No such device: exit 1, the code every tool uses for "no context". */
START_TEST(test_no_device_exit_1)
{
    setenv("SDPA_DEVICE", "no-such-device-anywhere", 1);
    ck_assert_int_eq(lab(1, "variance --dims 8"), 1);
    ck_assert_ptr_nonnull(strstr(g_err, "cannot open backend"));
    ck_assert_str_eq(g_out, "");
    unsetenv("SDPA_DEVICE");
}
END_TEST

START_TEST(test_bad_flags_exit_2)
{
    const char *bad[] = {
        "",                                 /* no subcommand */
        "bogus",                            /* unknown subcommand */
        "--bogus variance",                 /* unknown global flag */
        "--backend nosuch variance",        /* unknown backend */
        "--seed -3 variance",               /* bad seed */
        "--plot",                           /* missing value */
        "variance --dims 0",                /* out of range */
        "variance --dims 8,x",              /* junk in a list */
        "variance --heads",                 /* missing value */
        "variance extra",                   /* stray argument */
        "variance --json=1",                /* value for a switch */
        "saturation --scales -1",           /* non-positive scale */
        "saturation --keys 1000",           /* too many keys */
        "train --optim foo",                /* unknown optimizer */
        "train --epochs 0",                 /* out of range */
        "train --scales 2x",                /* bad scale */
        "train --dims 16,,64",              /* empty list item */
        "qknorm --d abc",                   /* not a number */
        "qknorm --scale -2",                /* bad scale */
        "inspect",                          /* no input */
        "inspect --random --shape 1,2,3",   /* three axes */
        "inspect --random somewhere",       /* both inputs */
        "inspect a b",                      /* two case folders */
        "causal --T 1",                     /* out of range */
        "online --blocks x",                /* not a number */
        "heads --heads 9 --keys 8",         /* more heads than keys */
        "init --d 0",                       /* out of range */
        "train --seeds 0",                  /* out of range */
        "init --seeds 3",                   /* one seed at a time */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = lab(0, bad[i]);
        ck_assert_msg(rc == 2, "'sdpa-lab %s' exited %d, want 2", bad[i], rc);
        ck_assert_msg(strstr(g_err, "sdpa-lab") && strstr(g_err, "--help"),
                      "'sdpa-lab %s': unclear message: %s", bad[i], g_err);
        ck_assert_msg(g_out[0] == '\0', "'sdpa-lab %s' printed to stdout", bad[i]);
    }
}
END_TEST

START_TEST(test_help_exit_0)
{
    const char *cmds[] = {"--help", "variance --help", "saturation --help", "train --help",
                          "qknorm --help", "inspect --help", "causal --help",
                          "online --help", "heads --help", "init --help", "-h"};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        ck_assert_int_eq(lab(0, cmds[i]), 0);
        ck_assert_msg(strncmp(g_out, "usage: sdpa-lab", 15) == 0, "%s: %s", cmds[i], g_out);
    }
}
END_TEST

static Suite *lab_suite(void)
{
    Suite *s = suite_create("lab");
    TCase *tc = tcase_create("sdpa-lab");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_variance_matches_sqrt_d);
    tcase_add_test(tc, test_saturation_collapses_jacobian);
    tcase_add_test(tc, test_train_quick_scaled_learns_unscaled_saturated);
    tcase_add_test(tc, test_qknorm_bounds_logits);
    tcase_add_test(tc, test_train_footer_from_data);
    tcase_add_test(tc, test_diverged_run_reads_nan);
    tcase_add_test(tc, test_saturation_footer_from_table);
    tcase_add_test(tc, test_qknorm_loss_and_diffuse);
    tcase_add_test(tc, test_seeds_mean_and_spread);
    tcase_add_test(tc, test_causal_no_leak_and_diagonals);
    tcase_add_test(tc, test_online_matches_full_and_merge);
    tcase_add_test(tc, test_heads_hull_and_recovery);
    tcase_add_test(tc, test_init_same_scores_different_training);
    tcase_add_test(tc, test_inspect_random_flags_heads);
    tcase_add_test(tc, test_inspect_case_dir);
    tcase_add_test(tc, test_plots);
    tcase_add_test(tc, test_plot_refusals);
    tcase_add_test(tc, test_plot_train_every_run);
    tcase_add_test(tc, test_plot_log_zeros_and_titles);
    tcase_add_test(tc, test_no_device_exit_1);
    tcase_add_test(tc, test_bad_flags_exit_2);
    tcase_add_test(tc, test_help_exit_0);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return trun_suite(lab_suite()); }
