/*
 * gen_wave2.c — writes sdpa-case/1 cases for ALiBi, attention sinks, K/V in
 * a dtype of their own (f16, bf16, q8_0, q4_0) and paged K/V at the
 * tile-crossing lengths 1, 7, 63, 65, 257 and 1000, each feature alone and
 * combined with GQA, bands, diagonals, softcap and kv_len. Expected out and
 * lse come from the small float64 oracle below, written from
 * docs/semantics.md and sharing no code with the library (not linked).
 *
 *   build/tests/gen_wave2 OUTDIR
 *
 * test_conformance.c runs it into a scratch folder and runs the cases on
 * every backend whose capabilities cover them (the shipped examples are in
 * tests/conformance-wave2); nothing it writes is checked in. Deterministic:
 * inputs come from a seeded integer generator (multiples of 1/1024, never
 * zero) rounded to their storage dtype; q8_0 / q4_0 blocks come from ggml's
 * reference quantizers (quantize_row_q8_0_ref / _q4_0_ref), and the oracle
 * sees exactly the dequantized values (an f16 scale times an integer).
 */
#include "naive_attention.h"
#define GEN_PROG "gen_wave2"
#include "gen_inputs.h"

#include <errno.h>
#include <sys/stat.h>

typedef struct wcase {
    const char *name;
    sdpa_dtype qdt, kvdt;    /* q/out and K/V storage */
    int64_t B, Hq, Hkv, Sq, Skv, D, Dv;
    sdpa_diagonal diagonal;
    int64_t offset, wl, wr;  /* explicit offset; window (-1 = unbounded) */
    double softcap;
    int alibi, sinks;        /* sinks: head 1 has -inf (no sink) */
    int kv_len;              /* kv_len[b] = Skv - 3 b (at least 0), or 0 for batch 2 */
    int64_t page;            /* > 0: paged K/V with this page size */
} wcase;

#define F32 SDPA_DTYPE_F32
#define F16 SDPA_DTYPE_F16
#define BF16 SDPA_DTYPE_BF16
#define Q8 SDPA_DTYPE_Q8_0
#define Q4 SDPA_DTYPE_Q4_0
#define TL SDPA_DIAGONAL_TOP_LEFT
#define BR SDPA_DIAGONAL_BOTTOM_RIGHT
#define EX SDPA_DIAGONAL_EXPLICIT

static const wcase cases[] = {
    /* name, qdt, kvdt, B, Hq, Hkv, Sq, Skv, D, Dv, diag, off, wl, wr, cap, alibi, sinks, kv_len, page */
    {"g_alibi_len1", F32, F32, 1, 2, 1, 1, 1, 32, 32, TL, 0, -1, -1, 0, 1, 0, 0, 0},
    {"g_alibi_causal_len1000", F32, F32, 1, 2, 1, 1000, 1000, 32, 32, BR, 0, -1, 0, 0, 1, 0, 0, 0},
    {"g_sinks_len7_empty", F32, F32, 3, 2, 2, 7, 7, 32, 32, BR, 0, -1, 0, 0, 0, 1, 1, 0},
    {"g_sinks_window_len257", F32, F32, 1, 4, 2, 257, 257, 32, 32, TL, 0, 20, 0, 0, 0, 1, 0, 0},
    {"g_alibi_sinks_cap_explicit_65x257", F32, F32, 2, 4, 2, 65, 257, 32, 32, EX, 100, 50, 10, 5.0,
     1, 1, 1, 0},
    {"g_f16q_bf16kv_alibi_len63", F16, BF16, 1, 4, 2, 63, 63, 64, 32, BR, 0, -1, 0, 0, 1, 0, 0, 0},
    {"g_f32q_f16kv_sinks_len65", F32, F16, 2, 2, 1, 65, 65, 32, 64, TL, 0, -1, -1, 0, 0, 1, 1, 0},
    {"g_q8_0_decode_len1000", F32, Q8, 1, 8, 2, 1, 1000, 64, 64, BR, 0, -1, 0, 0, 0, 0, 1, 0},
    {"g_q4_0_f16q_causal_len257", F16, Q4, 1, 2, 2, 257, 257, 32, 32, TL, 0, -1, 0, 0, 0, 0, 0, 0},
    {"g_q8_0_bf16q_alibi_sinks_len65", BF16, Q8, 1, 4, 1, 65, 65, 32, 32, BR, 0, -1, 0, 2.0, 1, 1,
     0, 0},
    {"g_paged_len1000", F32, F32, 2, 2, 1, 7, 1008, 32, 32, BR, 0, -1, 0, 0, 0, 0, 1, 16},
    {"g_paged_q8_0_alibi_sinks_len65", F16, Q8, 2, 4, 2, 65, 70, 32, 32, BR, 0, -1, 0, 0, 1, 1, 1, 7},
    {"g_paged_q4_0_window_len257", F32, Q4, 1, 2, 2, 63, 320, 64, 32, EX, 200, 64, 0, 0, 0, 0, 1, 64},
    {"g_paged_bf16kv_gqa_len63", F32, BF16, 3, 4, 2, 1, 63, 32, 32, TL, 0, -1, -1, 0, 1, 1, 1, 1},
};

