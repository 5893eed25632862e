/*
 * ggml_flash_attn.c — the ggml baseline of scripts/bench-baselines.sh (not
 * part of the library or its tests): one ggml_flash_attn_ext node (ggml's
 * CPU flash attention, as llama.cpp runs it) on ggml's CPU backend, built
 * against the ggml that `scripts/install-deps.sh --baselines` compiles from
 * llama.cpp's source. Queries f32; K/V stored as f32, f16, q8_0 or q4_0
 * (ggml's block layouts, quantized from random f32 by ggml's own
 * quantizers); causal rows use an f16 mask of 0 / -inf with the diagonal at
 * the bottom right, as sdpa-bench. Random inputs in [-1, 1], scale
 * 1/sqrt(D). Timed like the other baselines: --warmup runs, then the median
 * and minimum of --repeat runs of the planned graph (work buffer allocated
 * once, ggml's own threads: --threads).
 *
 *   ggml_flash_attn B Hq Hkv Sq Skv D Dv causal(0|1) repeat warmup
 *                   [--kv-dtype f32|f16|q8_0|q4_0] [--threads N] [--case DIR]
 *
 * Prints "median_ms min_ms". With --case DIR it also writes the run as an
 * sdpa-case/1 conformance case (tests/conformance/README.md): q, and k, v as
 * ggml stored them (the same blocks), with ggml's output as the expected
 * `out`, so `sdpa-check --backend reference DIR` checks that this program
 * computes what libsdpa computes (the script's --check). The case's
 * tolerance covers ggml's own roundings, which the float64 oracle does not
 * have: ggml rounds the query to K's dot-product type (f16 for an f16 cache,
 * q8_0 for q8_0 and q4_0) and accumulates an f16 V in f16.
 */
#include <ggml-cpu.h>
#include <ggml.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "timing.h"

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "ggml_flash_attn: out of memory\n");
        exit(1);
    }
    return p;
}

/* A tensor's data from random f32 in [-1, 1], converted or quantized to its
 * type by ggml (one row = ne[0] elements). */
static void fill(struct ggml_tensor *t)
{
    const int64_t row = t->ne[0], rows = ggml_nrows(t);
    float *src = xmalloc((size_t)(row * rows) * sizeof *src);
    for (int64_t i = 0; i < row * rows; i++)
        src[i] = 2.0f * (float)rand() / (float)RAND_MAX - 1.0f;
    ggml_quantize_chunk(t->type, src, t->data, 0, rows, row, NULL);
    free(src);
}

static void write_file(const char *dir, const char *name, const void *data, size_t n)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, n, f) != n || fclose(f) != 0) {
        fprintf(stderr, "ggml_flash_attn: cannot write %s\n", path);
        exit(1);
    }
}

/* The run as an sdpa-case/1 forward case in dir: q (B,Hq,Sq,D) and k, v
 * (B,Hkv,Skv,D|Dv) are ggml's memory as is (ne0 fastest: D, then S, H, B),
 * out is ggml's (Dv, Hq, Sq, B) result transposed to (B, Hq, Sq, Dv). */
