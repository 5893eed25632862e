/*
 * test_tune.c — the autotuner and the per-device profile store (src/tune).
 *
 * Profile store: record round trip and replacement; corrupt, truncated,
 * binary, oversized-line, wrong-type, wrong-version and huge files (bad lines
 * skipped with exactly one WARN, never fatal, plans still build); random
 * mutations of a record line (parse or refuse, never crash, never yield an
 * out-of-range tile); stale driver records (used, one WARN); two writer
 * processes storing many records at once (none lost, file parses); the
 * lookup chain user -> shipped -> default as seen in sdpa_plan_get_info; a
 * profile configuration the backend refuses falls back to its default.
 * Tuner: argument checks, dry run, a fault-injected wrong-result candidate is
 * rejected and recorded (SDPA_TUNE_FAULT_CANDIDATE), a 2 s budget on the cpu
 * backend finishes within budget + slack and leaves a valid plan whose source
 * is "profile", backward buckets, exhaustive and sampled searches over a cpu
 * backend table that offers 16 or 36 candidates, the search order itself,
 * and the sdpa-tune tool (JSON, table, dry run, exit codes). Bucket keys and
 * file names.
 *
 * Every test works in its own temporary directory. Run time: under 20 s
 * (about 2 s today; the tuning tests have budgets of 1-3 s each).
 */
#include "testutil.h"
#include "../src/tune/search.h"
#include "device_table.h"

#include <cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <time.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define NO_SHIPPED "/nonexistent/sdpa-test-shipped-profiles"

/* ---- helpers ------------------------------------------------------------------ */

/* A cpu context (2 threads) logging at `level` and up to fn(user). */
static sdpa_context *cpu_ctx_logging(const char *profile_dir, sdpa_log_level level,
                                     sdpa_log_fn fn, void *user)
{
    sdpa_context_options o;
    sdpa_context_options_init(&o);
    o.backend = SDPA_BACKEND_CPU;
    o.profile_dir = profile_dir;
    o.log_level = level;
    o.log_fn = fn;
    o.log_user = user;
    o.threads = 2;
    sdpa_context *ctx = NULL;
    ck_assert_int_eq(sdpa_context_create(&o, &ctx), SDPA_OK);
    return ctx;
}

static sdpa_context *cpu_ctx(const char *profile_dir, tlogcap *cap)
{
    return cpu_ctx_logging(profile_dir, SDPA_LOG_WARN, tlog_capture, cap);
}

/* The problem the lookup tests plan: B1 Hq4 Hkv2 Sq100 Skv130 D32 causal. */
static sdpa__problem test_problem(void)
{
    sdpa__problem p;
    memset(&p, 0, sizeof p);
    p.B = 1; p.Hq = 4; p.Hkv = 2; p.Sq = 100; p.Skv = 130; p.D = 32; p.Dv = 32;
    p.dtype = SDPA_DTYPE_F32;
    p.window_left = -1;
    p.window_right = 0;
    return p;
}

typedef struct host_problem {
    sdpa_attention_desc desc;
    float *q, *k, *v, *o, *lse;
} host_problem;

static void host_problem_make(host_problem *h)
{
    const sdpa__problem p = test_problem();
    size_t nq = (size_t)(p.B * p.Hq * p.Sq * p.D), nk = (size_t)(p.B * p.Hkv * p.Skv * p.D);
    h->q = malloc(nq * 4); h->o = malloc(nq * 4);
    h->k = malloc(nk * 4); h->v = malloc(nk * 4);
    h->lse = malloc((size_t)(p.B * p.Hq * p.Sq) * 4);
    trng r;
    trng_seed(&r, 7);
    for (size_t i = 0; i < nq; i++) h->q[i] = (float)trng_normal(&r);
    for (size_t i = 0; i < nk; i++) { h->k[i] = (float)trng_normal(&r); h->v[i] = (float)trng_normal(&r); }
    sdpa_attention_desc_init(&h->desc);
    sdpa_attention_desc_set_causal(&h->desc, SDPA_DIAGONAL_TOP_LEFT);
    h->desc.tensors.q = sdpa_tensor_host(h->q, SDPA_DTYPE_F32, p.B, p.Hq, p.Sq, p.D);
    h->desc.tensors.k = sdpa_tensor_host(h->k, SDPA_DTYPE_F32, p.B, p.Hkv, p.Skv, p.D);
    h->desc.tensors.v = sdpa_tensor_host(h->v, SDPA_DTYPE_F32, p.B, p.Hkv, p.Skv, p.Dv);
    h->desc.tensors.out = sdpa_tensor_host(h->o, SDPA_DTYPE_F32, p.B, p.Hq, p.Sq, p.Dv);
}

static void host_problem_free(host_problem *h)
{
    free(h->q); free(h->k); free(h->v); free(h->o); free(h->lse);
}

/* A record for backend `be` on ctx's device, bucket of test_problem(). */
static sdpa__profile_record make_record(sdpa_context *ctx, int q_tile, int k_tile)
{
    sdpa__profile_record r;
    memset(&r, 0, sizeof r);
    r.format = SDPA__PROFILE_FORMAT;
    const sdpa__backend *be = sdpa__backend_get(sdpa_context_backend(ctx));
    ck_assert_ptr_nonnull(be);
    ck_assert_int_eq(sdpa__device_key_of(ctx, be, &r.dev), SDPA_OK);
    sdpa__problem p = test_problem();
    sdpa__bucket_of(&p, 0, &r.bucket);
    sdpa_tile_config_init(&r.tile);
    sdpa_tile_config_set(&r.tile, SDPA_TILE_Q_TILE, q_tile);
    sdpa_tile_config_set(&r.tile, SDPA_TILE_K_TILE, k_tile);
    r.best_ms = 1.25;
    r.default_ms = 2.5;
    snprintf(r.tuned_at, sizeof r.tuned_at, "2026-01-01T00:00:00Z");
    return r;
}

static void user_path(sdpa_context *ctx, char *out, size_t size)
{
    const sdpa__backend *be = sdpa__backend_get(sdpa_context_backend(ctx));
    ck_assert(sdpa__profile_path_for(ctx, be, out, size));
}

static void write_file(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(data, 1, n, f), n);
    fclose(f);
}

/* test_problem() as testutil's tcase (causal, top-left), for tplan_info. */
static tcase test_tcase(void)
{
    const sdpa__problem p = test_problem();
    tcase c;
    tcase_init(&c, "tune", p.B, p.Hq, p.Hkv, p.Sq, p.Skv, p.D, p.Dv);
    c.window_left = p.window_left;
    c.window_right = p.window_right;
    c.seed = 7;
    return c;
}

/* Plans test_problem on ctx with plan options o (NULL: none) and returns the
 * plan info (testutil's tplan_info_of); run: the forward runs too and its
 * output is finite. */
static sdpa_plan_info plan_info_with(sdpa_context *ctx, const sdpa_plan_options *o, bool run)
{
    tcase c = test_tcase();
    c.lse = o && (o->flags & SDPA_PLAN_BACKWARD);
    tproblem tp;
    tproblem_make(&tp, &c);
    sdpa_plan_info info = tplan_info_of(ctx, &tp, o, run);
    if (run) ck_assert(isfinite(tload(tp.out, c.dtype, 0)));
    tproblem_free(&tp);
    return info;
}

static sdpa_plan_info plan_info(sdpa_context *ctx) { return plan_info_with(ctx, NULL, true); }


/* ---- a cpu backend that offers tile candidates ------------------------------------
 * A copy of the cpu table with tile_candidates filled in (q_tile x k_tile;
 * the default stays the cpu backend's: q_tile 64, k_tile 64),
 * sharing a real cpu context's state (its context_free is a no-op), so the
 * tuner's search, rejection and re-measurement run over many candidates
 * whatever the cpu backend itself offers. */
static int fake_nq = 4, fake_nk = 4;
static int fake_candidates(sdpa_context *ctx, void *state, const sdpa__problem *p,
                           unsigned flags, sdpa_tile_config *out, int max)
{
    (void)ctx; (void)state; (void)p; (void)flags;
    static const int qs[] = {16, 32, 64, 128, 256, 48}, ks[] = {32, 64, 128, 256, 16, 96};
    int n = 0;
    for (int i = 0; i < fake_nq; i++)
        for (int j = 0; j < fake_nk; j++, n++)
            if (n < max) {
                sdpa_tile_config_init(&out[n]);
                sdpa_tile_config_set(&out[n], SDPA_TILE_Q_TILE, qs[i]);
                sdpa_tile_config_set(&out[n], SDPA_TILE_K_TILE, ks[j]);
            }
    return n;
}
static void noop_free(sdpa_context *ctx, void *state) { (void)ctx; (void)state; }
static sdpa__backend fake_be;
/* Refuses q_tile 112, as a device would refuse a configuration above its
 * limits (e.g. a profile made before a driver lowered them). */
static sdpa_status fake_plan_create(sdpa_context *ctx, void *state, const sdpa__problem *p,
                                    const sdpa_plan_options *options, void **plan_state)
{
    if (options && options->tile && TGET(options->tile, Q_TILE) == 112)
        return SDPA__FAIL(ctx, SDPA_ERR_UNSUPPORTED, "fake: q_tile 112 exceeds the device");
    return sdpa__backend_get(SDPA_BACKEND_CPU)->plan_create(ctx, state, p, options,
                                                            plan_state);
}

/* A context over fake_be; *owner keeps the real state alive. */
static sdpa_context *fake_ctx(const char *profile_dir, tlogcap *cap, sdpa_context **owner)
{
    *owner = cpu_ctx(profile_dir, cap);
    fake_be = *sdpa__backend_get(SDPA_BACKEND_CPU);
    fake_be.context_free = noop_free;
    fake_be.tile_candidates = fake_candidates;
    fake_be.plan_create = fake_plan_create;
    sdpa_context_options o;
    sdpa_context_options_init(&o);
    o.profile_dir = profile_dir;
    o.log_level = SDPA_LOG_WARN;
    o.log_fn = tlog_capture;
    o.log_user = cap;
    o.threads = 2;
    sdpa_context *ctx = NULL;
    void *state = sdpa__context_primary_state(*owner, sdpa__backend_get(SDPA_BACKEND_CPU));
    ck_assert_ptr_nonnull(state);
    ck_assert_int_eq(sdpa__context_create_with_state(&o, &fake_be, state,
                                                     sdpa_context_device_name(*owner), &ctx),
                     SDPA_OK);
    return ctx;
}

/* ---- keys ------------------------------------------------------------------------- */

START_TEST(bucket_keys)
{
    sdpa__problem p = test_problem();
    sdpa__bucket b;
    char s[160];
    sdpa__bucket_of(&p, 0, &b);
    sdpa__bucket_string(&b, s, sizeof s);
    ck_assert_str_eq(s, "forward/f32/d32/dv32/causal/sq7/skv8/bh2");
    sdpa__bucket_of(&p, SDPA_PLAN_BACKWARD, &b);
    ck_assert_str_eq(b.kind, "backward");
    p.Sq = 1; p.Skv = 4096; p.window_right = -1; p.B = 3; p.Hq = 32; p.Hkv = 8;
    sdpa__bucket_of(&p, 0, &b);
    sdpa__bucket_string(&b, s, sizeof s);
    ck_assert_str_eq(s, "decode/f32/d32/dv32/full/sq0/skv12/bh7");
    p.window_left = 128; p.window_right = 0; p.Sq = 17;
    sdpa__bucket_of(&p, 0, &b);
    ck_assert_str_eq(b.kind, "forward");
    ck_assert_str_eq(b.mask, "band");

    sdpa__device_key k;
    memset(&k, 0, sizeof k);
    strcpy(k.backend, "opencl");
    strcpy(k.device, "  NVIDIA GeForce RTX 4090 (rev/2) ../../etc ");
    sdpa__profile_file_name(&k, s, sizeof s);
    ck_assert_str_eq(s, "opencl-nvidia_geforce_rtx_4090_rev_2_.._.._etc.jsonl");
    ck_assert_ptr_null(strchr(s, '/'));
    k.device[0] = '\0';
    sdpa__profile_file_name(&k, s, sizeof s);
    ck_assert_str_eq(s, "opencl-device.jsonl");
}
END_TEST