static void die(const char *what, const char *path)
{
    fprintf(stderr, "gen_wave2: %s %s: %s\n", what, path, strerror(errno));
    exit(1);
}

/* ---- inputs (xmalloc, value, stored: gen_inputs.h) ------------------------------ */

/* Rows of n elements (n a multiple of 32 for the block types) in storage
 * dtype dt: `bytes` gets the file image, `vals` the values the oracle sees
 * (for blocks: ggml's reference quantizers, then d * q exactly). */
static size_t file_bytes(sdpa_dtype dt, size_t count)
{
    return dt == Q8 ? count / 32 * 34 : dt == Q4 ? count / 32 * 18 : dt == F32 ? count * 4
                                                                                : count * 2;
}

static void make_values(sdpa_dtype dt, size_t count, double *vals, uint8_t *bytes)
{
    for (size_t e = 0; e < count; e++) vals[e] = value();
    if (dt == F32 || dt == F16 || dt == BF16) {
        for (size_t e = 0; e < count; e++) {
            float f = stored(dt, vals[e]);
            vals[e] = f;
            if (dt == F32) memcpy(bytes + 4 * e, &f, 4);
            else {
                uint16_t h = dt == F16 ? to_f16(f) : to_bf16(f);
                memcpy(bytes + 2 * e, &h, 2);
            }
        }
        return;
    }
    for (size_t blk = 0; blk < count / 32; blk++) {
        double *x = vals + 32 * blk;
        uint8_t *out = bytes + blk * (dt == Q8 ? 34 : 18);
        if (dt == Q8) { /* quantize_row_q8_0_ref */
            float amax = 0;
            for (int t = 0; t < 32; t++) amax = fmaxf(amax, fabsf((float)x[t]));
            const float d = amax / 127.0f, id = d ? 1.0f / d : 0.0f;
            uint16_t dh = to_f16(d);
            memcpy(out, &dh, 2);
            for (int t = 0; t < 32; t++) {
                int8_t q = (int8_t)roundf((float)x[t] * id);
                out[2 + t] = (uint8_t)q;
                x[t] = (double)from_f16(dh) * q;
            }
        } else { /* quantize_row_q4_0_ref */
            float amax = 0, max = 0;
            for (int t = 0; t < 32; t++)
                if (fabsf((float)x[t]) > amax) {
                    amax = fabsf((float)x[t]);
                    max = (float)x[t];
                }
            const float d = max / -8.0f, id = d ? 1.0f / d : 0.0f;
            uint16_t dh = to_f16(d);
            memcpy(out, &dh, 2);
            int q[32];
            for (int t = 0; t < 32; t++) {
                int v = (int)((float)x[t] * id + 8.5f);
                q[t] = v > 15 ? 15 : v;
            }
            for (int t = 0; t < 16; t++) out[2 + t] = (uint8_t)(q[t] | q[t + 16] << 4);
            for (int t = 0; t < 32; t++) x[t] = (double)from_f16(dh) * (q[t] - 8);
        }
    }
}

