/*
 * gen_conformance.c — writes the repository's conformance corpus
 * (tests/conformance, format sdpa-case/1 of ../shared/conformance/README.md)
 * from the float64 oracle of naive_attention.h, which shares no code with the
 * library (this program does not link it).
 *
 *   build/tests/gen_conformance OUTDIR      (OUTDIR: tests/conformance)
 *
 * Run by hand after changing the table below; test_conformance.c's
 * corpus_is_fresh regenerates into a scratch folder and compares, so the
 * checked-in corpus cannot drift from this file. Deterministic: inputs come
 * from a seeded integer generator (sums of three uniform integers over 1024,
 * never zero, so no libm is involved), rounded to the case's storage dtype;
 * the oracle then sees exactly the stored values. Lengths cross the tile
 * edges of every backend (1, 7, 63, 65, 257).
 */
#include "naive_attention.h"
#define GEN_PROG "gen_conformance"
#include "gen_inputs.h"
/* The library's one hash, by relative path (header-only, no dependencies). */
#include "../src/core/bytes.h"

#include <errno.h>
#include <sys/stat.h>

typedef struct gcase {
    const char *name;
    int backward;
    sdpa_dtype dtype;
    int64_t B, Hq, Hkv, Sq, Skv, D, Dv;
    double scale;            /* 0: null (1/sqrt(D)) */
    sdpa_diagonal diagonal;
    int64_t offset, wl, wr;  /* explicit offset; window (-1 = unbounded) */
    double softcap;
    sdpa_qk_norm qk_norm;
    int mask;                /* 1: (B,1,Sq,Skv); 2: (1,1,Sq,Skv) */
    int bias;                /* 1: (1,Hq,Sq,Skv); 2: (B,1,Sq,Skv) */
    int empty_row;           /* mask or bias drops every key of row (0, 0, this - 1) */
    int32_t kv_len[4];       /* used when kv_len[0] > 0 */
    int gains, temperature;
} gcase;

#define BR SDPA_DIAGONAL_BOTTOM_RIGHT
#define TL SDPA_DIAGONAL_TOP_LEFT
#define EX SDPA_DIAGONAL_EXPLICIT
#define F32 SDPA_DTYPE_F32

static const gcase cases[] = {
    /* name, bwd, dtype, B, Hq, Hkv, Sq, Skv, D, Dv, scale, diagonal, offset, wl, wr, softcap, qk_norm,
       mask, bias, empty_row, kv_len, gains, temperature */
    {"basic", 0, F32, 1, 2, 2, 7, 65, 16, 16, 0, TL, 0, -1, -1, 0, SDPA_QK_NORM_NONE, 0, 0, 0, {0}, 0, 0},
    {"one_key", 0, F32, 2, 2, 1, 65, 1, 8, 8, 0.5, TL, 0, -1, -1, 0, SDPA_QK_NORM_NONE, 0, 0, 0, {0}, 0, 0},
    {"bool_mask_empty_row", 0, F32, 2, 2, 1, 63, 65, 8, 8, 0, TL, 0, -1, -1, 0, SDPA_QK_NORM_NONE, 1, 0, 41, {0}, 0, 0},
    {"causal_top_left_dv", 0, F32, 1, 2, 2, 65, 63, 16, 24, 0, TL, 0, -1, 0, 0, SDPA_QK_NORM_NONE, 0, 0, 0, {0}, 0, 0},
    {"cosine_temperature", 0, F32, 1, 3, 3, 7, 65, 16, 16, 0, TL, 0, -1, -1, 0, SDPA_QK_NORM_L2, 0, 0, 0, {0}, 0, 1},
    {"f16_storage", 0, SDPA_DTYPE_F16, 1, 2, 2, 63, 63, 32, 32, 0, TL, 0, -1, 0, 0, SDPA_QK_NORM_NONE, 0, 0, 0, {0}, 0, 0},
    {"bf16_storage_gqa", 0, SDPA_DTYPE_BF16, 2, 4, 2, 65, 65, 16, 16, 0, BR, 0, -1, 0, 0, SDPA_QK_NORM_NONE, 0, 0, 0, {0}, 0, 0},
    {"gqa_causal_bottom_right", 0, F32, 2, 4, 2, 7, 65, 16, 16, 0, BR, 0, -1, 0, 0, SDPA_QK_NORM_NONE, 0, 0, 0, {0}, 0, 0},
    {"kv_len_explicit_offset", 0, F32, 3, 2, 2, 7, 65, 8, 8, 0, EX, 40, -1, 0, 0, SDPA_QK_NORM_NONE, 0, 0, 0, {65, 33, 0}, 0, 0},
    {"qk_rms_gain", 0, F32, 1, 2, 2, 1, 257, 32, 32, 0, TL, 0, -1, -1, 0, SDPA_QK_NORM_RMS, 0, 0, 0, {0}, 1, 0},
    {"qk_layer", 0, F32, 1, 2, 1, 7, 63, 16, 16, 0, TL, 0, -1, -1, 0, SDPA_QK_NORM_LAYER, 0, 0, 0, {0}, 0, 0},
    {"softcap_bias_neginf", 0, F32, 2, 2, 2, 63, 7, 8, 8, 0.5, TL, 0, -1, -1, 2.0, SDPA_QK_NORM_NONE, 0, 1, 5, {0}, 0, 0},
    {"window_bidirectional", 0, F32, 1, 2, 2, 65, 257, 8, 8, 0, BR, 0, 3, 5, 0, SDPA_QK_NORM_NONE, 0, 0, 0, {0}, 0, 0},
    {"window_causal", 0, F32, 1, 1, 1, 257, 257, 32, 32, 0, BR, 0, 16, 0, 0, SDPA_QK_NORM_NONE, 0, 0, 0, {0}, 0, 0},
    {"backward_gqa_causal", 1, F32, 1, 4, 2, 63, 65, 16, 24, 0, BR, 0, -1, 0, 0, SDPA_QK_NORM_NONE, 0, 0, 0, {0}, 0, 0},
    {"backward_softcap", 1, F32, 1, 2, 2, 7, 65, 8, 8, 0, TL, 0, -1, -1, 3.0, SDPA_QK_NORM_NONE, 0, 0, 0, {0}, 0, 0},
    {"backward_mask_bias_kv_len", 1, F32, 2, 2, 1, 65, 63, 8, 8, 0, TL, 0, -1, -1, 0, SDPA_QK_NORM_NONE, 2, 2, 3, {63, 20}, 0, 0},
    {"backward_window", 1, F32, 1, 2, 2, 65, 65, 8, 8, 0, EX, -3, 4, 4, 0, SDPA_QK_NORM_NONE, 0, 0, 0, {0}, 0, 0},
};

