/*
 * test_parity.c — one case table (tests/common/parity_cases.c) x every
 * compiled and loadable backend x storage dtype, against the float64 oracle
 * of tests/naive_attention.h. Each test is one Check TCase named
 * "<backend>/<case>" (".f16" / ".bf16" appended for the other dtypes of an
 * F_ALLDT row), so a failure names both; CK_RUN_CASE=opencl/everything runs
 * one. A backend gets parity by being compiled in: the backends come from
 * sdpa_backend_compiled(), each probed in a child process (a backend that
 * does not start is named on stderr and not run). SDPA_PARITY_BACKENDS
 * (comma-separated names, e.g. "opencl") restricts the run to those backends,
 * which must then start.
 *
 * Per test: random inputs (never zeros); every output poisoned with NaN
 * before the call; every other row runs with dilated outputs (all strides
 * doubled) whose gaps hold a sentinel that must survive the call; out, lse
 * (always) and stats compared with the oracle; backward rows also dq, dk, dv.
 * The oracle's backward has no QK-norm or temperature: those rows compare
 * their gradients with the reference backend instead (itself checked by
 * finite differences in the gradcheck suite), and on the reference backend
 * only their forward is checked (the test says so). A backend may refuse a
 * 16-bit dtype only with SDPA_ERR_UNSUPPORTED and only where its device
 * reports no 16-bit storage; the test then prints "unsupported" with the
 * backend's message. Any other refusal fails.
 *
 * Plans already run (SDPA_PARITY_SEEN=<file>, used by the persona scripts,
 * scripts/cl-personas.sh): a row whose plan (its name, the plan's kernel,
 * config and workspace size from sdpa_plan_get_info) is listed in the file
 * is not run again; the test prints "same plan as under <label>" and passes.
 * A row that passes is appended with the label SDPA_PARITY_SEEN_AS (default:
 * SDPA_TEST_PERSONA, else "default"). So GPU personas that get the same plan
 * for a row run it once; what the plan's config does not name is assumed
 * equal (the device limits a persona enforces at enqueue, for one).
 *
 * Persona set (SDPA_PARITY_SET=persona, used by scripts/cl-personas.sh):
 * instead of the table's cross product, one row per kernel kind a GPU
 * persona's default configuration selects (prefill at D 64 and 256,
 * statistics, decode, backward), each at the lengths 1, 7, 63, 65, 257 and
 * 1000 (decode: keys), f32, with the persona's exact default plans. A GPU
 * kernel program is fixed by (dtype, D, Dv, mask, bias, softcap, stats, the
 * configuration), not by lengths or runtime features (causal, windows,
 * kv_len, broadcasts), so each kind costs one program build per persona;
 * the kinds' shapes and build-relevant features are those of test_opencl's
 * `personas` case, whose builds (PoCL's cache, the library's) the rows reuse.
 * The full cross product runs under the default device (the test step).
 *
 * SDPA_TEST_MAX_LEN=N (the sanitizer step of .ci/run): rows whose query
 * length exceeds N are not run, and stderr says how many; decode rows (long
 * keys, a few queries) all run. The plain test step runs every row.
 *
 * Runs unforked by default (CK_FORK=no unless the caller set it): one context
 * per backend for the whole run, so plans of a kernel variant share the
 * context's compiled programs and pipelines. 312 tests (78 per backend) on
 * reference, cpu, opencl (PoCL) and vulkan (lavapipe): 79 s wall under
 * `meson test parity` on the 2-core VM with PoCL's and Mesa's caches warm
 * (load average 8; 174 s of CPU time); cold, at a load average of 13-18,
 * OpenCL alone took 271 s and Vulkan 408 s wall. reference + cpu: ~10 s.
 */
#include "fcase.h"
#include "naive_attention.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- the tests ------------------------------------------------------------- */

typedef struct ptest {
    sdpa_backend_kind kind;
    const fcase *row;
    bool backward, dilate;
    sdpa_dtype dtype;
    char name[96];
} ptest;