/* ---- the oracle ------------------------------------------------------------------ */

/* out (B,Hq,Sq,Dv) and lse (B,Hq,Sq) in float64, from docs/semantics.md:
 * s = scale q.k, softcap, - slope |i + off - j|, dropped outside the band
 * and past kv_len, softmax with the sink in the denominator. k(b,kvh,j) and
 * v are the logical (gathered, dequantized) keys and values. */
static void oracle(const wcase *w, const double *q, const double *k, const double *v,
                   const int32_t *kvl, const float *slopes, const float *sinks, double *out,
                   double *lse)
{
    const int64_t g = w->Hq / w->Hkv;
    double *s = xmalloc((size_t)w->Skv * sizeof *s);
    for (int64_t b = 0; b < w->B; b++)
        for (int64_t h = 0; h < w->Hq; h++)
            for (int64_t i = 0; i < w->Sq; i++) {
                const int64_t keys = kvl ? kvl[b] : w->Skv;
                const int64_t off = w->diagonal == BR ? keys - w->Sq
                                    : w->diagonal == EX ? w->offset : 0;
                const double *qi = q + ((b * w->Hq + h) * w->Sq + i) * w->D;
                double m = sinks && sinks[h] != -INFINITY ? sinks[h] : -INFINITY;
                for (int64_t j = 0; j < w->Skv; j++) {
                    int keep = j < keys && (w->wl < 0 || j >= i + off - w->wl) &&
                               (w->wr < 0 || j <= i + off + w->wr);
                    s[j] = -INFINITY;
                    if (!keep) continue;
                    const double *kj = k + ((b * w->Hkv + h / g) * w->Skv + j) * w->D;
                    double dot = 0;
                    for (int64_t d = 0; d < w->D; d++) dot += qi[d] * kj[d];
                    double x = dot / sqrt((double)w->D);
                    if (w->softcap > 0) x = w->softcap * tanh(x / w->softcap);
                    if (slopes) x -= slopes[h] * fabs((double)(i + off - j));
                    s[j] = x;
                    if (x > m) m = x;
                }
                double l = sinks && sinks[h] != -INFINITY ? exp(sinks[h] - m) : 0.0;
                double *o = out + ((b * w->Hq + h) * w->Sq + i) * w->Dv;
                for (int64_t d = 0; d < w->Dv; d++) o[d] = 0;
                for (int64_t j = 0; j < w->Skv; j++) {
                    if (s[j] == -INFINITY) continue;
                    const double p = exp(s[j] - m);
                    const double *vj = v + ((b * w->Hkv + h / g) * w->Skv + j) * w->Dv;
                    l += p;
                    for (int64_t d = 0; d < w->Dv; d++) o[d] += p * vj[d];
                }
                for (int64_t d = 0; d < w->Dv && l > 0; d++) o[d] /= l;
                lse[(b * w->Hq + h) * w->Sq + i] = l > 0 ? m + log(l) : -INFINITY;
            }
    free(s);
}

/* ---- files ---------------------------------------------------------------------- */

static const char *dtn(sdpa_dtype dt)
{
    static const char *const n[] = {"none", "f32", "f16", "bf16", "u8", "i32", "q8_0", "q4_0"};
    return n[dt];
}

static void write_file(const char *dir, const char *name, const void *data, size_t bytes)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, bytes, f) != bytes || fclose(f) != 0) die("cannot write", path);
}

static void write_f32(const char *dir, const char *name, const double *x, size_t n)
{
    float *f = xmalloc(n * sizeof *f);
    for (size_t i = 0; i < n; i++) f[i] = (float)x[i];
    write_file(dir, name, f, n * sizeof *f);
    free(f);
}

static void entry(FILE *f, int *first, const char *key, const char *dt, const char *file,
                  const int64_t *shape, int rank)
{
    fprintf(f, "%s\n  \"%s\": {\"dtype\": \"%s\", \"shape\": [", *first ? "" : ",", key, dt);
    for (int a = 0; a < rank; a++) fprintf(f, "%s%lld", a ? ", " : "", (long long)shape[a]);
    fprintf(f, "], \"file\": \"%s\"}", file);
    *first = 0;
}