/* ---- round trip ---------------------------------------------------------------- */

/* A record whose backend name cannot begin a family key (upper case: the
 * profile fuzzer's find) has no family, and what it writes parses back to
 * the same record; its family was once derived lowercased ("cpz/..."),
 * written, and then refused on reading as not its backend's. */
START_TEST(record_round_trip_backend_not_a_family_part)
{
    const char *line =
        "{\"format\":1,\"backend\":\"cpZ\",\"vendor\":\"GenuineIntel\",\"device\":"
        "\"llvmpipeIntel Xeon\",\"compute_units\":2,\"driver\":\"1\",\"source_hash\":"
        "\"abc123\",\"kind\":\"forward\",\"dtype\":\"f32\",\"d\":64,\"dv\":64,\"mask\":"
        "\"causal\",\"sq_log2\":10,\"skv_log2\":10,\"bh_log2\":3,\"bucket\":"
        "\"forward/f32/d64/dv64/causal/sq10/skv10/bh3\",\"tile\":{\"q_tile\":32,\"k_tile\":64},"
        "\"best_ms\":1.5,\"default_ms\":2.25,\"tuned_at\":\"2026-11-29T10:00:00Z\"}";
    sdpa__profile_record r, back;
    const char *why = NULL;
    ck_assert_msg(sdpa__profile_record_parse(line, strlen(line), &r, &why), "%s", why);
    ck_assert_str_eq(r.dev.family, "");
    char *json = sdpa__profile_record_to_json(&r);
    ck_assert_ptr_nonnull(json);
    ck_assert_msg(sdpa__profile_record_parse(json, strlen(json), &back, &why), "%s: %s", json,
                  why);
    ck_assert(sdpa__device_key_equal(&back.dev, &r.dev));
    ck_assert(sdpa__bucket_equal(&back.bucket, &r.bucket));
    ck_assert(sdpa__tile_equal(&back.tile, &r.tile));
    free(json);
}
END_TEST

START_TEST(record_round_trip)
{
    char *dir = tmkdtemp("sdpa-test-tune");
    tlogcap cap = {0};
    sdpa_context *ctx = cpu_ctx(dir, &cap);
    sdpa__profile_record r = make_record(ctx, 32, 128);
    sdpa_tile_config_set(&r.tile, SDPA_TILE_SPLIT_KV, 4);
    r.n_rejected = 1;
    r.rejected[0].tile = r.tile;
    sdpa_tile_config_set(&r.rejected[0].tile, SDPA_TILE_Q_TILE, 256);
    snprintf(r.rejected[0].reason, sizeof r.rejected[0].reason, "wrong results: out[3]");
    char *json = sdpa__profile_record_to_json(&r);
    ck_assert_ptr_nonnull(json);
    ck_assert_ptr_null(strchr(json, '\n'));
    sdpa__profile_record back;
    const char *why = NULL;
    ck_assert_msg(sdpa__profile_record_parse(json, strlen(json), &back, &why), "%s", why);
    ck_assert(sdpa__device_key_equal(&back.dev, &r.dev));
    ck_assert_str_eq(back.dev.driver, r.dev.driver);
    ck_assert_str_eq(back.dev.source_hash, r.dev.source_hash);
    ck_assert(sdpa__bucket_equal(&back.bucket, &r.bucket));
    ck_assert(sdpa__tile_equal(&back.tile, &r.tile));
    ck_assert_double_eq(back.best_ms, 1.25);
    ck_assert_double_eq(back.default_ms, 2.5);
    ck_assert_int_eq(back.n_rejected, 1);
    ck_assert_int_eq(TGET(&back.rejected[0].tile, Q_TILE), 256);
    ck_assert_str_eq(back.rejected[0].reason, "wrong results: out[3]");
    free(json);

    /* Store twice with the same key: one record, the newer one. */
    char path[4096];
    user_path(ctx, path, sizeof path);
    ck_assert_int_eq(sdpa__profile_store(ctx, path, &r), SDPA_OK);
    sdpa_tile_config_set(&r.tile, SDPA_TILE_Q_TILE, 64);
    ck_assert_int_eq(sdpa__profile_store(ctx, path, &r), SDPA_OK);
    sdpa__bucket other = r.bucket;
    r.bucket.d = 128;
    ck_assert_int_eq(sdpa__profile_store(ctx, path, &r), SDPA_OK);
    sdpa__profile_file f;
    ck_assert_int_eq(sdpa__profile_read(ctx, path, &f), SDPA_OK);
    ck_assert_uint_eq(f.count, 2);
    ck_assert_uint_eq(f.bad_lines, 0);
    ck_assert(sdpa__bucket_equal(&f.records[0].bucket, &other));
    ck_assert_int_eq(TGET(&f.records[0].tile, Q_TILE), 64);
    sdpa__profile_file_free(&f);
    ck_assert_str_eq(sdpa_context_profile_path(ctx), path);
    ck_assert_int_eq(cap.warns, 0);
    /* No temp or stray files besides the lock. */
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    ck_assert_int_ne(access(tmp, F_OK), 0);
    sdpa_context_destroy(ctx);
    free(dir);
}
END_TEST

/* ---- damaged files ---------------------------------------------------------------- */

START_TEST(corrupt_lines_skipped)
{
    char *dir = tmkdtemp("sdpa-test-tune");
    tlogcap cap = {0};
    sdpa_context *ctx = cpu_ctx(dir, &cap);
    sdpa__profile_record r = make_record(ctx, 32, 128);
    char *good = sdpa__profile_record_to_json(&r);
    /* Variants of the good line with one field broken. */
    char *wrong_version = strdup(good), *wrong_type = strdup(good), *bad_tile = strdup(good);
    char *p = strstr(wrong_version, "\"format\":1");
    ck_assert_ptr_nonnull(p);
    p[9] = '7';
    p = strstr(wrong_type, "\"d\":32");
    ck_assert_ptr_nonnull(p);
    memcpy(p, "\"d\":\"x\"", 6); /* "d":"x  -> broken JSON or wrong type */
    p = strstr(bad_tile, "\"q_tile\":32");
    ck_assert_ptr_nonnull(p);
    memcpy(p, "\"q_tile\":-9", 11);
    size_t huge_n = SDPA__PROFILE_MAX_LINE + 100;
    char *huge = malloc(huge_n + 1);
    memset(huge, ' ', huge_n);
    memcpy(huge, good, strlen(good)); /* valid JSON padded past the limit */
    huge[huge_n] = '\0';

    char path[4096];
    user_path(ctx, path, sizeof path);
    mkdir(dir, 0755);
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "{not json\n%s\n%s\n%s\n", wrong_version, wrong_type, bad_tile);
    static const char bin[] = "\x01\x02\xff\xfe binary \x00 junk\n";
    fwrite(bin, 1, sizeof bin - 1, f);
    fwrite("\x7f" "ELF\x00\x00\x01", 1, 7, f);
    fputc('\n', f);
    fprintf(f, "%s\n[1,2,3]\n\n", huge);
    fprintf(f, "%s\n", good);                          /* the one good record */
    fprintf(f, "%.*s", (int)(strlen(good) / 2), good); /* truncated last line */
    fclose(f);

    sdpa__profile_file pf;
    ck_assert_int_eq(sdpa__profile_read(ctx, path, &pf), SDPA_OK);
    ck_assert_uint_eq(pf.count, 1);
    ck_assert_uint_eq(pf.bad_lines, 9);
    ck_assert_int_eq(TGET(&pf.records[0].tile, Q_TILE), 32);
    sdpa__profile_file_free(&pf);
    ck_assert_int_eq(cap.warns, 1);
    ck_assert_ptr_nonnull(strstr(cap.last, "skipped 9"));
    /* The plan still uses the good record; no second warning. */
    sdpa_plan_info info = plan_info(ctx);
    ck_assert_str_eq(info.source, "profile");
    ck_assert_ptr_nonnull(strstr(info.config, "q_tile=32"));
    ck_assert_int_eq(cap.warns, 1);

    /* Storing into a damaged file keeps the good record, drops the junk, and
     * keeps JSON objects of other format versions. */
    sdpa__profile_record r2 = make_record(ctx, 64, 64);
    r2.bucket.d = 256;
    ck_assert_int_eq(sdpa__profile_store(ctx, path, &r2), SDPA_OK);
    ck_assert_int_eq(sdpa__profile_read(ctx, path, &pf), SDPA_OK);
    ck_assert_uint_eq(pf.count, 2);
    ck_assert_uint_le(pf.bad_lines, 3); /* version 7, wrong type (if JSON), bad tile */
    sdpa__profile_file_free(&pf);

    free(good); free(wrong_version); free(wrong_type); free(bad_tile); free(huge);
    sdpa_context_destroy(ctx);
    free(dir);
}
END_TEST

START_TEST(huge_and_binary_files)
{
    char *dir = tmkdtemp("sdpa-test-tune");
    tlogcap cap = {0};
    sdpa_context *ctx = cpu_ctx(dir, &cap);
    char path[4096];
    user_path(ctx, path, sizeof path);
    /* Above the size limit: refused with one warning, plans still build. */
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(ftruncate(fileno(f), (off_t)SDPA__PROFILE_MAX_FILE + 1), 0);
    fclose(f);
    sdpa__profile_file pf;
    ck_assert_int_eq(sdpa__profile_read(ctx, path, &pf), SDPA_ERR_CORRUPT);
    ck_assert_uint_eq(pf.count, 0);
    ck_assert_int_eq(cap.warns, 1);
    sdpa_plan_info info = plan_info(ctx);
    ck_assert_str_eq(info.source, "default");
    ck_assert_int_eq(cap.warns, 1);
    /* A writer refuses to replace what it cannot read. */
    sdpa__profile_record r = make_record(ctx, 32, 64);
    ck_assert_int_ne(sdpa__profile_store(ctx, path, &r), SDPA_OK);

    /* All binary (random bytes, with NULs and no newlines): one warning. */
    unsigned char junk[70000];
    trng rng;
    trng_seed(&rng, 3);
    for (size_t i = 0; i < sizeof junk; i++) junk[i] = (unsigned char)trng_next(&rng);
    write_file(path, junk, sizeof junk);
    cap.warns = 0;
    ck_assert_int_eq(sdpa__profile_read(ctx, path, &pf), SDPA_OK);
    ck_assert_uint_eq(pf.count, 0);
    ck_assert_uint_ge(pf.bad_lines, 1);
    sdpa__profile_file_free(&pf);
    ck_assert_int_eq(cap.warns, 1);
    info = plan_info(ctx);
    ck_assert_str_eq(info.source, "default");
    ck_assert_int_eq(cap.warns, 1);
    /* A directory where the file should be: reported, not fatal. */
    unlink(path);
    ck_assert_int_eq(mkdir(path, 0755), 0);
    info = plan_info(ctx);
    ck_assert_str_eq(info.source, "default");
    rmdir(path);
    sdpa_context_destroy(ctx);
    free(dir);
}
END_TEST