#define MAX_TESTS 1024
static ptest g_tests[MAX_TESTS];
static int g_ntests;
static sdpa_context *g_ctx[SDPA_BACKEND_COUNT];

/* The context of a backend, created on first use and kept for the run. */
static sdpa_context *backend_ctx(sdpa_backend_kind kind)
{
    if (!g_ctx[kind]) {
        sdpa_status st;
        g_ctx[kind] = tcontext(kind, &st);
        ck_assert_msg(g_ctx[kind] != NULL, "%s context: %s", sdpa_backend_name(kind),
                      sdpa_status_name(st));
    }
    return g_ctx[kind];
}

/* ---- dilated outputs -------------------------------------------------------- */

#define SENTINEL_F32 (-12345.5)

/* An output whose strides are doubled: element at tight offset o lives at 2o,
 * 2o + 1 is a gap holding a sentinel. */
typedef struct dilated {
    sdpa_tensor *t;
    void *tight, *wide;
    size_t n; /* elements of the tight span */
    sdpa_dtype dt;
} dilated;

static size_t tensor_span(const sdpa_tensor *t)
{
    size_t n = 1;
    for (int a = 0; a < 4; a++) n += (size_t)((t->shape[a] - 1) * t->stride[a]);
    return n;
}

static void dilate(dilated *d, sdpa_tensor *t)
{
    memset(d, 0, sizeof *d);
    if (!t->host) return;
    d->t = t;
    d->tight = t->host;
    d->dt = t->dtype;
    d->n = tensor_span(t);
    size_t es = sdpa_dtype_size(t->dtype);
    d->wide = malloc(2 * d->n * es);
    ck_assert_ptr_nonnull(d->wide);
    for (size_t e = 0; e < d->n; e++) {
        tstore(d->wide, d->dt, 2 * e, NAN);
        tstore(d->wide, d->dt, 2 * e + 1, SENTINEL_F32);
    }
    t->host = d->wide;
    for (int a = 0; a < 4; a++) t->stride[a] *= 2;
}

/* Copies the elements back into the tight array and asserts every gap still
 * holds the sentinel. */
static void undilate(dilated *d, const char *name, const char *what)
{
    if (!d->t) return;
    const size_t es = sdpa_dtype_size(d->dt);
    unsigned char one[8];
    tstore(one, d->dt, 0, SENTINEL_F32);
    const double sentinel = tload(one, d->dt, 0);
    for (size_t e = 0; e < d->n; e++) {
        memcpy((char *)d->tight + e * es, (char *)d->wide + 2 * e * es, es);
        double g = tload(d->wide, d->dt, 2 * e + 1);
        ck_assert_msg(g == sentinel, "%s: %s: the gap after element %zu was written (%g)",
                      name, what, e, g);
    }
    d->t->host = d->tight;
    for (int a = 0; a < 4; a++) d->t->stride[a] /= 2;
    free(d->wide);
    d->t = NULL;
}

/* ---- plans already run (SDPA_PARITY_SEEN) ------------------------------------- */

/* The row's plan as one line: name, kernel, config, workspace bytes. */
static void plan_key(const ptest *t, const sdpa_plan *plan, char *key, size_t n)
{
    sdpa_plan_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    ck_assert_int_eq(sdpa_plan_get_info(plan, &info), SDPA_OK);
    snprintf(key, n, "%s\t%s\t%s\t%zu", t->name, info.kernel, info.config,
             info.workspace_bytes);
}

/* The label under which `key` was run before, in `label` (false: not run). */
static bool seen_before(const char *key, char *label, size_t n)
{
    const char *path = getenv("SDPA_PARITY_SEEN");
    FILE *f = path && *path ? fopen(path, "r") : NULL;
    if (!f) return false;
    char line[1024];
    size_t kl = strlen(key);
    bool found = false;
    while (!found && fgets(line, sizeof line, f))
        if (strncmp(line, key, kl) == 0 && line[kl] == '\t') {
            line[strcspn(line, "\n")] = 0;
            snprintf(label, n, "%s", line + kl + 1);
            found = true;
        }
    fclose(f);
    return found;
}