static void write_case(const char *dir, const char *kvname, const struct ggml_tensor *q,
                       const struct ggml_tensor *k, const struct ggml_tensor *v,
                       const struct ggml_tensor *out, int causal, double max_abs,
                       double rel_l2)
{
    const long D = q->ne[0], Sq = q->ne[1], Hq = q->ne[2], B = q->ne[3];
    const long Skv = k->ne[1], Hkv = k->ne[2], Dv = v->ne[0];
    char kfile[32], vfile[32], path[4096];
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "ggml_flash_attn: cannot create %s\n", dir);
        exit(1);
    }
    snprintf(kfile, sizeof kfile, "k.%s", kvname);
    snprintf(vfile, sizeof vfile, "v.%s", kvname);
    write_file(dir, "q.f32", q->data, ggml_nbytes(q));
    write_file(dir, kfile, k->data, ggml_nbytes(k));
    write_file(dir, vfile, v->data, ggml_nbytes(v));
    float *o = xmalloc((size_t)(B * Hq * Sq * Dv) * sizeof *o);
    const float *r = out->data;
    for (long b = 0; b < B; b++)
        for (long h = 0; h < Hq; h++)
            for (long i = 0; i < Sq; i++)
                memcpy(o + ((b * Hq + h) * Sq + i) * Dv, r + ((b * Sq + i) * Hq + h) * Dv,
                       (size_t)Dv * sizeof *o);
    write_file(dir, "out.expected.f32", o, (size_t)(B * Hq * Sq * Dv) * sizeof *o);
    free(o);
    snprintf(path, sizeof path, "%s/case.json", dir);
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "ggml_flash_attn: cannot write %s\n", path);
        exit(1);
    }
    const char *base = strrchr(dir, '/') ? strrchr(dir, '/') + 1 : dir;
    fprintf(f,
            "{\n \"format\": \"sdpa-case/1\",\n \"name\": \"%s\",\n \"op\": \"forward\",\n"
            " \"dtype\": \"f32\",\n \"attrs\": {\"scale\": null, \"diagonal\": \"%s\","
            " \"diagonal_offset\": 0, \"window\": [-1, %d], \"softcap\": 0.0,"
            " \"qk_norm\": \"none\", \"qk_norm_eps\": 1e-06},\n"
            " \"inputs\": {\n"
            "  \"q\": {\"dtype\": \"f32\", \"shape\": [%ld, %ld, %ld, %ld], \"file\": \"q.f32\"},\n"
            "  \"k\": {\"dtype\": \"%s\", \"shape\": [%ld, %ld, %ld, %ld], \"file\": \"%s\"},\n"
            "  \"v\": {\"dtype\": \"%s\", \"shape\": [%ld, %ld, %ld, %ld], \"file\": \"%s\"}\n"
            " },\n \"expected\": {\n"
            "  \"out\": {\"dtype\": \"f32\", \"shape\": [%ld, %ld, %ld, %ld],"
            " \"file\": \"out.expected.f32\"}\n },\n"
            " \"tolerance\": {\"max_abs\": %g, \"rel_l2\": %g}\n}\n",
            base, causal ? "bottom_right" : "top_left", causal ? 0 : -1, B, Hq, Sq, D, kvname, B,
            Hkv, Skv, D, kfile, kvname, B, Hkv, Skv, Dv, vfile, B, Hq, Sq, Dv, max_abs, rel_l2);
    if (fclose(f) != 0) {
        fprintf(stderr, "ggml_flash_attn: cannot write %s\n", path);
        exit(1);
    }
}