START_TEST(mutated_lines_never_crash)
{
    char *dir = tmkdtemp("sdpa-test-tune");
    tlogcap cap = {0};
    sdpa_context *ctx = cpu_ctx(dir, &cap);
    sdpa__profile_record r = make_record(ctx, 32, 128);
    char *good = sdpa__profile_record_to_json(&r);
    size_t n = strlen(good);
    char *buf = malloc(n + 16);
    trng rng;
    trng_seed(&rng, 11);
    static const char alphabet[] = "{}[]\":,-0123456789e.+ atrufnl\\\x00\xff";
    int accepted = 0;
    for (int it = 0; it < 20000; it++) {
        memcpy(buf, good, n + 1);
        size_t len = n;
        int edits = 1 + (int)(trng_next(&rng) % 4);
        for (int e = 0; e < edits; e++) {
            size_t at = (size_t)(trng_next(&rng) % len);
            switch (trng_next(&rng) % 3) {
            case 0: buf[at] = alphabet[trng_next(&rng) % (sizeof alphabet - 1)]; break;
            case 1: len = at + 1; break; /* truncate */
            default: memmove(buf + at, buf + at + 1, len - at); len--; break;
            }
            if (len == 0) len = 1;
        }
        sdpa__profile_record out;
        if (sdpa__profile_record_parse(buf, len, &out, NULL)) {
            accepted++;
            ck_assert(sdpa__tile_valid(&out.tile));
            ck_assert(isfinite(out.best_ms) && out.best_ms >= 0);
            ck_assert_int_le(out.n_rejected, SDPA__PROFILE_MAX_REJECTED);
        }
    }
    ck_assert_int_lt(accepted, 20000);
    free(buf);
    free(good);
    sdpa_context_destroy(ctx);
    free(dir);
}
END_TEST

/* ---- stale records ---------------------------------------------------------------- */

START_TEST(stale_driver_used_with_warning)
{
    char *dir = tmkdtemp("sdpa-test-tune");
    tlogcap cap = {0};
    sdpa_context *ctx = cpu_ctx(dir, &cap);
    char path[4096];
    user_path(ctx, path, sizeof path);
    sdpa__profile_record r = make_record(ctx, 32, 128);
    snprintf(r.dev.driver, sizeof r.dev.driver, "old-driver-0.0.1");
    ck_assert_int_eq(sdpa__profile_store(ctx, path, &r), SDPA_OK);
    sdpa_plan_info info = plan_info(ctx);
    ck_assert_str_eq(info.source, "profile");
    ck_assert_ptr_nonnull(strstr(info.config, "q_tile=32"));
    ck_assert_int_eq(cap.warns, 1);
    ck_assert_ptr_nonnull(strstr(cap.last, "stale"));
    ck_assert_ptr_nonnull(strstr(cap.last, "old-driver-0.0.1"));
    info = plan_info(ctx); /* one warning per process, not per plan */
    ck_assert_int_eq(cap.warns, 1);
    /* A fresh record in the same file wins over the stale one. */
    sdpa__profile_record fresh = make_record(ctx, 64, 64);
    sdpa__profile_file pf;
    ck_assert_int_eq(sdpa__profile_store(ctx, path, &fresh), SDPA_OK); /* replaces it */
    ck_assert_int_eq(sdpa__profile_read(ctx, path, &pf), SDPA_OK);
    ck_assert_uint_eq(pf.count, 1);
    sdpa__profile_file_free(&pf);
    info = plan_info(ctx);
    ck_assert_ptr_nonnull(strstr(info.config, "q_tile=64"));
    ck_assert_int_eq(cap.warns, 1);
    sdpa_context_destroy(ctx);
    free(dir);
}
END_TEST

/* ---- concurrent writers ------------------------------------------------------------ */

#define WRITERS 2
#define RECORDS_PER_WRITER 60