static const char *const stat_names[SDPA_STAT_COUNT] = {
    "logit_mean", "logit_std", "logit_min", "logit_max", "entropy_mean", "entropy_min",
    "pmax_mean", "saturated_frac", "jacobian_fro_mean", "sink_mass", "empty_rows"};

static void die(const char *what, const char *path)
{
    fprintf(stderr, "gen_conformance: %s %s: %s\n", what, path, strerror(errno));
    exit(1);
}

/* ---- inputs (gen_inputs.h) ---------------------------------------------------- */

static float *values(size_t n, sdpa_dtype dt, double shift)
{
    float *p = xmalloc(n * sizeof *p);
    for (size_t i = 0; i < n; i++)
        p[i] = stored(dt, value() + shift);
    return p;
}

/* ---- files ---------------------------------------------------------------------- */

static const char *dtype_name(sdpa_dtype dt)
{
    return dt == SDPA_DTYPE_F16 ? "f16" : dt == SDPA_DTYPE_BF16 ? "bf16" : "f32";
}

static void write_file(const char *dir, const char *name, const void *data, size_t bytes)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) die("cannot write", path);
    if (fwrite(data, 1, bytes, f) != bytes || fclose(f) != 0) die("cannot write", path);
}

/* Little-endian bytes of n floats in dtype dt (all three are little-endian
 * on the hosts this runs on; written byte by byte to stay exact elsewhere). */
static void write_floats(const char *dir, const char *name, const float *x, size_t n,
                         sdpa_dtype dt)
{
    size_t es = dt == F32 ? 4 : 2;
    uint8_t *b = xmalloc(n * es);
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        if (dt == F32) memcpy(&u, &x[i], 4);
        else u = dt == SDPA_DTYPE_F16 ? to_f16(x[i]) : to_bf16(x[i]);
        for (size_t k = 0; k < es; k++) b[i * es + k] = (uint8_t)(u >> (8 * k));
    }
    write_file(dir, name, b, n * es);
    free(b);
}

static void write_doubles(const char *dir, const char *name, const double *x, size_t n)
{
    float *f = xmalloc(n * sizeof *f);
    for (size_t i = 0; i < n; i++) f[i] = (float)x[i];
    write_floats(dir, name, f, n, F32);
    free(f);
}