static void record_seen(const char *key)
{
    const char *path = getenv("SDPA_PARITY_SEEN");
    if (!path || !*path) return;
    const char *as = getenv("SDPA_PARITY_SEEN_AS");
    if (!as || !*as) as = getenv("SDPA_TEST_PERSONA");
    FILE *f = fopen(path, "a");
    ck_assert_msg(f != NULL, "SDPA_PARITY_SEEN=%s cannot be written", path);
    fprintf(f, "%s\t%s\n", key, as && *as ? as : "default");
    fclose(f);
}

/* ---- the oracle --------------------------------------------------------------- */

/* Memory index of (b, h, s, x) of a (B,H,S,X) tensor stored as tproblem does
 * (BSHD when c->bshd and the tensor is q / out / dout / dq). */
static size_t mem_index(bool bshd, int64_t H, int64_t S, int64_t X, int64_t b, int64_t h,
                        int64_t s, int64_t x)
{
    return (size_t)(bshd ? ((b * S + s) * H + h) * X + x : ((b * H + h) * S + s) * X + x);
}

/* A contiguous f32 copy of a storage-dtype (B,H,S,X) tensor. */
static float *to_f32(const void *src, sdpa_dtype dt, bool bshd, int64_t B, int64_t H, int64_t S,
                     int64_t X)
{
    float *p = nv_floats((size_t)(B * H * S * X));
    size_t e = 0;
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < H; h++)
            for (int64_t s = 0; s < S; s++)
                for (int64_t x = 0; x < X; x++)
                    p[e++] = (float)tload(src, dt, mem_index(bshd, H, S, X, b, h, s, x));
    return p;
}

static float *copy_f32(const float *src, size_t n)
{
    if (!src) return NULL;
    float *p = nv_floats(n);
    memcpy(p, src, n * sizeof *p);
    return p;
}

/* The oracle's problem over the values tproblem stored (16-bit values
 * widened exactly, BSHD made contiguous). */
static void oracle_problem(nv_problem *o, const tproblem *p)
{
    const tcase *c = &p->c;
    memset(o, 0, sizeof *o);
    o->B = c->B; o->Hq = c->Hq; o->Hkv = c->Hkv; o->Sq = c->Sq; o->Skv = c->Skv;
    o->D = c->D; o->Dv = c->Dv;
    o->scale = c->scale;
    o->diagonal = c->diagonal;
    o->diagonal_offset = c->diagonal_offset;
    o->window_left = c->window_left;
    o->window_right = c->window_right;
    o->softcap = c->softcap;
    o->qk_norm = c->qk_norm;
    o->eps = p->desc.qk_norm_eps;
    o->saturation = p->desc.stats_saturation;
    o->q = to_f32(p->q, c->dtype, c->bshd, c->B, c->Hq, c->Sq, c->D);
    o->k = to_f32(p->k, c->dtype, false, c->B, c->Hkv, c->Skv, c->D);
    o->v = to_f32(p->v, c->dtype, false, c->B, c->Hkv, c->Skv, c->Dv);
    o->dout = to_f32(p->dout, c->dtype, c->bshd, c->B, c->Hq, c->Sq, c->Dv);
    if (p->mask) {
        o->mask = malloc(p->n_mask);
        ck_assert_ptr_nonnull(o->mask);
        memcpy(o->mask, p->mask, p->n_mask);
        memcpy(o->mask_shape, p->desc.tensors.mask.shape, sizeof o->mask_shape);
    }
    if (p->bias) {
        o->bias = copy_f32(p->bias, p->n_bias);
        memcpy(o->bias_shape, p->desc.tensors.bias.shape, sizeof o->bias_shape);
    }
    if (p->kv_len) nv_add_kv_len(o, p->kv_len);
    o->q_gain = copy_f32(p->q_gain, (size_t)c->D);
    o->k_gain = copy_f32(p->k_gain, (size_t)c->D);
    o->temperature = copy_f32(p->temperature, (size_t)c->Hq);
}