START_TEST(concurrent_writers)
{
    char *dir = tmkdtemp("sdpa-test-tune");
    tlogcap cap = {0};
    sdpa_context *ctx = cpu_ctx(dir, &cap);
    char path[4096];
    user_path(ctx, path, sizeof path);
    sdpa__profile_record base = make_record(ctx, 32, 64);
    /* fork only from a single-threaded process: the cpu context's worker
     * threads (and any lock they hold) would not exist in the children */
    sdpa_context_destroy(ctx);
    pid_t pids[WRITERS];
    for (int w = 0; w < WRITERS; w++) {
        pids[w] = fork();
        ck_assert_int_ge(pids[w], 0);
        if (pids[w] == 0) {
            int bad = 0;
            for (int i = 0; i < RECORDS_PER_WRITER; i++) {
                sdpa__profile_record r = base;
                r.bucket.d = 1 + w * 1000 + i; /* distinct keys per writer */
                sdpa_tile_config_set(&r.tile, SDPA_TILE_SPLIT_KV, 1 + i);
                if (sdpa__profile_store(NULL, path, &r) != SDPA_OK) bad++;
            }
            _exit(bad ? 1 : 0);
        }
    }
    for (int w = 0; w < WRITERS; w++) {
        int status = 0;
        ck_assert_int_eq(waitpid(pids[w], &status, 0), pids[w]);
        ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    ctx = cpu_ctx(dir, &cap);
    sdpa__profile_file pf;
    ck_assert_int_eq(sdpa__profile_read(ctx, path, &pf), SDPA_OK);
    ck_assert_uint_eq(pf.bad_lines, 0);
    ck_assert_uint_eq(pf.count, WRITERS * RECORDS_PER_WRITER);
    int seen[WRITERS][RECORDS_PER_WRITER] = {{0}};
    for (size_t i = 0; i < pf.count; i++) {
        int d = pf.records[i].bucket.d - 1;
        int w = d / 1000, k = d % 1000;
        ck_assert(w >= 0 && w < WRITERS && k < RECORDS_PER_WRITER);
        ck_assert_int_eq(TGET(&pf.records[i].tile, SPLIT_KV), 1 + k);
        seen[w][k]++;
    }
    for (int w = 0; w < WRITERS; w++)
        for (int k = 0; k < RECORDS_PER_WRITER; k++) ck_assert_int_eq(seen[w][k], 1);
    sdpa__profile_file_free(&pf);
    ck_assert_int_eq(cap.warns, 0);
    sdpa_context_destroy(ctx);
    free(dir);
}
END_TEST

/* ---- lookup chain ------------------------------------------------------------------- */

/* ---- record format: names, old records, unknown names ----------------------- */

/* A record line exactly as libsdpa wrote it before tile parameters became an
 * enum (every core field written, -1 for SDPA_AUTO, in declaration order),
 * for ctx's device and the bucket of test_problem(). */
static void old_format_line(sdpa_context *ctx, const char *tile, char *out, size_t size)
{
    sdpa__profile_record r = make_record(ctx, 16, 16);
    char bucket[160];
    sdpa__bucket_string(&r.bucket, bucket, sizeof bucket);
    snprintf(out, size,
             "{\"format\":1,\"backend\":\"%s\",\"vendor\":\"%s\",\"device\":\"%s\","
             "\"compute_units\":%d,\"driver\":\"%s\",\"source_hash\":\"%s\",\"bucket\":\"%s\","
             "\"kind\":\"%s\",\"dtype\":\"f32\",\"d\":%d,\"dv\":%d,\"mask\":\"%s\",\"sq_log2\":%d,"
             "\"skv_log2\":%d,\"bh_log2\":%d,\"tile\":%s,\"best_ms\":1.5,\"default_ms\":3,"
             "\"rejected\":[],\"tuned_at\":\"2026-11-29T10:03:06Z\"}\n",
             r.dev.backend, r.dev.vendor, r.dev.device, r.dev.compute_units, r.dev.driver,
             r.dev.source_hash, bucket, r.bucket.kind, r.bucket.d, r.bucket.dv, r.bucket.mask,
             r.bucket.sq_log2, r.bucket.skv_log2, r.bucket.bh_log2, tile);
}

/* Users' profiles and data/profiles were written with every core field and
 * -1 for SDPA_AUTO: they still parse to the same values and plans use them. */
START_TEST(old_format_record_loads)
{
    char *dir = tmkdtemp("sdpa-test-tune");
    tlogcap cap = {0};
    sdpa_context *ctx = cpu_ctx(dir, &cap);
    char line[4096], path[4096];
    old_format_line(ctx, "{\"q_tile\":32,\"k_tile\":128,\"wg_size\":-1,\"vec_width\":-1,"
                         "\"stage_kv\":-1,\"split_kv\":2,\"unfused\":-1}", line, sizeof line);
    sdpa__profile_record r;
    const char *why = NULL;
    ck_assert_msg(sdpa__profile_record_parse(line, strlen(line) - 1, &r, &why), "%s", why);
    ck_assert_int_eq(TGET(&r.tile, Q_TILE), 32);
    ck_assert_int_eq(TGET(&r.tile, K_TILE), 128);
    ck_assert_int_eq(TGET(&r.tile, SPLIT_KV), 2);
    ck_assert_int_eq(TGET(&r.tile, WG_SIZE), SDPA_AUTO);
    ck_assert_int_eq(r.n_extra, 0);
    user_path(ctx, path, sizeof path);
    write_file(path, line, strlen(line));
    sdpa_plan_info info = plan_info(ctx);
    ck_assert_str_eq(info.source, "profile");
    ck_assert_ptr_nonnull(strstr(info.config, "q_tile=32"));
    ck_assert_ptr_nonnull(strstr(info.config, "k_tile=128"));
    ck_assert_int_eq(cap.warns, 0);

    /* the shipped files of the source tree: every line parses */
    const char *corpus = getenv("SDPA_CORPUS_DIR"); /* <source>/tests/conformance */
    ck_assert_ptr_nonnull(corpus);
    const char *shipped[] = {"opencl-pthread_skylake_avx512_intel_r_xeon_r_processor.jsonl",
                             "vulkan-llvmpipe_llvm_15.0.6_256_bits.jsonl"};
    for (size_t i = 0; i < sizeof shipped / sizeof shipped[0]; i++) {
        char sp[4096];
        snprintf(sp, sizeof sp, "%s/../../data/profiles/%s", corpus, shipped[i]);
        sdpa__profile_file pf;
        ck_assert_int_eq(sdpa__profile_read(ctx, sp, &pf), SDPA_OK);
        ck_assert_msg(pf.count >= 3 && pf.bad_lines == 0, "%s: %zu records, %zu bad lines", sp,
                      pf.count, pf.bad_lines);
        sdpa__profile_file_free(&pf);
    }
    sdpa_context_destroy(ctx);
    free(dir);
}
END_TEST

/* Tile members of names this library does not know (a newer library's
 * parameters) are kept: when another record of the file is stored (the line
 * stays as it was) and when the record itself is parsed and stored again
 * (written back into its tile). The known values are still used. */
START_TEST(unknown_tile_names_kept)
{
    char *dir = tmkdtemp("sdpa-test-tune");
    tlogcap cap = {0};
    sdpa_context *ctx = cpu_ctx(dir, &cap);
    char line[4096], path[4096];
    old_format_line(ctx, "{\"q_tile\":32,\"k_tile\":64,\"future_knob\":7,"
                         "\"vk.subgroup_rows\":[2,4]}", line, sizeof line);
    user_path(ctx, path, sizeof path);
    write_file(path, line, strlen(line));
    sdpa_plan_info info = plan_info(ctx);
    ck_assert_str_eq(info.source, "profile");
    ck_assert_ptr_nonnull(strstr(info.config, "q_tile=32"));

    /* another bucket stored: the line is kept as it was */
    sdpa__profile_record other = make_record(ctx, 64, 64);
    other.bucket.d = 128;
    ck_assert_int_eq(sdpa__profile_store(ctx, path, &other), SDPA_OK);
    sdpa__profile_file pf;
    ck_assert_int_eq(sdpa__profile_read(ctx, path, &pf), SDPA_OK);
    ck_assert_uint_eq(pf.count, 2);
    ck_assert_uint_eq(pf.bad_lines, 0);
    sdpa__profile_record mine = pf.records[0];
    sdpa__profile_file_free(&pf);
    ck_assert_int_eq(mine.n_extra, 2);

    /* the record itself rewritten (as sdpa_tune replaces a record) */
    mine.best_ms = 1.0;
    ck_assert_int_eq(sdpa__profile_store(ctx, path, &mine), SDPA_OK);
    char *data = NULL;
    size_t len = 0;
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    data = calloc(1, 1 << 16);
    len = fread(data, 1, (1 << 16) - 1, f);
    fclose(f);
    ck_assert_uint_gt(len, 0);
    ck_assert_msg(strstr(data, "\"future_knob\":7") != NULL, "%s", data);
    ck_assert_msg(strstr(data, "\"vk.subgroup_rows\":[2,4]") != NULL, "%s", data);
    ck_assert_msg(strstr(data, "\"best_ms\":1,") != NULL, "record not rewritten: %s", data);
    free(data);
    ck_assert_int_eq(sdpa__profile_read(ctx, path, &pf), SDPA_OK);
    ck_assert_uint_eq(pf.count, 2);
    ck_assert_int_eq(TGET(&pf.records[0].tile, Q_TILE), 32);
    sdpa__profile_file_free(&pf);
    sdpa_context_destroy(ctx);
    free(dir);
}
END_TEST

/* The store's lookup needs a device key, a bucket and folders, no context:
 * the first folder holding a record wins; a folder without one is passed. */
START_TEST(lookup_by_key_and_folders)
{
    char *a = tmkdtemp("sdpa-test-tune"), *b = tmkdtemp("sdpa-test-tune");
    tlogcap cap = {0};
    sdpa_context *ctx = cpu_ctx(a, &cap);
    sdpa__profile_record r = make_record(ctx, 48, 96);
    sdpa_context_destroy(ctx);
    char name[160], path[4096];
    sdpa__profile_file_name(&r.dev, name, sizeof name);
    snprintf(path, sizeof path, "%s/%s", b, name);
    ck_assert_int_eq(sdpa__profile_store(NULL, path, &r), SDPA_OK);
    const char *dirs[3] = {a, "", b};
    sdpa_tile_config t;
    sdpa__profile_origin found = {.dir = -1};
    ck_assert(sdpa__profile_lookup(NULL, &r.dev, &r.bucket, dirs, 3, &t, &found));
    ck_assert_int_eq(found.dir, 2);
    ck_assert(!found.family);
    ck_assert_int_eq(TGET(&t, Q_TILE), 48);
    sdpa__bucket other = r.bucket;
    other.d = 256;
    ck_assert(!sdpa__profile_lookup(NULL, &r.dev, &other, dirs, 3, &t, &found));
    ck_assert(!sdpa__profile_lookup(NULL, &r.dev, &r.bucket, dirs, 2, &t, &found));
    free(a);
    free(b);
}
END_TEST

/* A record whose values the backend's table refuses (cpu q_tile 20: not a
 * multiple of 16) is a bad line, skipped with one WARN, and not stored. */
START_TEST(record_out_of_backend_range)
{
    char *dir = tmkdtemp("sdpa-test-tune");
    tlogcap cap = {0};
    sdpa_context *ctx = cpu_ctx(dir, &cap);
    char line[4096], path[4096];
    old_format_line(ctx, "{\"q_tile\":20,\"k_tile\":64}", line, sizeof line);
    sdpa__profile_record r;
    const char *why = NULL;
    ck_assert(!sdpa__profile_record_parse(line, strlen(line) - 1, &r, &why));
    ck_assert_str_eq(why, "bad tile configuration");
    user_path(ctx, path, sizeof path);
    r = make_record(ctx, 20, 64);
    ck_assert_int_eq(sdpa__profile_store(ctx, path, &r), SDPA_ERR_INVALID_ARG);
    write_file(path, line, strlen(line));
    sdpa_plan_info info = plan_info(ctx);
    ck_assert_str_eq(info.source, "default");
    ck_assert_int_eq(cap.warns, 1);
    sdpa_context_destroy(ctx);
    free(dir);
}
END_TEST

START_TEST(lookup_chain)
{
    char *dir = tmkdtemp("sdpa-test-tune");
    char *shipped = tmkdtemp("sdpa-test-tune");
    setenv("SDPA_SHIPPED_PROFILE_DIR", shipped, 1);
    tlogcap cap = {0};
    sdpa_context *ctx = cpu_ctx(dir, &cap);

    /* Nothing anywhere: the backend's default. */
    sdpa_plan_info info = plan_info(ctx);
    ck_assert_str_eq(info.source, "default");

    /* Shipped only. */
    char name[160], spath[4096], upath[4096];
    sdpa__profile_record rs = make_record(ctx, 48, 96);
    sdpa__profile_file_name(&rs.dev, name, sizeof name);
    snprintf(spath, sizeof spath, "%s/%s", shipped, name);
    ck_assert_int_eq(sdpa__profile_store(ctx, spath, &rs), SDPA_OK);
    info = plan_info(ctx);
    ck_assert_str_eq(info.source, "shipped profile");
    ck_assert_ptr_nonnull(strstr(info.config, "q_tile=48"));

    /* User record wins over the shipped one. */
    user_path(ctx, upath, sizeof upath);
    sdpa__profile_record ru = make_record(ctx, 32, 128);
    ck_assert_int_eq(sdpa__profile_store(ctx, upath, &ru), SDPA_OK);
    info = plan_info(ctx);
    ck_assert_str_eq(info.source, "profile");
    ck_assert_ptr_nonnull(strstr(info.config, "q_tile=32"));
    ck_assert_ptr_nonnull(strstr(info.config, "k_tile=128"));

    /* A user record for another bucket or another device does not match. */
    ru.bucket.d = 64;
    sdpa__profile_record rd = make_record(ctx, 16, 16);
    snprintf(rd.dev.device, sizeof rd.dev.device, "some other device");
    unlink(upath);
    ck_assert_int_eq(sdpa__profile_store(ctx, upath, &ru), SDPA_OK);
    ck_assert_int_eq(sdpa__profile_store(ctx, upath, &rd), SDPA_OK);
    info = plan_info(ctx);
    ck_assert_str_eq(info.source, "shipped profile");

    /* A forced tile bypasses the profiles. */
    sdpa_tile_config tc;
    sdpa_tile_config_init(&tc);
    sdpa_tile_config_set(&tc, SDPA_TILE_Q_TILE, 64);
    sdpa_plan_options po;
    sdpa_plan_options_init(&po);
    po.tile = &tc;
    info = plan_info_with(ctx, &po, false);
    ck_assert_str_ne(info.source, "profile");
    ck_assert_str_ne(info.source, "shipped profile");

    /* Removing the shipped file: back to the default. */
    unlink(spath);
    info = plan_info(ctx);
    ck_assert_str_eq(info.source, "default");
    ck_assert_int_eq(cap.warns, 0);
    sdpa_context_destroy(ctx);
    setenv("SDPA_SHIPPED_PROFILE_DIR", NO_SHIPPED, 1);
    free(dir);
    free(shipped);
}
END_TEST

/* ---- the tuner ----------------------------------------------------------------------- */

typedef struct dry_list {
    int n;
    char desc[64][128];
} dry_list;

static void dry_progress(void *user, const sdpa_tune_progress *p)
{
    dry_list *l = user;
    if (l->n < 64) snprintf(l->desc[l->n++], sizeof l->desc[0], "%s", p->current);
}

START_TEST(tune_arguments_and_dry_run)
{
    char *dir = tmkdtemp("sdpa-test-tune");
    tlogcap cap = {0};
    sdpa_context *ctx = cpu_ctx(dir, &cap);
    host_problem h;
    host_problem_make(&h);
    sdpa_tune_options o;
    sdpa_tune_options_init(&o);
    ck_assert_double_eq(o.budget_s, 60.0);
    ck_assert_int_eq(o.repeats, 5);
    ck_assert_int_eq(o.write_profile, 1);
    sdpa_tune_result res = {.struct_size = sizeof res};
    ck_assert_int_eq(sdpa_tune(NULL, &h.desc, &o, &res), SDPA_ERR_NULL);
    ck_assert_int_eq(sdpa_tune(ctx, NULL, &o, &res), SDPA_ERR_NULL);
    ck_assert_int_eq(sdpa_tune(ctx, &h.desc, &o, NULL), SDPA_ERR_NULL);
    o.budget_s = 0;
    ck_assert_int_eq(sdpa_tune(ctx, &h.desc, &o, &res), SDPA_ERR_INVALID_ARG);
    o.budget_s = NAN;
    ck_assert_int_eq(sdpa_tune(ctx, &h.desc, &o, &res), SDPA_ERR_INVALID_ARG);
    sdpa_tune_options_init(&o);
    o.repeats = 0;
    ck_assert_int_eq(sdpa_tune(ctx, &h.desc, &o, &res), SDPA_ERR_INVALID_ARG);
    sdpa_tune_options_init(&o);
    o.struct_size = 8;
    ck_assert_int_eq(sdpa_tune(ctx, &h.desc, &o, &res), SDPA_ERR_INVALID_ARG);
    sdpa_tune_options_init(&o);
    sdpa_attention_desc bad = h.desc;
    bad.tensors.k.shape[3] = 7; /* D mismatch */
    ck_assert_int_eq(sdpa_tune(ctx, &bad, &o, &res), SDPA_ERR_SHAPE);

    dry_list l = {0};
    o.dry_run = 1;
    o.progress = dry_progress;
    o.progress_user = &l;
    ck_assert_int_eq(sdpa_tune(ctx, &h.desc, &o, &res), SDPA_OK);
    ck_assert_int_ge(res.candidates, 1);
    ck_assert_int_eq(l.n, res.candidates < 64 ? res.candidates : 64);
    ck_assert_int_eq(res.measured, 0);
    ck_assert_str_eq(res.bucket, "forward/f32/d32/dv32/causal/sq7/skv8/bh2");
    ck_assert_str_eq(l.desc[0], res.default_desc);
    ck_assert_int_ne(access(sdpa_context_profile_path(ctx), F_OK), 0); /* nothing written */
    host_problem_free(&h);
    sdpa_context_destroy(ctx);
    free(dir);
}
END_TEST

START_TEST(tune_rejects_wrong_candidate)
{
    char *dir = tmkdtemp("sdpa-test-tune");
    tlogcap cap = {0};
    sdpa_context *ctx = cpu_ctx(dir, &cap);
    host_problem h;
    host_problem_make(&h);
    sdpa_tune_options o;
    sdpa_tune_options_init(&o);
    dry_list l = {0};
    o.dry_run = 1;
    o.progress = dry_progress;
    o.progress_user = &l;
    sdpa_tune_result res = {.struct_size = sizeof res};
    ck_assert_int_eq(sdpa_tune(ctx, &h.desc, &o, &res), SDPA_OK);
    const int n = res.candidates;

    /* Corrupt candidate 1 when there is one, else the default itself. */
    const int victim = n >= 2 ? 1 : 0;
    char num[16];
    snprintf(num, sizeof num, "%d", victim);
    setenv("SDPA_TUNE_FAULT_CANDIDATE", num, 1);
    sdpa_tune_options_init(&o);
    o.budget_s = 2.0;
    o.repeats = 3;
    sdpa_status st = sdpa_tune(ctx, &h.desc, &o, &res);
    unsetenv("SDPA_TUNE_FAULT_CANDIDATE");
    ck_assert_int_ge(res.rejected, 1);
    ck_assert_int_ge(cap.warns, 1);
    ck_assert_ptr_nonnull(strstr(cap.last, "wrong results"));
    if (victim == 0) {
        /* Only candidate, and it is wrong: nothing to record. */
        ck_assert_int_eq(st, SDPA_ERR_DEVICE);
        ck_assert_int_ne(access(sdpa_context_profile_path(ctx), F_OK), 0);
    } else {
        ck_assert_int_eq(st, SDPA_OK);
        ck_assert_str_ne(res.best_desc, l.desc[1]);
        sdpa__profile_file pf;
        ck_assert_int_eq(sdpa__profile_read(ctx, sdpa_context_profile_path(ctx), &pf), SDPA_OK);
        ck_assert_uint_eq(pf.count, 1);
        ck_assert_int_ge(pf.records[0].n_rejected, 1);
        ck_assert_ptr_nonnull(strstr(pf.records[0].rejected[0].reason, "wrong results"));
        sdpa__profile_file_free(&pf);
    }
    host_problem_free(&h);
    sdpa_context_destroy(ctx);
    free(dir);
}
END_TEST

typedef struct prog_count { int calls, last_done; double last_elapsed; } prog_count;
static void count_progress(void *user, const sdpa_tune_progress *p)
{
    prog_count *c = user;
    c->calls++;
    ck_assert_int_ge(p->done, c->last_done);
    ck_assert_int_le(p->done, p->total);
    c->last_done = p->done;
    c->last_elapsed = p->elapsed_s;
}

START_TEST(tune_tiny_budget_yields_profile_plan)
{
    char *dir = tmkdtemp("sdpa-test-tune");
    tlogcap cap = {0};
    sdpa_context *ctx = cpu_ctx(dir, &cap);
    host_problem h;
    host_problem_make(&h);
    sdpa_tune_options o;
    sdpa_tune_options_init(&o);
    o.budget_s = 2.0;
    prog_count pc = {0};
    o.progress = count_progress;
    o.progress_user = &pc;
    sdpa_tune_result res = {.struct_size = sizeof res};
    double t0 = sdpa__now();
    ck_assert_int_eq(sdpa_tune(ctx, &h.desc, &o, &res), SDPA_OK);
    double took = sdpa__now() - t0;
    ck_assert_msg(took < o.budget_s + 1.0, "tuning took %.2f s for a %.1f s budget", took,
                  o.budget_s);
    ck_assert_int_ge(res.measured, 1);
    ck_assert_int_eq(res.rejected, 0);
    ck_assert_int_ge(pc.calls, 1);
    ck_assert(isfinite(res.best_ms) && res.best_ms > 0);
    ck_assert(isfinite(res.default_ms) && res.default_ms > 0);
    ck_assert(res.best_ms <= res.default_ms);
    ck_assert_str_eq(res.bucket, "forward/f32/d32/dv32/causal/sq7/skv8/bh2");
    /* The profile exists and the next plan uses it. */
    ck_assert_int_eq(access(sdpa_context_profile_path(ctx), R_OK), 0);
    sdpa_plan_info info = plan_info(ctx);
    ck_assert_str_eq(info.source, "profile");
    ck_assert_int_eq(cap.warns, 0);
    host_problem_free(&h);
    sdpa_context_destroy(ctx);
    free(dir);
}
END_TEST

START_TEST(tune_backward_bucket)
{
    char *dir = tmkdtemp("sdpa-test-tune");
    tlogcap cap = {0};
    sdpa_context *ctx = cpu_ctx(dir, &cap);
    host_problem h;
    host_problem_make(&h);
    const sdpa__problem p = test_problem();
    h.desc.tensors.lse = sdpa_tensor_host(h.lse, SDPA_DTYPE_F32, p.B, p.Hq, p.Sq, 1);
    sdpa_tune_options o;
    sdpa_tune_options_init(&o);
    o.budget_s = 1.5;
    o.repeats = 3;
    o.plan_flags = SDPA_PLAN_BACKWARD;
    sdpa_tune_result res = {.struct_size = sizeof res};
    ck_assert_int_eq(sdpa_tune(ctx, &h.desc, &o, &res), SDPA_OK);
    ck_assert_str_eq(res.bucket, "backward/f32/d32/dv32/causal/sq7/skv8/bh2");
    ck_assert_int_eq(res.rejected, 0);
    sdpa_plan_options po;
    sdpa_plan_options_init(&po);
    po.flags = SDPA_PLAN_BACKWARD;
    sdpa_plan_info info = plan_info_with(ctx, &po, false);
    ck_assert_str_eq(info.source, "profile");
    /* The forward bucket has no record. */
    info = plan_info(ctx);
    ck_assert_str_eq(info.source, "default");
    host_problem_free(&h);
    sdpa_context_destroy(ctx);
    free(dir);
}
END_TEST


START_TEST(tune_many_candidates_fault)
{
    char *dir = tmkdtemp("sdpa-test-tune");
    tlogcap cap = {0};
    sdpa_context *owner;
    fake_nq = 4;
    fake_nk = 4;
    sdpa_context *ctx = fake_ctx(dir, &cap, &owner);
    host_problem h;
    host_problem_make(&h);
    sdpa_tune_options o;
    sdpa_tune_options_init(&o);
    dry_list l = {0};
    o.dry_run = 1;
    o.progress = dry_progress;
    o.progress_user = &l;
    sdpa_tune_result res = {.struct_size = sizeof res};
    ck_assert_int_eq(sdpa_tune(ctx, &h.desc, &o, &res), SDPA_OK);
    /* default (64,64) + 16 candidates, one of them equal to the default */
    ck_assert_int_eq(res.candidates, 16);
    ck_assert_str_eq(l.desc[0], "q_tile=64 k_tile=64");
    ck_assert_str_eq(l.desc[1], "q_tile=16 k_tile=32");

    setenv("SDPA_TUNE_FAULT_CANDIDATE", "3", 1);
    sdpa_tune_options_init(&o);
    o.budget_s = 3.0;
    o.repeats = 3;
    double t0 = sdpa__now();
    ck_assert_int_eq(sdpa_tune(ctx, &h.desc, &o, &res), SDPA_OK);
    double took = sdpa__now() - t0;
    unsetenv("SDPA_TUNE_FAULT_CANDIDATE");
    ck_assert_msg(took < o.budget_s + 1.0, "took %.2f s", took);
    ck_assert_int_eq(res.rejected, 1);
    ck_assert_str_ne(res.best_desc, l.desc[3]);
    ck_assert_int_ge(res.measured, 2);
    ck_assert(res.best_ms <= res.default_ms);
    ck_assert_ptr_nonnull(strstr(cap.last, "wrong results"));
    sdpa__profile_file pf;
    ck_assert_int_eq(sdpa__profile_read(ctx, sdpa_context_profile_path(ctx), &pf), SDPA_OK);
    ck_assert_uint_eq(pf.count, 1);
    ck_assert_int_eq(pf.records[0].n_rejected, 1);
    ck_assert_int_eq(TGET(&pf.records[0].rejected[0].tile, Q_TILE), 16);
    ck_assert_int_eq(TGET(&pf.records[0].rejected[0].tile, K_TILE), 128);
    ck_assert_ptr_nonnull(strstr(pf.records[0].rejected[0].reason, "wrong results"));
    ck_assert_str_eq(pf.records[0].dev.backend, "cpu");
    sdpa__profile_file_free(&pf);
    /* The winner is what the next plan uses. */
    sdpa_plan_info info = plan_info(ctx);
    ck_assert_str_eq(info.source, "profile");
    char want[64];
    snprintf(want, sizeof want, "q_tile=%d k_tile=%d", TGET(&res.best, Q_TILE),
             TGET(&res.best, K_TILE));
    ck_assert_msg(strstr(info.config, want), "%s vs %s", info.config, want);
    host_problem_free(&h);
    sdpa_context_destroy(ctx);
    sdpa_context_destroy(owner);
    free(dir);
}
END_TEST

START_TEST(tune_sampled_space_within_budget)
{
    char *dir = tmkdtemp("sdpa-test-tune");
    tlogcap cap = {0};
    sdpa_context *owner;
    fake_nq = 6;
    fake_nk = 6; /* 36 candidates: sampled, then refined */
    sdpa_context *ctx = fake_ctx(dir, &cap, &owner);
    host_problem h;
    host_problem_make(&h);
    sdpa_tune_options o;
    sdpa_tune_options_init(&o);
    o.budget_s = 1.0;
    o.repeats = 3;
    o.seed = 42;
    prog_count pc = {0};
    o.progress = count_progress;
    o.progress_user = &pc;
    sdpa_tune_result res = {.struct_size = sizeof res};
    double t0 = sdpa__now();
    ck_assert_int_eq(sdpa_tune(ctx, &h.desc, &o, &res), SDPA_OK);
    double took = sdpa__now() - t0;
    ck_assert_msg(took < o.budget_s + 1.0, "took %.2f s", took);
    ck_assert_int_eq(res.candidates, 36);
    ck_assert_int_eq(res.rejected, 0);
    ck_assert_int_ge(res.measured, 2);
    ck_assert_int_eq(pc.calls, res.measured);
    ck_assert(res.measured == 36 || res.budget_exhausted);
    ck_assert(res.best_ms <= res.default_ms);
    host_problem_free(&h);
    sdpa_context_destroy(ctx);
    sdpa_context_destroy(owner);
    free(dir);
}
END_TEST

START_TEST(search_order)
{
    sdpa_tile_config c[40];
    for (int i = 0; i < 40; i++) {
        sdpa_tile_config_init(&c[i]);
        sdpa_tile_config_set(&c[i], SDPA_TILE_Q_TILE, 16 * (1 + i / 8));
        sdpa_tile_config_set(&c[i], SDPA_TILE_K_TILE, 16 * (1 + i % 8));
    }
    double ms[40];
    for (int i = 0; i < 40; i++) ms[i] = INFINITY;
    /* Small space: in order. */
    sdpa__search s;
    ck_assert(sdpa__search_init(&s, c, 10, 1));
    for (int i = 0; i < 10; i++) ck_assert_int_eq(sdpa__search_next(&s, ms, -1, 0.0), i);
    ck_assert_int_eq(sdpa__search_next(&s, ms, -1, 0.0), -1);
    sdpa__search_free(&s);
    /* Large space: default first, every candidate exactly once, and after
     * the sampling phase the neighbours of the best come next. */
    ck_assert(sdpa__search_init(&s, c, 40, 7));
    int seen[40] = {0};
    ck_assert_int_eq(sdpa__search_next(&s, ms, -1, 0.0), 0);
    seen[0] = 1;
    int best = 0;
    for (int k = 1; k < 40; k++) {
        double frac = k < 5 ? 0.1 : 0.7;
        int i = sdpa__search_next(&s, ms, best, frac);
        ck_assert(i >= 0 && i < 40);
        ck_assert_int_eq(seen[i], 0);
        seen[i] = 1;
        if (k == 5) {
            /* best is 0 = (16,16): its unvisited neighbours share q or k */
            ck_assert(TGET(&c[i], Q_TILE) == TGET(&c[0], Q_TILE) ||
                      TGET(&c[i], K_TILE) == TGET(&c[0], K_TILE));
        }
    }
    ck_assert_int_eq(sdpa__search_next(&s, ms, best, 0.9), -1);
    sdpa__search_free(&s);
}
END_TEST


/* ---- the sdpa-tune tool (found through $SDPA_TOOLS_DIR) ------------------------------ */

static char *read_all(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return strdup("");
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    ck_assert_ptr_nonnull(b);
    size_t got = fread(b, 1, (size_t)n, f);
    b[got] = '\0';
    fclose(f);
    return b;
}

/* Runs sdpa-tune with args; stdout in *out (malloc'd). Returns the exit
 * status, or -1 when the tool is not built. */
static int run_tool(const char *dir, const char *args, char **out)
{
    const char *tools = getenv("SDPA_TOOLS_DIR");
    char exe[4096], cmd[16384], outp[4200];
    snprintf(exe, sizeof exe, "%s/sdpa-tune", tools && *tools ? tools : "tools");
    if (access(exe, X_OK) != 0) return -1;
    snprintf(outp, sizeof outp, "%s/stdout.txt", dir);
    snprintf(cmd, sizeof cmd, "'%s' %s >'%s' 2>'%s/stderr.txt'", exe, args, outp, dir);
    int st = system(cmd);
    *out = read_all(outp);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

START_TEST(tool_runs_and_writes_profile)
{
    char *dir = tmkdtemp("sdpa-test-tune");
    char args[4400], *out = NULL;
    snprintf(args, sizeof args, "--backend cpu --preset vit --budget 2 --json --profile-dir '%s/p'",
             dir);
    double t0 = sdpa__now();
    int rc = run_tool(dir, args, &out);
    if (rc < 0) {
        fprintf(stderr, "tool_runs_and_writes_profile: sdpa-tune not built; skipped\n");
        free(dir);
        return;
    }
    ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
    ck_assert_msg(sdpa__now() - t0 < 2.0 + 3.0, "the tool overran its budget");
    cJSON *j = cJSON_Parse(out);
    ck_assert_msg(j != NULL, "not JSON: %s", out);
    ck_assert_str_eq(cJSON_GetObjectItem(j, "backend")->valuestring, "cpu");
    const char *profile = cJSON_GetObjectItem(j, "profile")->valuestring;
    ck_assert_int_eq(access(profile, R_OK), 0);
    cJSON *b = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "buckets"), 0);
    ck_assert_ptr_nonnull(b);
    ck_assert_str_eq(cJSON_GetObjectItem(b, "bucket")->valuestring,
                     "forward/f32/d64/dv64/full/sq8/skv8/bh4");
    ck_assert_str_eq(cJSON_GetObjectItem(b, "status")->valuestring, "SDPA_OK");
    ck_assert(cJSON_GetObjectItem(b, "tuned_ms")->valuedouble > 0);
    /* The profile the tool wrote is one the library reads. */
    sdpa__profile_file pf;
    ck_assert_int_eq(sdpa__profile_read(NULL, profile, &pf), SDPA_OK);
    /* one record per row of the preset (tools/common/presets.c: ViT-B and ViT-L) */
    ck_assert_uint_eq(pf.count, 2);
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(j, "buckets")), 2);
    ck_assert_uint_eq(pf.bad_lines, 0);
    sdpa__profile_file_free(&pf);
    cJSON_Delete(j);
    free(out);

    /* Text mode, not a terminal: plain progress lines, then the table. */
    snprintf(args, sizeof args, "--backend cpu --shape 1,2,1,33,70,32 --causal --budget 1 "
             "--profile-dir '%s/p'", dir);
    ck_assert_int_eq(run_tool(dir, args, &out), 0);
    ck_assert_ptr_null(strchr(out, '\r'));
    ck_assert_ptr_nonnull(strstr(out, "default ms"));
    ck_assert_ptr_nonnull(strstr(out, "forward/f32/d32/dv32/causal/sq6/skv7/bh1"));
    free(out);

    /* Dry run writes nothing; usage errors exit 2; --help exits 0. */
    snprintf(args, sizeof args, "--backend cpu --preset mobile --dry-run --profile-dir '%s/q'", dir);
    ck_assert_int_eq(run_tool(dir, args, &out), 0);
    ck_assert_ptr_nonnull(strstr(out, "nothing written"));
    free(out);
    char q[4200];
    snprintf(q, sizeof q, "%s/q", dir);
    ck_assert_int_ne(access(q, F_OK), 0);
    const char *bad[] = {"--bogus", "--budget -1", "--shape 1,2,3", "--shape 1,3,2,8,8,8",
                         "--preset nope", "--dtype f64", "--repeats 0", "extra"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_msg(run_tool(dir, bad[i], &out) == 2, "'%s' should be a usage error", bad[i]);
        free(out);
    }
    ck_assert_int_eq(run_tool(dir, "--help", &out), 0);
    ck_assert_ptr_nonnull(strstr(out, "Exit status"));
    free(out);
    free(dir);
}
END_TEST