static void write_i32(const char *dir, const char *name, const int32_t *x, size_t n)
{
    uint8_t *b = xmalloc(n * 4);
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < 4; k++) b[i * 4 + (size_t)k] = (uint8_t)((uint32_t)x[i] >> (8 * k));
    write_file(dir, name, b, n * 4);
    free(b);
}

/* ---- case.json -------------------------------------------------------------------- */

static void json_entry(FILE *f, const char *key, const char *dtype, const int64_t *shape,
                       int rank, const char *file, int names, int last)
{
    fprintf(f, "    \"%s\": {\"dtype\": \"%s\", \"shape\": [", key, dtype);
    for (int a = 0; a < rank; a++) fprintf(f, "%s%lld", a ? ", " : "", (long long)shape[a]);
    fprintf(f, "], \"file\": \"%s\"", file);
    if (names) {
        fprintf(f, ",\n      \"names\": [");
        for (int c = 0; c < SDPA_STAT_COUNT; c++)
            fprintf(f, "%s\"%s\"", c ? ", " : "", stat_names[c]);
        fprintf(f, "]");
    }
    fprintf(f, "}%s\n", last ? "" : ",");
}

static const char *qk_norm_name(sdpa_qk_norm n)
{
    return n == SDPA_QK_NORM_RMS ? "rms" : n == SDPA_QK_NORM_LAYER ? "layer"
         : n == SDPA_QK_NORM_L2  ? "l2"  : "none";
}

static void write_json(const char *dir, const gcase *g, const nv_problem *p)
{
    char path[4200], file[64];
    snprintf(path, sizeof path, "%s/case.json", dir);
    FILE *f = fopen(path, "w");
    if (!f) die("cannot write", path);
    const char *dt = dtype_name(g->dtype);
    fprintf(f, "{\n  \"format\": \"sdpa-case/1\",\n  \"name\": \"%s\",\n", g->name);
    fprintf(f, "  \"op\": \"%s\",\n  \"dtype\": \"%s\",\n", g->backward ? "backward" : "forward", dt);
    fprintf(f, "  \"attrs\": {\n    \"scale\": ");
    if (g->scale > 0) fprintf(f, "%.9g,\n", g->scale);
    else fprintf(f, "null,\n");
    fprintf(f, "    \"diagonal\": \"%s\",\n    \"diagonal_offset\": %lld,\n",
            g->diagonal == BR ? "bottom_right" : g->diagonal == EX ? "explicit" : "top_left",
            (long long)g->offset);
    fprintf(f, "    \"window\": [%lld, %lld],\n    \"softcap\": %.9g,\n", (long long)g->wl,
            (long long)g->wr, g->softcap);
    fprintf(f, "    \"qk_norm\": \"%s\",\n    \"qk_norm_eps\": 1e-06\n  },\n",
            qk_norm_name(g->qk_norm));

    const int64_t sq[4] = {p->B, p->Hq, p->Sq, p->D}, sk[4] = {p->B, p->Hkv, p->Skv, p->D},
                  sv[4] = {p->B, p->Hkv, p->Skv, p->Dv}, so[4] = {p->B, p->Hq, p->Sq, p->Dv},
                  sl[3] = {p->B, p->Hq, p->Sq}, ss[3] = {p->B, p->Hq, SDPA_STAT_COUNT},
                  sb[1] = {p->B}, sd[1] = {p->D}, sh[1] = {p->Hq};
    /* inputs, in a fixed order; the last one closes without a comma */
    struct { const char *key, *dtype; const int64_t *shape; int rank, on; } in[] = {
        {"q", dt, sq, 4, 1}, {"k", dt, sk, 4, 1}, {"v", dt, sv, 4, 1},
        {"mask", "u8", p->mask_shape, 4, p->mask != NULL},
        {"bias", "f32", p->bias_shape, 4, p->bias != NULL},
        {"kv_len", "i32", sb, 1, p->kv_len != NULL},
        {"q_gain", "f32", sd, 1, p->q_gain != NULL}, {"k_gain", "f32", sd, 1, p->k_gain != NULL},
        {"temperature", "f32", sh, 1, p->temperature != NULL},
        {"dout", dt, so, 4, g->backward}};
    int n = (int)(sizeof in / sizeof in[0]), last = 0;
    for (int i = 0; i < n; i++) if (in[i].on) last = i;
    fprintf(f, "  \"inputs\": {\n");
    for (int i = 0; i < n; i++) {
        if (!in[i].on) continue;
        snprintf(file, sizeof file, "%s.%s", in[i].key, in[i].dtype);
        json_entry(f, in[i].key, in[i].dtype, in[i].shape, in[i].rank, file, 0, i == last);
    }
    fprintf(f, "  },\n  \"expected\": {\n");
    json_entry(f, "out", "f32", so, 4, "out.expected.f32", 0, 0);
    json_entry(f, "lse", "f32", sl, 3, "lse.expected.f32", 0, 0);
    if (g->backward) {
        json_entry(f, "dq", "f32", sq, 4, "dq.expected.f32", 0, 0);
        json_entry(f, "dk", "f32", sk, 4, "dk.expected.f32", 0, 0);
        json_entry(f, "dv", "f32", sv, 4, "dv.expected.f32", 0, 1);
    } else {
        json_entry(f, "stats", "f32", ss, 3, "stats.expected.f32", 1, 1);
    }
    /* Tolerance by the dtype the outputs are produced in (as the shared cases). */
    fprintf(f, "  },\n  \"tolerance\": {\"max_abs\": %s, \"rel_l2\": %s}\n}\n",
            g->dtype == F32 ? "0.0001" : g->dtype == SDPA_DTYPE_F16 ? "0.002" : "0.016",
            g->dtype == F32 ? "1e-05" : g->dtype == SDPA_DTYPE_F16 ? "0.001" : "0.008");
    if (fclose(f) != 0) die("cannot write", path);
}