/* Asserts got (storage dtype, the memory layout tproblem uses) matches the
 * oracle's contiguous want within bound * max(1, max |want|); non-finite
 * wants must match exactly, and a NaN left by the poison fails. */
static void expect_oracle(const char *name, const char *what, const void *got, sdpa_dtype dt,
                          const double *want, bool bshd, int64_t B, int64_t H, int64_t S,
                          int64_t X, double bound)
{
    double scale = 1.0;
    size_t n = (size_t)(B * H * S * X);
    for (size_t e = 0; e < n; e++)
        if (isfinite(want[e]) && fabs(want[e]) > scale) scale = fabs(want[e]);
    size_t e = 0;
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < H; h++)
            for (int64_t s = 0; s < S; s++)
                for (int64_t x = 0; x < X; x++, e++) {
                    double w = want[e];
                    double g = tload(got, dt, mem_index(bshd, H, S, X, b, h, s, x));
                    bool ok = isfinite(w) ? isfinite(g) && fabs(g - w) <= bound * scale
                                          : (isnan(w) ? isnan(g) : g == w);
                    ck_assert_msg(ok,
                                  "%s: %s[b%lld h%lld s%lld x%lld] = %.7g, oracle %.7g "
                                  "(bound %.3g)",
                                  name, what, (long long)b, (long long)h, (long long)s,
                                  (long long)x, g, w, bound * scale);
                }
}

/* ---- one test --------------------------------------------------------------- */

/* A refusal is accepted only for a 16-bit dtype on a device without 16-bit
 * storage, and is reported. */
static void refused(const ptest *t, sdpa_context *ctx, sdpa_status st)
{
    sdpa_error_info ei;
    memset(&ei, 0, sizeof ei);
    sdpa_context_last_error(ctx, &ei);
    sdpa_device_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    bool no16 = sdpa_device_get_info(t->kind, 0, &info) == SDPA_OK && !info.storage16;
    ck_assert_msg(st == SDPA_ERR_UNSUPPORTED && t->dtype != SDPA_DTYPE_F32 && no16,
                  "%s: sdpa_plan_create: %s (%s)", t->name, sdpa_status_name(st), ei.message);
    printf("%s: unsupported (SDPA_ERR_UNSUPPORTED: %s)\n", t->name, ei.message);
}