START_TEST(refused_profile_config_falls_back)
{
    char *dir = tmkdtemp("sdpa-test-tune");
    tlogcap cap = {0};
    sdpa_context *owner;
    sdpa_context *ctx = fake_ctx(dir, &cap, &owner);
    char path[4096];
    user_path(ctx, path, sizeof path);
    sdpa__profile_record r = make_record(ctx, 112, 64);
    ck_assert_int_eq(sdpa__profile_store(ctx, path, &r), SDPA_OK);
    sdpa_plan_info info = plan_info(ctx);
    ck_assert_str_eq(info.source, "default");
    ck_assert_int_eq(cap.warns, 1);
    ck_assert_ptr_nonnull(strstr(cap.last, "configuration failed"));
    ck_assert_ptr_nonnull(strstr(cap.last, "q_tile 112"));
    /* An acceptable record is used. */
    sdpa_tile_config_set(&r.tile, SDPA_TILE_Q_TILE, 32);
    ck_assert_int_eq(sdpa__profile_store(ctx, path, &r), SDPA_OK);
    info = plan_info(ctx);
    ck_assert_str_eq(info.source, "profile");
    ck_assert_int_eq(cap.warns, 1);
    sdpa_context_destroy(ctx);
    sdpa_context_destroy(owner);
    free(dir);
}
END_TEST