/* ---- one case ------------------------------------------------------------------------ */

static void generate(const char *root, const gcase *g, uint64_t seed)
{
    char dir[3072], file[64];
    nv_problem p;
    memset(&p, 0, sizeof p);
    g_rng = seed * 0x9E3779B97F4A7C15ull + 1;
    p.B = g->B; p.Hq = g->Hq; p.Hkv = g->Hkv; p.Sq = g->Sq; p.Skv = g->Skv;
    p.D = g->D; p.Dv = g->Dv;
    p.scale = g->scale > 0 ? g->scale : SDPA_SCALE_DEFAULT;
    p.diagonal = g->diagonal;
    p.diagonal_offset = g->offset;
    p.window_left = g->wl;
    p.window_right = g->wr;
    p.softcap = g->softcap;
    p.qk_norm = g->qk_norm;
    p.eps = 1e-6;
    p.saturation = 0.99;
    size_t nq = (size_t)(p.B * p.Hq * p.Sq * p.D), nk = (size_t)(p.B * p.Hkv * p.Skv * p.D),
           nv = (size_t)(p.B * p.Hkv * p.Skv * p.Dv), no = (size_t)(p.B * p.Hq * p.Sq * p.Dv),
           nl = (size_t)(p.B * p.Hq * p.Sq), ns = (size_t)(p.B * p.Hq * SDPA_STAT_COUNT);
    p.q = values(nq, g->dtype, 0);
    p.k = values(nk, g->dtype, 0);
    p.v = values(nv, g->dtype, 0);
    if (g->mask) {
        int64_t *s = p.mask_shape;
        s[0] = g->mask == 1 ? p.B : 1; s[1] = 1; s[2] = p.Sq; s[3] = p.Skv;
        size_t n = (size_t)(s[0] * s[1] * s[2] * s[3]);
        p.mask = xmalloc(n);
        for (size_t e = 0; e < n; e++) p.mask[e] = next() % 10 < 7;
        if (g->empty_row) memset(p.mask + (size_t)(g->empty_row - 1) * (size_t)p.Skv, 0, (size_t)p.Skv);
    }
    if (g->bias) {
        int64_t *s = p.bias_shape;
        s[0] = g->bias == 1 ? 1 : p.B; s[1] = g->bias == 1 ? p.Hq : 1; s[2] = p.Sq; s[3] = p.Skv;
        size_t n = (size_t)(s[0] * s[1] * s[2] * s[3]);
        p.bias = values(n, F32, 0);
        for (size_t e = 0; e < n; e++)
            if (next() % 5 == 0) p.bias[e] = -INFINITY;
        /* the last row of the first slice: every key -inf (an empty row) */
        if (g->empty_row)
            for (int64_t j = 0; j < p.Skv; j++)
                p.bias[(size_t)(g->empty_row - 1) * (size_t)p.Skv + (size_t)j] = -INFINITY;
    }
    if (g->kv_len[0] > 0) {
        p.kv_len = xmalloc((size_t)p.B * sizeof *p.kv_len);
        memcpy(p.kv_len, g->kv_len, (size_t)p.B * sizeof *p.kv_len);
    }
    if (g->gains) {
        p.q_gain = values((size_t)p.D, F32, 0);
        p.k_gain = values((size_t)p.D, F32, 0);
        for (int64_t d = 0; d < p.D; d++) { /* around 1 */
            p.q_gain[d] = 1.0f + 0.25f * p.q_gain[d];
            p.k_gain[d] = 1.0f + 0.25f * p.k_gain[d];
        }
    }
    if (g->temperature) {
        p.temperature = xmalloc((size_t)p.Hq * sizeof *p.temperature);
        for (int64_t h = 0; h < p.Hq; h++) p.temperature[h] = (float)(2 + 2 * h) + 0.5f;
    }
    if (g->backward) p.dout = values(no, g->dtype, 0);

    snprintf(dir, sizeof dir, "%s/%s", root, g->name);
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) die("cannot create", dir);
    const char *dt = dtype_name(g->dtype);
    snprintf(file, sizeof file, "q.%s", dt);
    write_floats(dir, file, p.q, nq, g->dtype);
    snprintf(file, sizeof file, "k.%s", dt);
    write_floats(dir, file, p.k, nk, g->dtype);
    snprintf(file, sizeof file, "v.%s", dt);
    write_floats(dir, file, p.v, nv, g->dtype);
    if (p.mask)
        write_file(dir, "mask.u8", p.mask, (size_t)(p.mask_shape[0] * p.mask_shape[1] * p.Sq * p.Skv));
    if (p.bias)
        write_floats(dir, "bias.f32", p.bias, (size_t)(p.bias_shape[0] * p.bias_shape[1] * p.Sq * p.Skv), F32);
    if (p.kv_len) write_i32(dir, "kv_len.i32", p.kv_len, (size_t)p.B);
    if (p.q_gain) {
        write_floats(dir, "q_gain.f32", p.q_gain, (size_t)p.D, F32);
        write_floats(dir, "k_gain.f32", p.k_gain, (size_t)p.D, F32);
    }
    if (p.temperature) write_floats(dir, "temperature.f32", p.temperature, (size_t)p.Hq, F32);
    if (p.dout) {
        snprintf(file, sizeof file, "dout.%s", dt);
        write_floats(dir, file, p.dout, no, g->dtype);
    }

    double *out = nv_doubles(no), *lse = nv_doubles(nl), *st = nv_doubles(ns);
    nv_forward(&p, out, lse, st);
    write_doubles(dir, "out.expected.f32", out, no);
    write_doubles(dir, "lse.expected.f32", lse, nl);
    if (g->backward) {
        double *dq = nv_doubles(nq), *dk = nv_doubles(nk), *dv = nv_doubles(nv);
        nv_backward(&p, dq, dk, dv);
        write_doubles(dir, "dq.expected.f32", dq, nq);
        write_doubles(dir, "dk.expected.f32", dk, nk);
        write_doubles(dir, "dv.expected.f32", dv, nv);
        free(dq); free(dk); free(dv);
    } else {
        write_doubles(dir, "stats.expected.f32", st, ns);
    }
    write_json(dir, g, &p);
    free(out); free(lse); free(st);
    nv_free(&p);
}