START_TEST(parity)
{
    const ptest *t = &g_tests[_i];
    sdpa_context *ctx = backend_ctx(t->kind);
    tcase c = fcase_make(t->row, 2468u);
    c.name = t->name;
    c.dtype = t->dtype;
    c.lse = true;
    tproblem p;
    tproblem_make(&p, &c);

    sdpa_plan_options o;
    sdpa_plan_options_init(&o);
    if (t->backward) o.flags = SDPA_PLAN_BACKWARD;
    sdpa_plan *plan = NULL;
    sdpa_status st = sdpa_plan_create(ctx, &p.desc, &o, &plan);
    if (st != SDPA_OK) {
        refused(t, ctx, st);
        tproblem_free(&p);
        return;
    }
    char key[1024], label[256];
    plan_key(t, plan, key, sizeof key);
    if (seen_before(key, label, sizeof label)) {
        printf("%s: same plan as under %s: not run again\n", t->name, label);
        sdpa_plan_destroy(plan);
        tproblem_free(&p);
        return;
    }
    sdpa_forward_tensors *ft = &p.desc.tensors;
    sdpa_backward_tensors *bt = &p.bwd;
    sdpa_tensor *outs[] = {&ft->out, &ft->lse, &ft->stats, &bt->dq, &bt->dk, &bt->dv,
                           &bt->dq_gain, &bt->dk_gain, &bt->dtemperature};
    static const char *const out_names[] = {"out", "lse", "stats", "dq", "dk", "dv",
                                            "dq_gain", "dk_gain", "dtemperature"};
    enum { N_OUTS = 9 };
    dilated dl[N_OUTS];
    memset(dl, 0, sizeof dl);
    if (t->dilate)
        for (int i = 0; i < (t->backward ? N_OUTS : 3); i++) dilate(&dl[i], outs[i]);
    sdpa_error_info ei;
    st = sdpa_plan_forward(plan, ft);
    sdpa_context_last_error(ctx, &ei);
    ck_assert_msg(st == SDPA_OK, "%s: forward: %s (%s)", t->name, sdpa_status_name(st),
                  ei.message);
    if (t->backward) {
        /* the backward reads out and lse: give it the tight ones */
        undilate(&dl[0], t->name, "out");
        undilate(&dl[1], t->name, "lse");
        st = sdpa_plan_backward(plan, ft, bt);
        sdpa_context_last_error(ctx, &ei);
        ck_assert_msg(st == SDPA_OK, "%s: backward: %s (%s)", t->name, sdpa_status_name(st),
                      ei.message);
    }
    ck_assert_int_eq(sdpa_context_finish(ctx), SDPA_OK);
    sdpa_plan_destroy(plan);
    for (int i = 0; i < N_OUTS; i++) undilate(&dl[i], t->name, out_names[i]);

    /* forward against the oracle */
    nv_problem np;
    oracle_problem(&np, &p);
    const size_t nl = (size_t)(c.B * c.Hq * c.Sq), ns = (size_t)(c.B * c.Hq) * SDPA_STAT_COUNT;
    double *out = nv_doubles(p.n_out), *lse = nv_doubles(nl), *stats = nv_doubles(ns);
    nv_forward(&np, out, lse, stats);
    const double b = tbound(c.dtype);
    expect_oracle(t->name, "out", p.out, c.dtype, out, c.bshd, c.B, c.Hq, c.Sq, c.Dv, b);
    expect_oracle(t->name, "lse", p.lse, SDPA_DTYPE_F32, lse, false, c.B, c.Hq, c.Sq, 1,
                  b < 1e-3 ? 1e-4 : b);
    if (c.stats)
        expect_oracle(t->name, "stats", p.stats, SDPA_DTYPE_F32, stats, false, c.B, c.Hq, 1,
                      SDPA_STAT_COUNT, b < 2e-3 ? 2e-3 : b);
    free(out);
    free(lse);
    free(stats);

    if (t->backward) {
        const double gb = c.dtype == SDPA_DTYPE_F32 ? 1e-3 : 4 * b;
        if (c.qk_norm == SDPA_QK_NORM_NONE && !c.temperature) {
            double *dq = nv_doubles(p.n_q), *dk = nv_doubles(p.n_k), *dv = nv_doubles(p.n_v);
            nv_backward(&np, dq, dk, dv);
            expect_oracle(t->name, "dq", p.dq, c.dtype, dq, c.bshd, c.B, c.Hq, c.Sq, c.D, gb);
            expect_oracle(t->name, "dk", p.dk, c.dtype, dk, false, c.B, c.Hkv, c.Skv, c.D, gb);
            expect_oracle(t->name, "dv", p.dv, c.dtype, dv, false, c.B, c.Hkv, c.Skv, c.Dv, gb);
            free(dq);
            free(dk);
            free(dv);
        } else if (t->kind == SDPA_BACKEND_REFERENCE) {
            printf("%s: gradients not compared (no float64 oracle for QK-norm / temperature "
                   "gradients; the gradcheck suite checks the reference's)\n", t->name);
        } else {
            tproblem want;
            tproblem_make(&want, &c);
            trun_problem(backend_ctx(SDPA_BACKEND_REFERENCE), &want, true, NULL);
            texpect_parity(&p, &want, true);
            tproblem_free(&want);
        }
    }
    nv_free(&np);
    tproblem_free(&p);
    record_seen(key);
}
END_TEST

/* ---- which backends ----------------------------------------------------------- */

/* Whether a context on kind starts, tried in a child process (a GPU runtime
 * started in this process would not survive Check's fork). */