START_TEST(tune_unwritable_profile)
{
    tlogcap cap = {0};
    sdpa_context *ctx = cpu_ctx("/proc/sdpa-no-such-dir/profiles", &cap);
    host_problem h;
    host_problem_make(&h);
    sdpa_tune_options o;
    sdpa_tune_options_init(&o);
    o.budget_s = 1.0;
    o.repeats = 2;
    sdpa_tune_result res = {.struct_size = sizeof res};
    ck_assert_int_eq(sdpa_tune(ctx, &h.desc, &o, &res), SDPA_ERR_IO);
    ck_assert(isfinite(res.best_ms)); /* the measurement is still reported */
    sdpa_error_info e;
    sdpa_context_last_error(ctx, &e);
    ck_assert_ptr_nonnull(strstr(e.message, "/proc/sdpa-no-such-dir"));
    o.write_profile = 0; /* nothing to write: fine */
    ck_assert_int_eq(sdpa_tune(ctx, &h.desc, &o, &res), SDPA_OK);
    /* Plans still build (the lookup finds nothing). */
    sdpa_plan_info info = plan_info(ctx);
    ck_assert_str_eq(info.source, "default");
    host_problem_free(&h);
    sdpa_context_destroy(ctx);
}
END_TEST

/* ---- profile files as untrusted input --------------------------------------- */

static void assert_message_has(sdpa_context *ctx, const char *needle)
{
    sdpa_error_info e;
    sdpa_context_last_error(ctx, &e);
    ck_assert_msg(e.message && strstr(e.message, needle), "message '%s' lacks '%s'",
                  e.message ? e.message : "", needle);
}

/* A FIFO at the profile path (or its lock) used to block the reader forever
 * in open(); now it is refused at once with a message. The case timeout
 * (20 s) fails the old code. */
START_TEST(fifo_profile_refused)
{
    char *dir = tmkdtemp("sdpa-test-tune");
    tlogcap cap = {0};
    sdpa_context *ctx = cpu_ctx(dir, &cap);
    char path[4096], lock[4200];
    user_path(ctx, path, sizeof path);
    ck_assert_int_eq(mkfifo(path, 0644), 0);
    sdpa__profile_file pf;
    ck_assert_int_eq(sdpa__profile_read(ctx, path, &pf), SDPA_ERR_IO);
    assert_message_has(ctx, "FIFO");
    ck_assert_str_eq(plan_info(ctx).source, "default");
    sdpa__profile_record r = make_record(ctx, 32, 64);
    ck_assert_int_eq(sdpa__profile_store(ctx, path, &r), SDPA_ERR_IO);
    assert_message_has(ctx, "FIFO");
    unlink(path);
    snprintf(lock, sizeof lock, "%s.lock", path);
    unlink(lock);
    ck_assert_int_eq(mkfifo(lock, 0644), 0);
    ck_assert_int_eq(sdpa__profile_store(ctx, path, &r), SDPA_ERR_IO);
    assert_message_has(ctx, "FIFO");
    unlink(lock);
    ck_assert_int_eq(sdpa__profile_store(ctx, path, &r), SDPA_OK);
    sdpa_context_destroy(ctx);
    free(dir);
}
END_TEST

static void age_file(const char *path)
{
    struct timespec t[2];
    clock_gettime(CLOCK_REALTIME, &t[0]);
    t[0].tv_sec -= 60;
    t[1] = t[0];
    ck_assert_int_eq(utimensat(AT_FDCWD, path, t, 0), 0);
}

/* Plan creation parses a profile once, not once per plan (a 13 MB profile
 * made every sdpa_plan_create take 210 ms); a changed file is read again. */
START_TEST(profile_parsed_once)
{
    char *dir = tmkdtemp("sdpa-test-tune");
    tlogcap cap = {0};
    sdpa_context *ctx = cpu_ctx(dir, &cap);
    char path[4096];
    user_path(ctx, path, sizeof path);
    sdpa__profile_record r = make_record(ctx, 32, 64);
    ck_assert_int_eq(sdpa__profile_store(ctx, path, &r), SDPA_OK);
    age_file(path); /* older than the racy-timestamp window */
    unsigned long before = sdpa__profile_parse_count();
    char first[256];
    snprintf(first, sizeof first, "%s", plan_info(ctx).config);
    for (int i = 0; i < 40; i++) ck_assert_str_eq(plan_info(ctx).source, "profile");
    ck_assert_uint_eq(sdpa__profile_parse_count() - before, 1);
    /* Another context of the process shares the parse. */
    sdpa_context *ctx2 = cpu_ctx(dir, &cap);
    ck_assert_str_eq(plan_info(ctx2).source, "profile");
    ck_assert_uint_eq(sdpa__profile_parse_count() - before, 1);
    /* Rewritten (another tile): read again, the new record used. */
    sdpa__profile_record r2 = make_record(ctx, 16, 32);
    ck_assert_int_eq(sdpa__profile_store(ctx, path, &r2), SDPA_OK);
    age_file(path);
    sdpa_plan_info info = plan_info(ctx);
    ck_assert_str_eq(info.source, "profile");
    ck_assert_str_ne(info.config, first);
    ck_assert_uint_eq(sdpa__profile_parse_count() - before, 2);
    /* Rewritten in place by someone else, same size: mtime tells. */
    FILE *f = fopen(path, "r+");
    ck_assert_ptr_nonnull(f);
    fputc(' ', f); /* a leading blank: same records, same size, new mtime */
    fclose(f);
    plan_info(ctx);
    ck_assert_uint_eq(sdpa__profile_parse_count() - before, 3);
    sdpa_context_destroy(ctx2);
    sdpa_context_destroy(ctx);
    free(dir);
}
END_TEST

/* A symlinked profile is written through to its target (the link stays); a
 * dangling link is refused with a message. */