static void generate(const char *root, const wcase *w, uint64_t seed)
{
    char dir[4096], name[64];
    snprintf(dir, sizeof dir, "%s/%s", root, w->name);
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) die("cannot create", dir);
    g_rng = seed * 0x9E3779B97F4A7C15ull + 1;
    const int64_t B = w->B, Hq = w->Hq, Hkv = w->Hkv, Sq = w->Sq, Skv = w->Skv, D = w->D,
                  Dv = w->Dv;
    const size_t nq = (size_t)(B * Hq * Sq * D), nk = (size_t)(B * Hkv * Skv * D),
                 nv = (size_t)(B * Hkv * Skv * Dv), no = (size_t)(B * Hq * Sq * Dv);
    double *q = xmalloc(nq * sizeof *q), *k = xmalloc(nk * sizeof *k),
           *v = xmalloc(nv * sizeof *v), *out = xmalloc(no * sizeof *out),
           *lse = xmalloc((size_t)(B * Hq * Sq) * sizeof *lse);
    uint8_t *qb = xmalloc(file_bytes(w->qdt, nq));
    make_values(w->qdt, nq, q, qb);
    snprintf(name, sizeof name, "q.%s", dtn(w->qdt));
    write_file(dir, name, qb, file_bytes(w->qdt, nq));
    int32_t kvl[4];
    for (int64_t b = 0; b < B; b++) {
        int64_t n = b == 2 ? 0 : Skv - 3 * b - (w->page ? 8 : 0);
        kvl[b] = (int32_t)(n < 0 ? 0 : n);
    }
    /* K and V: contiguous, or a pool of pages in shuffled order that every
     * batch reads through its block table (batch 1 shares batch 0's first
     * page: a common prefix); the oracle reads them gathered */
    const int64_t T = w->page ? Skv / w->page : 0, P = w->page ? B * T + 1 : 0;
    int32_t *table = NULL;
    for (int kv = 0; kv < 2; kv++) {
        const int64_t X = kv ? Dv : D;
        double *dst = kv ? v : k;
        const int64_t rows = w->page ? P * Hkv * w->page : B * Hkv * Skv;
        const size_t count = (size_t)(rows * X);
        double *vals = xmalloc(count * sizeof *vals);
        uint8_t *bytes = xmalloc(file_bytes(w->kvdt, count));
        make_values(w->kvdt, count, vals, bytes);
        int64_t shape[4] = {w->page ? P : B, Hkv, w->page ? w->page : Skv, X};
        snprintf(name, sizeof name, "%s%s.%s", kv ? "v" : "k", w->page ? "_pages" : "",
                 dtn(w->kvdt));
        write_file(dir, name, bytes, file_bytes(w->kvdt, count));
        if (w->page && !table) {
            table = xmalloc((size_t)(B * T) * sizeof *table);
            for (int64_t e = 0; e < B * T; e++) table[e] = (int32_t)((e * 7 + 3) % P);
            if (B > 1 && T > 0) table[T] = table[0];
        }
        for (int64_t b = 0; b < B; b++)
            for (int64_t hk = 0; hk < Hkv; hk++)
                for (int64_t j = 0; j < Skv; j++) {
                    int64_t src_page = w->page ? table[b * T + j / w->page] : b;
                    int64_t slot = w->page ? j % w->page : j;
                    memcpy(dst + ((b * Hkv + hk) * Skv + j) * X,
                           vals + ((src_page * Hkv + hk) * shape[2] + slot) * X,
                           (size_t)X * sizeof *dst);
                }
        free(vals);
        free(bytes);
    }
    float slopes[16], sinks[16];
    for (int64_t h = 0; h < Hq; h++) {
        slopes[h] = (float)pow(2.0, -8.0 * (double)(h + 1) / (double)Hq);
        sinks[h] = h == 1 ? -INFINITY : (float)(0.25 * (double)(h + 1));
    }
    oracle(w, q, k, v, w->kv_len ? kvl : NULL, w->alibi ? slopes : NULL, w->sinks ? sinks : NULL,
           out, lse);
    write_f32(dir, "out.expected.f32", out, no);
    write_f32(dir, "lse.expected.f32", lse, (size_t)(B * Hq * Sq));
    if (table) write_file(dir, "block_table.i32", table, (size_t)(B * T) * sizeof *table);
    if (w->kv_len) write_file(dir, "kv_len.i32", kvl, (size_t)B * sizeof *kvl);
    if (w->alibi) write_file(dir, "alibi_slopes.f32", slopes, (size_t)Hq * sizeof(float));
    if (w->sinks) write_file(dir, "sinks.f32", sinks, (size_t)Hq * sizeof(float));

    char path[4200];
    snprintf(path, sizeof path, "%s/case.json", dir);
    FILE *f = fopen(path, "w");
    if (!f) die("cannot write", path);
    const char *diag = w->diagonal == BR ? "bottom_right" : w->diagonal == EX ? "explicit"
                                                                              : "top_left";
    fprintf(f, "{\"format\": \"sdpa-case/1\", \"name\": \"%s\", \"op\": \"forward\", "
               "\"dtype\": \"%s\",\n \"attrs\": {\"scale\": null, \"diagonal\": \"%s\", "
               "\"diagonal_offset\": %lld, \"window\": [%lld, %lld], \"softcap\": %g},\n"
               " \"inputs\": {",
            w->name, dtn(w->qdt), diag, (long long)w->offset, (long long)w->wl,
            (long long)w->wr, w->softcap);
    int first = 1;
    const int64_t sq[4] = {B, Hq, Sq, D}, sk[4] = {w->page ? P : B, Hkv, w->page ? w->page : Skv,
                                                   D},
                  sv[4] = {sk[0], Hkv, sk[2], Dv}, sb[2] = {B, T}, s1[1] = {B}, sh[1] = {Hq};
    char fk[64], fv[64];
    snprintf(name, sizeof name, "q.%s", dtn(w->qdt));
    entry(f, &first, "q", dtn(w->qdt), name, sq, 4);
    snprintf(fk, sizeof fk, "k%s.%s", w->page ? "_pages" : "", dtn(w->kvdt));
    snprintf(fv, sizeof fv, "v%s.%s", w->page ? "_pages" : "", dtn(w->kvdt));
    entry(f, &first, w->page ? "k_pages" : "k", dtn(w->kvdt), fk, sk, 4);
    entry(f, &first, w->page ? "v_pages" : "v", dtn(w->kvdt), fv, sv, 4);
    if (table) entry(f, &first, "block_table", "i32", "block_table.i32", sb, 2);
    if (w->kv_len) entry(f, &first, "kv_len", "i32", "kv_len.i32", s1, 1);
    if (w->alibi) entry(f, &first, "alibi_slopes", "f32", "alibi_slopes.f32", sh, 1);
    if (w->sinks) entry(f, &first, "sinks", "f32", "sinks.f32", sh, 1);
    fprintf(f, "},\n \"expected\": {");
    first = 1;
    const int64_t so[4] = {B, Hq, Sq, Dv}, sl[3] = {B, Hq, Sq};
    entry(f, &first, "out", "f32", "out.expected.f32", so, 4);
    entry(f, &first, "lse", "f32", "lse.expected.f32", sl, 3);
    /* tolerance: f32 arithmetic over up to 1000 keys, and out's rounding to
     * q's dtype */
    const double tol = w->qdt == F32 ? 2e-4 : w->qdt == F16 ? 4e-3 : 3e-2;
    fprintf(f, "},\n \"tolerance\": {\"max_abs\": %g, \"rel_l2\": %g}}\n", tol, tol / 2);
    if (fclose(f) != 0) die("cannot write", path);
    free(q);
    free(k);
    free(v);
    free(out);
    free(lse);
    free(qb);
    free(table);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: gen_wave2 OUTDIR\n");
        return 2;
    }
    if (mkdir(argv[1], 0755) != 0 && errno != EEXIST) die("cannot create", argv[1]);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) generate(argv[1], &cases[i], i + 1);
    printf("gen_wave2: %zu cases in %s\n", sizeof cases / sizeof cases[0], argv[1]);
    return 0;
}