static const char *g_outdir;

/* The oracle asserts with Check's macros, which report only inside a test:
 * the whole generation is one unforked Check test. */
START_TEST(generate_all)
{
    size_t n = sizeof cases / sizeof cases[0];
    for (size_t i = 0; i < n; i++) {
        /* the hash of the name: edits elsewhere leave a case's inputs alone */
        uint64_t seed = sdpa__fnv1a64(SDPA__HASH_SEED, cases[i].name, strlen(cases[i].name));
        generate(g_outdir, &cases[i], seed);
    }
    printf("gen_conformance: %zu cases in %s\n", n, g_outdir);
}
END_TEST

int main(int argc, char **argv)
{
    if (argc != 2 || argv[1][0] == '-') {
        fprintf(stderr, "usage: gen_conformance OUTDIR   (writes one folder per case)\n");
        return 2;
    }
    g_outdir = argv[1];
    if (mkdir(g_outdir, 0755) != 0 && errno != EEXIST) die("cannot create", g_outdir);
    Suite *s = suite_create("gen_conformance");
    TCase *t = tcase_create("generate");
    tcase_add_test(t, generate_all);
    suite_add_tcase(s, t);
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_SILENT);
    int failed = srunner_ntests_failed(sr);
    if (failed) {
        TestResult **r = srunner_failures(sr);
        fprintf(stderr, "gen_conformance: %s:%d: %s\n", tr_lfile(r[0]), tr_lno(r[0]), tr_msg(r[0]));
        free(r);
    }
    srunner_free(sr);
    return failed ? 1 : 0;
}