START_TEST(symlinked_profile_written_through)
{
    char *dir = tmkdtemp("sdpa-test-tune");
    tlogcap cap = {0};
    sdpa_context *ctx = cpu_ctx(dir, &cap);
    char path[4096], target[4200];
    user_path(ctx, path, sizeof path);
    snprintf(target, sizeof target, "%s/elsewhere.jsonl", dir);
    write_file(target, "", 0);
    ck_assert_int_eq(symlink(target, path), 0);
    sdpa__profile_record r = make_record(ctx, 32, 64);
    ck_assert_int_eq(sdpa__profile_store(ctx, path, &r), SDPA_OK);
    struct stat ls;
    ck_assert_int_eq(lstat(path, &ls), 0);
    ck_assert(S_ISLNK(ls.st_mode));
    sdpa__profile_file pf;
    ck_assert_int_eq(sdpa__profile_read(ctx, target, &pf), SDPA_OK);
    ck_assert_uint_eq(pf.count, 1);
    sdpa__profile_file_free(&pf);
    ck_assert_str_eq(plan_info(ctx).source, "profile");
    unlink(target); /* now dangling */
    ck_assert_int_eq(sdpa__profile_store(ctx, path, &r), SDPA_ERR_IO);
    assert_message_has(ctx, "symlink");
    ck_assert_int_eq(lstat(path, &ls), 0);
    ck_assert(S_ISLNK(ls.st_mode));
    unlink(path);
    sdpa_context_destroy(ctx);
    free(dir);
}
END_TEST

/* A writer killed between creating its temp file and renaming it left
 * "<profile>.tmp.<pid>" behind forever; the next write removes those of dead
 * processes and keeps those of live ones. */
START_TEST(stale_temp_files_removed)
{
    char *dir = tmkdtemp("sdpa-test-tune");
    tlogcap cap = {0};
    sdpa_context *ctx = cpu_ctx(dir, &cap);
    char path[4096], dead[4200], alive[4200];
    user_path(ctx, path, sizeof path);
    sdpa__profile_record r = make_record(ctx, 32, 64);
    ck_assert_int_eq(sdpa__profile_store(ctx, path, &r), SDPA_OK);
    pid_t child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) _exit(0);
    ck_assert_int_eq(waitpid(child, NULL, 0), child);
    snprintf(dead, sizeof dead, "%s.tmp.%ld", path, (long)child);
    snprintf(alive, sizeof alive, "%s.tmp.%ld", path, (long)getppid());
    write_file(dead, "{\"torn", 6);
    write_file(alive, "{\"busy", 6);
    ck_assert_int_eq(sdpa__profile_store(ctx, path, &r), SDPA_OK);
    ck_assert_int_ne(access(dead, F_OK), 0);
    ck_assert_int_eq(access(alive, F_OK), 0);
    unlink(alive);
    sdpa_context_destroy(ctx);
    free(dir);
}
END_TEST

/* sdpa_context_profile_writable refuses an unwritable profile folder at once
 * (sdpa-tune calls it before spending its budget). */
START_TEST(profile_writable_check)
{
    char *dir = tmkdtemp("sdpa-test-tune");
    tlogcap cap = {0};
    sdpa_context *ctx = cpu_ctx("/proc/sdpa-no-such-dir/profiles", &cap);
    ck_assert_int_eq(sdpa_context_profile_writable(ctx), SDPA_ERR_IO);
    assert_message_has(ctx, "/proc/sdpa-no-such-dir/profiles");
    sdpa_context_destroy(ctx);
    char sub[4200];
    snprintf(sub, sizeof sub, "%s/new/profiles", dir);
    ctx = cpu_ctx(sub, &cap);
    ck_assert_int_eq(sdpa_context_profile_writable(ctx), SDPA_OK);
    ck_assert_int_eq(access(sub, W_OK), 0); /* created */
    sdpa_context_destroy(ctx);

    char args[4400], *out = NULL;
    double t0 = sdpa__now();
    int rc = run_tool(dir, "--backend cpu --preset vit --budget 20 "
                           "--profile-dir /proc/sdpa-no-such-dir/profiles", &out);
    if (rc >= 0) {
        ck_assert_msg(rc == 1, "exit %d: %s", rc, out);
        ck_assert_msg(sdpa__now() - t0 < 5.0, "sdpa-tune spent its budget before the check");
        free(out);
        snprintf(args, sizeof args, "%s/stderr.txt", dir);
        out = read_all(args);
        ck_assert_ptr_nonnull(out);
        ck_assert_ptr_nonnull(strstr(out, "not writable"));
        free(out);
    }
    free(dir);
}
END_TEST

/* options.verify_exhaustive (issue 17's tuning target): the budgeted search
 * leaves candidates out, the sweep measures every one of them, and the tuned
 * winner, the sweep's best and the default are timed again side by side;
 * nothing is written with write_profile = 0. Without the option, no sweep. */
START_TEST(tune_verify_exhaustive)
{
    char *dir = tmkdtemp("sdpa-test-tune");
    tlogcap cap = {0};
    sdpa_context *owner;
    fake_nq = 6;
    fake_nk = 6; /* 36 candidates: the budget below measures only some */
    sdpa_context *ctx = fake_ctx(dir, &cap, &owner);
    host_problem h;
    host_problem_make(&h);
    sdpa_tune_options o;
    sdpa_tune_options_init(&o);
    o.budget_s = 0.001; /* the default, and maybe one more */
    o.repeats = 2;
    o.write_profile = 0;
    prog_count pc = {0};
    o.progress = count_progress;
    o.progress_user = &pc;
    sdpa_tune_result res = {.struct_size = sizeof res};
    ck_assert_int_eq(sdpa_tune(ctx, &h.desc, &o, &res), SDPA_OK);
    ck_assert_int_eq(res.verified, 0);
    ck_assert_int_lt(res.measured, 36); /* the budget cut the search */
    int partial = res.measured;

    o.verify_exhaustive = 1;
    pc.calls = 0;
    memset(&res, 0, sizeof res);
    res.struct_size = sizeof res;
    ck_assert_int_eq(sdpa_tune(ctx, &h.desc, &o, &res), SDPA_OK);
    ck_assert_int_eq(res.verified, 1);
    ck_assert_int_eq(res.candidates, 36);
    ck_assert_int_eq(res.measured + res.rejected, 36); /* every candidate, once */
    ck_assert_int_eq(res.rejected, 0);
    ck_assert_int_eq(pc.calls, 36);
    ck_assert_int_gt(36, partial);
    ck_assert(isfinite(res.verify_tuned_ms) && res.verify_tuned_ms > 0);
    ck_assert(isfinite(res.verify_sweep_ms) && res.verify_sweep_ms > 0);
    ck_assert(isfinite(res.verify_default_ms) && res.verify_default_ms > 0);
    ck_assert(res.verify_noise >= 0 && isfinite(res.verify_noise));
    ck_assert(res.sweep_desc[0] != '\0');
    /* the sweep's best is one of the candidates (fake_candidates' grid) */
    int q = TGET(&res.sweep_best, Q_TILE), k = TGET(&res.sweep_best, K_TILE);
    bool in_grid = (q == 16 || q == 32 || q == 64 || q == 128 || q == 256 || q == 48) &&
                   (k == 32 || k == 64 || k == 128 || k == 256 || k == 16 || k == 96);
    ck_assert_msg(in_grid || sdpa__tile_equal(&res.sweep_best, &res.fallback),
                  "sweep best q_tile %d k_tile %d", q, k);
    char path[4096];
    user_path(ctx, path, sizeof path);
    ck_assert_int_ne(access(path, F_OK), 0); /* write_profile = 0 */
    ck_assert_int_eq(cap.warns, 0);
    host_problem_free(&h);
    sdpa_context_destroy(ctx);
    sdpa_context_destroy(owner);

    /* the tool: a verdict per bucket; exit 1 exactly when one is missed */
    char args[4400], *out = NULL;
    snprintf(args, sizeof args, "--backend cpu --shape 1,2,1,33,70,32 --budget 1 --json "
             "--verify-exhaustive --profile-dir '%s/p'", dir);
    int rc = run_tool(dir, args, &out);
    if (rc >= 0) {
        cJSON *j = cJSON_Parse(out);
        ck_assert_msg(j != NULL, "not JSON (exit %d): %s", rc, out);
        ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(j, "verify_exhaustive")));
        cJSON *b = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "buckets"), 0);
        cJSON *v = cJSON_GetObjectItem(b, "verify");
        ck_assert_ptr_nonnull(v);
        ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(v, "verified")));
        const char *target = cJSON_GetObjectItem(v, "target")->valuestring;
        ck_assert_msg(strcmp(target, "met") == 0 || strcmp(target, "within noise") == 0 ||
                      strcmp(target, "missed") == 0, "target %s", target);
        ck_assert_int_eq(rc, strcmp(target, "missed") == 0 ? 1 : 0);
        ck_assert(cJSON_GetObjectItem(v, "sweep_best_ms")->valuedouble > 0);
        ck_assert(cJSON_IsString(cJSON_GetObjectItem(v, "sweep_best")));
        snprintf(path, sizeof path, "%s", cJSON_GetObjectItem(j, "profile")->valuestring);
        ck_assert_int_ne(access(path, F_OK), 0); /* nothing written */
        cJSON_Delete(j);
    } else {
        fprintf(stderr, "tune_verify_exhaustive: sdpa-tune not built; tool part skipped\n");
    }
    free(out);
    free(dir);
}
END_TEST

/* ---- profiles that travel (issue 17) ----------------------------------------------
 * A record made on one device is used on another device of the same
 * architecture family (src/core/device_table.h) when that device has no
 * record of its own; exact records always win; the family field of a record
 * is checked like every other field. */

#define XEON "pthread-skylake-avx512-Intel(R) Xeon(R) Processor"
#define EPYC4 "pthread-znver4-AMD EPYC 9654 96-Core Processor"
#define EPYC3 "pthread-znver3-AMD EPYC 7763 64-Core Processor"
#define POCL_DRIVER "3.1+debian (Portable Computing Language)"

/* Every log line of a context, INFO and up. */
typedef struct linecap {
    char text[16384];
    int warns;
} linecap;

static void line_capture(void *user, sdpa_log_level level, const char *msg)
{
    linecap *lc = user;
    size_t n = strlen(lc->text);
    snprintf(lc->text + n, sizeof lc->text - n, "%s\n", msg);
    lc->warns += level == SDPA_LOG_WARN;
}

static sdpa_context *info_ctx(const char *profile_dir, linecap *lc)
{
    return cpu_ctx_logging(profile_dir, SDPA_LOG_INFO, line_capture, lc);
}

/* An OpenCL record of PoCL on the named CPU (family derived as the tuner
 * does), bucket of test_problem(). */
static sdpa__profile_record pocl_record(const char *vendor, const char *device, int cu,
                                        int q_tile)
{
    sdpa__profile_record r;
    memset(&r, 0, sizeof r);
    r.format = SDPA__PROFILE_FORMAT;
    snprintf(r.dev.backend, sizeof r.dev.backend, "opencl");
    snprintf(r.dev.vendor, sizeof r.dev.vendor, "%s", vendor);
    snprintf(r.dev.device, sizeof r.dev.device, "%s", device);
    r.dev.compute_units = cu;
    snprintf(r.dev.driver, sizeof r.dev.driver, POCL_DRIVER);
    snprintf(r.dev.source_hash, sizeof r.dev.source_hash, "0123456789abcdef");
    sdpa__device_family(r.dev.backend, vendor, device, r.dev.family, sizeof r.dev.family);
    sdpa__problem p = test_problem();
    sdpa__bucket_of(&p, 0, &r.bucket);
    sdpa_tile_config_init(&r.tile);
    sdpa_tile_config_set(&r.tile, SDPA_TILE_Q_TILE, q_tile);
    sdpa_tile_config_set(&r.tile, SDPA_TILE_K_TILE, 32);
    sdpa_tile_config_set(&r.tile, SDPA_TILE_WG_SIZE, 8);
    r.best_ms = 1.0;
    r.default_ms = 2.0;
    snprintf(r.tuned_at, sizeof r.tuned_at, "2026-01-01T00:00:00Z");
    return r;
}