static bool backend_starts(sdpa_backend_kind kind, sdpa_status *why)
{
    pid_t pid = fork();
    if (pid == 0) {
        sdpa_status st;
        sdpa_context *ctx = tcontext(kind, &st);
        sdpa_context_destroy(ctx);
        _exit((int)-st);
    }
    int ws = 0;
    if (pid < 0 || waitpid(pid, &ws, 0) != pid || !WIFEXITED(ws)) {
        *why = SDPA_ERR_DEVICE;
        return false;
    }
    *why = (sdpa_status)-WEXITSTATUS(ws);
    return *why == SDPA_OK;
}

/* Whether SDPA_PARITY_BACKENDS (if set) names kind. */
static bool selected(const char *list, sdpa_backend_kind kind)
{
    if (!list || !*list) return true;
    const char *name = sdpa_backend_name(kind);
    size_t n = strlen(name);
    for (const char *s = list; *s;) {
        size_t len = strcspn(s, ", ");
        if (len == n && strncmp(s, name, n) == 0) return true;
        s += len;
        s += strspn(s, ", ");
    }
    return false;
}

static int g_nlong; /* tests not run: Sq above SDPA_TEST_MAX_LEN */

static void add(Suite *s, sdpa_backend_kind kind, const fcase *row, bool backward, int row_i,
                sdpa_dtype dt)
{
    if (tmax_len() && row->Sq > tmax_len()) {
        g_nlong++;
        return;
    }
    if (g_ntests == MAX_TESTS) {
        fprintf(stderr, "parity: more than %d tests\n", MAX_TESTS);
        exit(EXIT_FAILURE);
    }
    ptest *t = &g_tests[g_ntests];
    t->kind = kind;
    t->row = row;
    t->backward = backward;
    t->dilate = row_i % 2 == 0;
    t->dtype = dt;
    if (row->f & F_F16) t->dtype = SDPA_DTYPE_F16;
    if (row->f & F_BF16) t->dtype = SDPA_DTYPE_BF16;
    snprintf(t->name, sizeof t->name, "%s/%s%s%s", sdpa_backend_name(kind), row->name,
             (row->f & F_ALLDT) && dt != SDPA_DTYPE_F32 ? "." : "",
             (row->f & F_ALLDT) && dt != SDPA_DTYPE_F32 ? sdpa_dtype_name(dt) : "");
    TCase *tc = tcase_create(t->name);
    tcase_set_timeout(tc, 600);
    tcase_add_loop_test(tc, parity, g_ntests, g_ntests + 1);
    suite_add_tcase(s, tc);
    g_ntests++;
}

static void add_rows(Suite *s, sdpa_backend_kind kind, const fcase *rows, int n, bool backward)
{
    static const sdpa_dtype dts[] = {SDPA_DTYPE_F32, SDPA_DTYPE_F16, SDPA_DTYPE_BF16};
    for (int i = 0; i < n; i++)
        for (int d = 0; d < ((rows[i].f & F_ALLDT) ? 3 : 1); d++)
            add(s, kind, &rows[i], backward, i, dts[d]);
}

/* ---- the persona set (SDPA_PARITY_SET=persona) ----------------------------------- */

/* One row per kernel kind; Sq / Skv 0 = the length. Shapes, dtype and the
 * build-relevant features (mask, bias, softcap, stats) as test_opencl's
 * `personas` case (p_prefill_gqa, p_prefill_d256, p_stats_mask,
 * p_decode_gqa, p_backward_gqa), batch and heads smaller where no build
 * option depends on them (decode keeps 4 query heads per KV head: its rows
 * per work-item do). Runtime features ride along: they cost no build. */
static const fcase persona_fkinds[] = {
    {"prefill", 1, 4, 1, 0, 0, 64, 32, F_CAUSAL | F_BR | F_KVLEN},
    {"prefill_d256", 1, 1, 1, 0, 0, 256, 256, F_CAUSAL},
    {"stats", 1, 2, 1, 0, 0, 64, 64, F_MASK | F_BIAS | F_BCAST | F_STATS | F_WIN},
    {"decode", 1, 4, 1, 1, 0, 128, 128, F_KVLEN},
};
static const fcase persona_bkinds[] = {
    {"backward", 1, 2, 1, 0, 0, 64, 48, F_CAUSAL | F_BR | F_CAP},
};
static const int64_t persona_lengths[] = {1, 7, 63, 65, 257, 1000};
#define N_PLEN (int)(sizeof persona_lengths / sizeof persona_lengths[0])
#define N_PKINDS (int)(sizeof persona_fkinds / sizeof persona_fkinds[0] + \
                       sizeof persona_bkinds / sizeof persona_bkinds[0])