int main(int argc, char **argv)
{
    const char *kvname = "f16", *casedir = NULL;
    int threads = 2, pos = 0;
    long a[10];
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--kv-dtype") == 0 && i + 1 < argc)
            kvname = argv[++i];
        else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
            threads = atoi(argv[++i]);
        else if (strcmp(argv[i], "--case") == 0 && i + 1 < argc)
            casedir = argv[++i];
        else if (argv[i][0] != '-' && pos < 10)
            a[pos++] = atol(argv[i]);
        else
            pos = -100;
    }
    if (pos != 10) {
        fprintf(stderr, "usage: ggml_flash_attn B Hq Hkv Sq Skv D Dv causal repeat warmup\n"
                        "       [--kv-dtype f32|f16|q8_0|q4_0] [--threads N] [--case DIR]\n");
        return 2;
    }
    const long B = a[0], Hq = a[1], Hkv = a[2], Sq = a[3], Skv = a[4], D = a[5], Dv = a[6];
    const int causal = (int)a[7], repeat = (int)a[8], warmup = (int)a[9];
    enum ggml_type kvt;
    double tol_abs, tol_rel; /* the --case tolerance: ggml's roundings (see the top) */
    if (strcmp(kvname, "f32") == 0)
        kvt = GGML_TYPE_F32, tol_abs = 1e-5, tol_rel = 1e-5;
    else if (strcmp(kvname, "f16") == 0)
        kvt = GGML_TYPE_F16, tol_abs = 5e-3, tol_rel = 5e-3;
    else if (strcmp(kvname, "q8_0") == 0)
        kvt = GGML_TYPE_Q8_0, tol_abs = 5e-3, tol_rel = 5e-3;
    else if (strcmp(kvname, "q4_0") == 0)
        kvt = GGML_TYPE_Q4_0, tol_abs = 5e-3, tol_rel = 5e-3;
    else {
        fprintf(stderr, "ggml_flash_attn: --kv-dtype %s is not f32, f16, q8_0 or q4_0\n", kvname);
        return 2;
    }
    if (B < 1 || Hq < 1 || Hkv < 1 || Hq % Hkv || Sq < 1 || Skv < 1 || D < 1 || Dv < 1 ||
        repeat < 1 || warmup < 0 || threads < 1 || (causal && Sq > Skv) ||
        D % ggml_blck_size(kvt) || Dv % ggml_blck_size(kvt)) {
        fprintf(stderr, "ggml_flash_attn: bad arguments (D and Dv must divide into %s blocks "
                        "of %lld)\n", kvname, (long long)ggml_blck_size(kvt));
        return 2;
    }

    ggml_cpu_init();
    const size_t bytes = (size_t)(B * Hq * Sq * D) * sizeof(float) +
                         (size_t)(B * Hkv * Skv) * ggml_row_size(kvt, D) +
                         (size_t)(B * Hkv * Skv) * ggml_row_size(kvt, Dv) +
                         (causal ? (size_t)(Sq * Skv) * sizeof(ggml_fp16_t) : 0) +
                         (size_t)(B * Hq * Sq * Dv) * sizeof(float) + 8 * ggml_tensor_overhead() +
                         ggml_graph_overhead() + 1024 * 1024;
    struct ggml_init_params ip = {bytes, NULL, false};
    struct ggml_context *ctx = ggml_init(ip);
    if (!ctx) {
        fprintf(stderr, "ggml_flash_attn: ggml_init of %zu bytes failed\n", bytes);
        return 1;
    }
    srand(1);
    struct ggml_tensor *q = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, D, Sq, Hq, B);
    struct ggml_tensor *k = ggml_new_tensor_4d(ctx, kvt, D, Skv, Hkv, B);
    struct ggml_tensor *v = ggml_new_tensor_4d(ctx, kvt, Dv, Skv, Hkv, B);
    fill(q);
    fill(k);
    fill(v);
    struct ggml_tensor *mask = NULL;
    if (causal) { /* key j of row i kept when j <= i + Skv - Sq */
        mask = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, Skv, Sq);
        ggml_fp16_t *m = mask->data;
        const ggml_fp16_t zero = ggml_fp32_to_fp16(0.0f), ninf = ggml_fp32_to_fp16(-INFINITY);
        for (long i = 0; i < Sq; i++)
            for (long j = 0; j < Skv; j++)
                m[i * Skv + j] = j <= i + Skv - Sq ? zero : ninf;
    }
    struct ggml_tensor *out =
        ggml_flash_attn_ext(ctx, q, k, v, mask, 1.0f / sqrtf((float)D), 0.0f, 0.0f);
    /* the default precision: the CPU backend accumulates in f32 either way */
    struct ggml_cgraph *gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, out);
    struct ggml_cplan plan = ggml_graph_plan(gf, threads, NULL);
    plan.work_data = plan.work_size ? xmalloc(plan.work_size) : NULL;

    double *t = xmalloc((size_t)repeat * sizeof *t);
    for (int r = 0; r < warmup + repeat; r++) {
        double t0 = now_ms();
        if (ggml_graph_compute(gf, &plan) != GGML_STATUS_SUCCESS) {
            fprintf(stderr, "ggml_flash_attn: ggml_graph_compute failed\n");
            return 1;
        }
        if (r >= warmup)
            t[r - warmup] = now_ms() - t0;
    }
    print_median_min(t, repeat);
    if (casedir)
        write_case(casedir, kvname, q, k, v, out, causal, tol_abs, tol_rel);
    free(t);
    free(plan.work_data);
    ggml_free(ctx);
    return 0;
}