static void store_in(const char *dir, const sdpa__profile_record *r)
{
    char name[160], path[4096];
    sdpa__profile_file_name(&r->dev, name, sizeof name);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    ck_assert_int_eq(sdpa__profile_store(NULL, path, r), SDPA_OK);
}

START_TEST(family_record_travels)
{
    char *a = tmkdtemp("sdpa-test-tune"), *b = tmkdtemp("sdpa-test-tune");
    linecap lc = {{0}, 0};
    sdpa_context *ctx = info_ctx(a, &lc);
    sdpa__profile_record xeon = pocl_record("GenuineIntel", XEON, 2, 16);
    ck_assert_str_eq(xeon.dev.family, "opencl/cpu/pocl-x86-64-avx512");
    store_in(a, &xeon);
    /* written with its family */
    char path[4096], name[160];
    sdpa__profile_file_name(&xeon.dev, name, sizeof name);
    snprintf(path, sizeof path, "%s/%s", a, name);
    char *text = read_all(path);
    ck_assert_ptr_nonnull(strstr(text, "\"family\":\"opencl/cpu/pocl-x86-64-avx512\""));
    free(text);

    /* an AVX-512 EPYC under the same PoCL: the Xeon's record, logged */
    sdpa__profile_record epyc = pocl_record("AuthenticAMD", EPYC4, 96, 32);
    const char *dirs[2] = {a, b};
    sdpa_tile_config t;
    sdpa__profile_origin o;
    ck_assert(sdpa__profile_lookup(ctx, &epyc.dev, &epyc.bucket, dirs, 2, &t, &o));
    ck_assert(o.family);
    ck_assert_int_eq(o.dir, 0);
    ck_assert_str_eq(o.device, XEON);
    ck_assert_str_eq(o.family_key, "opencl/cpu/pocl-x86-64-avx512");
    ck_assert_int_eq(TGET(&t, Q_TILE), 16);
    ck_assert_msg(strstr(lc.text, "using the record of '" XEON "' (same family "
                                  "opencl/cpu/pocl-x86-64-avx512)"), "log: %s", lc.text);
    ck_assert_int_eq(lc.warns, 0);
    /* the same CPU name with another core count is another device of the family */
    sdpa__profile_record xeon8 = pocl_record("GenuineIntel", XEON, 8, 64);
    ck_assert(sdpa__profile_lookup(NULL, &xeon8.dev, &xeon8.bucket, dirs, 2, &t, &o));
    ck_assert(o.family);
    ck_assert_int_eq(TGET(&t, Q_TILE), 16);
    /* another bucket, another family (AVX2), an unknown target: nothing */
    sdpa__bucket other = epyc.bucket;
    other.d = 128;
    ck_assert(!sdpa__profile_lookup(NULL, &epyc.dev, &other, dirs, 2, &t, &o));
    sdpa__profile_record avx2 = pocl_record("AuthenticAMD", EPYC3, 64, 32);
    ck_assert_str_eq(avx2.dev.family, "opencl/cpu/pocl-x86-64-avx2");
    ck_assert(!sdpa__profile_lookup(NULL, &avx2.dev, &avx2.bucket, dirs, 2, &t, &o));
    sdpa__profile_record odd = pocl_record("GenuineIntel", "pthread-futurecpu-X", 4, 32);
    ck_assert_str_eq(odd.dev.family, "");
    ck_assert(!sdpa__profile_lookup(NULL, &odd.dev, &odd.bucket, dirs, 2, &t, &o));
    /* the Vulkan backend never takes an OpenCL record */
    sdpa__profile_record vk = epyc;
    snprintf(vk.dev.backend, sizeof vk.dev.backend, "vulkan");
    sdpa__device_family("vulkan", vk.dev.vendor, vk.dev.device, vk.dev.family,
                        sizeof vk.dev.family);
    ck_assert(!sdpa__profile_lookup(NULL, &vk.dev, &vk.bucket, dirs, 2, &t, &o));

    /* exact records win, even from a later folder */
    store_in(b, &epyc);
    ck_assert(sdpa__profile_lookup(NULL, &epyc.dev, &epyc.bucket, dirs, 2, &t, &o));
    ck_assert(!o.family);
    ck_assert_int_eq(o.dir, 1);
    ck_assert_int_eq(TGET(&t, Q_TILE), 32);
    /* and the earlier folder's family record beats a later folder's */
    sdpa__profile_record ice = pocl_record("GenuineIntel", "pthread-icelake-server-Intel Xeon",
                                           4, 48);
    store_in(b, &ice);
    ck_assert(sdpa__profile_lookup(NULL, &xeon8.dev, &xeon8.bucket, dirs, 2, &t, &o));
    ck_assert_int_eq(o.dir, 0);
    ck_assert_int_eq(TGET(&t, Q_TILE), 16);
    sdpa_context_destroy(ctx);
    free(a);
    free(b);
}
END_TEST

/* The family member: a well-formed key of the record's own backend, or the
 * line is refused (skipped with the file's one WARN, never used as a family
 * record); absent, it is derived from the device key (records written before
 * families, the shipped files among them). */
START_TEST(corrupt_family_refused)
{
    char *dir = tmkdtemp("sdpa-test-tune");
    sdpa__profile_record xeon = pocl_record("GenuineIntel", XEON, 2, 16);
    char *json = sdpa__profile_record_to_json(&xeon);
    ck_assert_ptr_nonnull(json);
    const char *bad[] = {"5", "null", "true", "[]", "{}", "\"\"", "\"OPENCL/cpu/x\"",
                         "\"vulkan/cpu/pocl-x86-64-avx512\"", "\"opencl/cpu\"",
                         "\"opencl//x\"", "\"opencl/cpu/a b\"", "\"opencl/cpu/x/y\"",
                         "\"opencl/cpu/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\""};
    const size_t nbad = sizeof bad / sizeof bad[0];
    char path[4096];
    snprintf(path, sizeof path, "%s/opencl-corrupt.jsonl", dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    for (size_t i = 0; i < nbad; i++) {
        cJSON *o = cJSON_Parse(json);
        ck_assert_ptr_nonnull(o);
        cJSON *v = cJSON_Parse(bad[i]);
        ck_assert_ptr_nonnull(v);
        ck_assert(cJSON_ReplaceItemInObjectCaseSensitive(o, "family", v));
        char *line = cJSON_PrintUnformatted(o);
        sdpa__profile_record r;
        const char *why = NULL;
        ck_assert_msg(!sdpa__profile_record_parse(line, strlen(line), &r, &why),
                      "family %s accepted", bad[i]);
        ck_assert_str_eq(why, "bad family");
        fprintf(f, "%s\n", line);
        cJSON_free(line);
        cJSON_Delete(o);
    }
    fclose(f);
    /* none of them is a family record for the EPYC, and the file gets one WARN */
    linecap lc = {{0}, 0};
    sdpa_context *ctx = info_ctx(dir, &lc);
    sdpa__profile_record epyc = pocl_record("AuthenticAMD", EPYC4, 96, 32);
    const char *dirs[1] = {dir};
    sdpa_tile_config t;
    sdpa__profile_origin o;
    ck_assert(!sdpa__profile_lookup(ctx, &epyc.dev, &epyc.bucket, dirs, 1, &t, &o));
    ck_assert(!sdpa__profile_lookup(ctx, &epyc.dev, &epyc.bucket, dirs, 1, &t, &o));
    ck_assert_int_eq(lc.warns, 1);
    char want[64];
    snprintf(want, sizeof want, "skipped %zu unreadable line(s)", nbad);
    ck_assert_msg(strstr(lc.text, want) && strstr(lc.text, "bad family"), "log: %s", lc.text);
    sdpa_context_destroy(ctx);

    /* no family member: derived from the device key */
    cJSON *o2 = cJSON_Parse(json);
    cJSON_DeleteItemFromObjectCaseSensitive(o2, "family");
    char *old = cJSON_PrintUnformatted(o2);
    sdpa__profile_record r;
    const char *why = NULL;
    ck_assert_msg(sdpa__profile_record_parse(old, strlen(old), &r, &why), "%s", why);
    ck_assert_str_eq(r.dev.family, "opencl/cpu/pocl-x86-64-avx512");
    cJSON_free(old);
    cJSON_Delete(o2);
    free(json);
    /* the shipped PoCL profile predates families: its records derive theirs */
    const char *corpus = getenv("SDPA_CORPUS_DIR"); /* <source>/tests/conformance */
    ck_assert_ptr_nonnull(corpus);
    char sp[4096];
    snprintf(sp, sizeof sp, "%s/../../data/profiles/%s", corpus,
             "opencl-pthread_skylake_avx512_intel_r_xeon_r_processor.jsonl");
    sdpa__profile_file pf;
    ck_assert_int_eq(sdpa__profile_read(NULL, sp, &pf), SDPA_OK);
    ck_assert_uint_gt(pf.count, 0);
    for (size_t i = 0; i < pf.count; i++)
        ck_assert_str_eq(pf.records[i].dev.family, "opencl/cpu/pocl-x86-64-avx512");
    sdpa__profile_file_free(&pf);
    free(dir);
}
END_TEST

static Suite *tune_suite(void)
{
    Suite *s = suite_create("tune");
    TCase *store = tcase_create("profile");
    tcase_add_test(store, bucket_keys);
    tcase_add_test(store, record_round_trip);
    tcase_add_test(store, record_round_trip_backend_not_a_family_part);
    tcase_add_test(store, corrupt_lines_skipped);
    tcase_add_test(store, huge_and_binary_files);
    tcase_add_test(store, mutated_lines_never_crash);
    tcase_add_test(store, stale_driver_used_with_warning);
    tcase_add_test(store, concurrent_writers);
    tcase_add_test(store, lookup_chain);
    tcase_add_test(store, old_format_record_loads);
    tcase_add_test(store, unknown_tile_names_kept);
    tcase_add_test(store, record_out_of_backend_range);
    tcase_add_test(store, lookup_by_key_and_folders);
    tcase_add_test(store, family_record_travels);
    tcase_add_test(store, corrupt_family_refused);
    tcase_set_timeout(store, 60);
    suite_add_tcase(s, store);
    TCase *tune = tcase_create("tuner");
    tcase_add_test(tune, tune_arguments_and_dry_run);
    tcase_add_test(tune, tune_rejects_wrong_candidate);
    tcase_add_test(tune, tune_tiny_budget_yields_profile_plan);
    tcase_add_test(tune, tune_backward_bucket);
    tcase_add_test(tune, tune_many_candidates_fault);
    tcase_add_test(tune, tune_sampled_space_within_budget);
    tcase_add_test(tune, search_order);
    tcase_add_test(tune, tune_unwritable_profile);
    tcase_add_test(tune, refused_profile_config_falls_back);
    tcase_add_test(tune, tool_runs_and_writes_profile);
    tcase_add_test(tune, tune_verify_exhaustive);
    tcase_set_timeout(tune, 60);
    suite_add_tcase(s, tune);
    TCase *files = tcase_create("files");
    tcase_add_test(files, fifo_profile_refused);
    tcase_add_test(files, profile_parsed_once);
    tcase_add_test(files, symlinked_profile_written_through);
    tcase_add_test(files, stale_temp_files_removed);
    tcase_add_test(files, profile_writable_check);
    tcase_set_timeout(files, 20);
    suite_add_tcase(s, files);
    return s;
}

int main(void)
{
    /* Hermetic: never read profiles installed on this machine. */
    setenv("SDPA_SHIPPED_PROFILE_DIR", NO_SHIPPED, 1);
    return trun_suite(tune_suite());
}