static fcase g_prows[N_PKINDS * N_PLEN];
static bool g_pbackward[N_PKINDS * N_PLEN];
static char g_pnames[N_PKINDS * N_PLEN][48];
static int g_nprows;

/* g_prows: every kind at every length (once for all backends). */
static void persona_rows_make(const fcase *kinds, int n, bool backward)
{
    for (int k = 0; k < n; k++)
        for (int l = 0; l < N_PLEN; l++, g_nprows++) {
            fcase *r = &g_prows[g_nprows];
            *r = kinds[k];
            if (!r->Sq) r->Sq = persona_lengths[l];
            if (!r->Skv) r->Skv = persona_lengths[l];
            snprintf(g_pnames[g_nprows], sizeof g_pnames[g_nprows], "persona_%s_len%lld",
                     kinds[k].name, (long long)persona_lengths[l]);
            r->name = g_pnames[g_nprows];
            g_pbackward[g_nprows] = backward;
        }
}

int main(void)
{
    setenv("CK_FORK", "no", 0);
    const char *list = getenv("SDPA_PARITY_BACKENDS");
    const char *set = getenv("SDPA_PARITY_SET");
    const bool persona_set = set && strcmp(set, "persona") == 0;
    if (set && *set && !persona_set && strcmp(set, "full") != 0) {
        fprintf(stderr, "parity: SDPA_PARITY_SET=%s: must be full or persona\n", set);
        return EXIT_FAILURE;
    }
    if (persona_set) {
        persona_rows_make(persona_fkinds, (int)(sizeof persona_fkinds / sizeof persona_fkinds[0]),
                          false);
        persona_rows_make(persona_bkinds, (int)(sizeof persona_bkinds / sizeof persona_bkinds[0]),
                          true);
    }
    Suite *s = suite_create("parity");
    int backends = 0;
    for (int k = SDPA_BACKEND_AUTO + 1; k < SDPA_BACKEND_COUNT; k++) {
        sdpa_backend_kind kind = (sdpa_backend_kind)k;
        if (!selected(list, kind)) continue;
        sdpa_status why = SDPA_ERR_UNSUPPORTED;
        if (!sdpa_backend_compiled(kind) || !backend_starts(kind, &why)) {
            fprintf(stderr, "parity: %s %s (%s): not run\n", sdpa_backend_name(kind),
                    sdpa_backend_compiled(kind) ? "does not start" : "is not compiled in",
                    sdpa_status_name(why));
            if (list && *list) return EXIT_FAILURE; /* asked for by name */
            continue;
        }
        if (persona_set) {
            for (int i = 0; i < g_nprows; i++)
                add(s, kind, &g_prows[i], g_pbackward[i], i, SDPA_DTYPE_F32);
        } else {
            add_rows(s, kind, tparity_fcases, tparity_n_fcases, false);
            add_rows(s, kind, tparity_bcases, tparity_n_bcases, true);
        }
        backends++;
    }
    if (!backends) {
        fprintf(stderr, "parity: no backend selected by SDPA_PARITY_BACKENDS=%s\n", list);
        return EXIT_FAILURE;
    }
    fprintf(stderr, "parity: %d tests on %d backends (%s set)\n", g_ntests, backends,
            persona_set ? "persona" : "full");
    if (g_nlong)
        fprintf(stderr, "parity: %d tests of query length > %lld not run (SDPA_TEST_MAX_LEN)\n",
                g_nlong, (long long)tmax_len());
    int rc = trun_suite(s);
    for (int k = 0; k < SDPA_BACKEND_COUNT; k++) sdpa_context_destroy(g_ctx[k]);
    return rc;
}
