/*
 * test_conformance.c — the conformance corpus through the public API, via
 * the tools' sdpa-case/1 loader (tools/common/case.c, case_run.c).
 *
 * - Every case of the repository's corpus (tests/conformance) passes on the
 *   reference backend, and on the cpu backend when it is compiled in; so do
 *   the cases of an extra corpus ($SDPA_CONFORMANCE_DIR, where it exists).
 *   The corpus equals what tests/gen_conformance.c writes now
 *   (corpus_is_fresh).
 * - The wave-2 corpus (tests/conformance-wave2: ALiBi, sinks, mixed,
 *   quantized and paged K/V) on every compiled backend that declares any of
 *   those capabilities (sdpa__backend.features, capabilities.h): a case
 *   passes, or is UNSUPPORTED naming a capability that backend lacks; a
 *   backend with all of them (the reference) passes every case. So a
 *   backend is checked as soon as it sets its feature bits.
 * - The runner is not vacuous: a perturbed expected output, a misplaced
 *   infinity and a wrong -inf all FAIL; permuted stats columns (by name) and
 *   an i64 kv_len still PASS.
 * - Malformed cases (bad JSON, every truncation of case.json, random byte
 *   flips, missing / short / long files, unknown dtype, wrong or overflowing
 *   shapes, escaping file names, out-of-range kv_len, unknown keys) come back
 *   as FAIL with a reason naming the problem, never a crash; so do hostile
 *   ones (text after the JSON object, a NUL byte, symlinks resolving outside
 *   the case folder, a FIFO that must not block), and a folder of
 *   self-symlinks yields each case once. The wave-2 inputs are checked
 *   like the others (wave2_inputs_checked): K and V in one dtype, paged
 *   inputs only with a block table (and k, v not with one), block-table
 *   entries inside the pool, a block dtype only for K/V and with a last axis
 *   a multiple of 32, dsinks only with sinks.
 * Runs in a few seconds (small cases, reference backend); writes only below
 * a mkdtemp folder that it removes.
 */
#include "testutil.h"

#include "capabilities.h"
#include "case.h"
#include "corpus.h"

#include <cJSON.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* The repository's corpus: the cases the tests below copy and edit. */
static const char *conf_dir(void) { return tcorpus_main(); }

/* ---- file helpers ------------------------------------------------------------------ */

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    ck_assert_ptr_nonnull(buf);
    ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    buf[n] = '\0';
    if (len)
        *len = (size_t)n;
    return buf;
}

static void spit(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    ck_assert_msg(f != NULL, "cannot write %s", path);
    ck_assert_uint_eq(fwrite(data, 1, len, f), len);
    fclose(f);
}

static void rm_rf(const char *path)
{
    DIR *d = opendir(path);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            char p[4096];
            snprintf(p, sizeof p, "%s/%s", path, e->d_name);
            rm_rf(p);
        }
        closedir(d);
        rmdir(path);
    } else {
        unlink(path);
    }
}

static char g_tmp[256];

static void tmp_setup(void)
{
    snprintf(g_tmp, sizeof g_tmp, "/tmp/sdpa-conformance-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(g_tmp));
}

static void tmp_teardown(void) { rm_rf(g_tmp); }

/* Copies the shared case `name` to g_tmp/dst and returns its path. */
static const char *copy_case_from(const char *root, const char *name, const char *dst)
{
    static char out[512];
    char src[1200];
    snprintf(src, sizeof src, "%s/%s", root, name);
    snprintf(out, sizeof out, "%s/%s", g_tmp, dst);
    ck_assert_int_eq(mkdir(out, 0755), 0);
    DIR *d = opendir(src);
    ck_assert_msg(d != NULL, "cannot open %s", src);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char a[1500], b[1024];
        size_t n;
        snprintf(a, sizeof a, "%s/%s", src, e->d_name);
        snprintf(b, sizeof b, "%s/%s", out, e->d_name);
        char *data = slurp(a, &n);
        spit(b, data, n);
        free(data);
    }
    closedir(d);
    return out;
}

static const char *copy_case(const char *name, const char *dst)
{
    return copy_case_from(conf_dir(), name, dst);
}

static cJSON *read_json(const char *dir)
{
    char p[1024];
    snprintf(p, sizeof p, "%s/case.json", dir);
    char *s = slurp(p, NULL);
    cJSON *j = cJSON_Parse(s);
    free(s);
    ck_assert_ptr_nonnull(j);
    return j;
}

static void write_json(const char *dir, cJSON *j)
{
    char p[1024];
    snprintf(p, sizeof p, "%s/case.json", dir);
    char *s = cJSON_Print(j);
    spit(p, s, strlen(s));
    cJSON_free(s);
    cJSON_Delete(j);
}

static sdpa_context *g_ref;

static void ref_setup(void)
{
    tmp_setup();
    sdpa_status st;
    g_ref = tcontext(SDPA_BACKEND_REFERENCE, &st);
    ck_assert_msg(g_ref != NULL, "reference context: %s", sdpa_status_name(st));
}

static void ref_teardown(void)
{
    sdpa_context_destroy(g_ref);
    g_ref = NULL;
    tmp_teardown();
}

/* Runs the case in dir on the reference backend. */
static sc_result run_dir(const char *dir)
{
    sc_result r;
    sc_check_dir(g_ref, dir, &r);
    return r;
}

static void expect_fail(const char *dir, const char *needle)
{
    sc_result r = run_dir(dir);
    ck_assert_msg(r.verdict == SC_FAIL, "%s: expected FAIL, got %d", dir, (int)r.verdict);
    ck_assert_msg(strstr(r.reason, needle) != NULL, "%s: reason \"%s\" lacks \"%s\"", dir,
                  r.reason, needle);
}

static void expect_pass(const char *dir)
{
    sc_result r = run_dir(dir);
    ck_assert_msg(r.verdict == SC_PASS, "%s: expected PASS, got %d (%s)", dir, (int)r.verdict,
                  r.reason);
}

/* ---- the shared cases ------------------------------------------------------------------ */

/* Every case of the repository's corpus and of an extra corpus
 * (SDPA_CONFORMANCE_DIR) passes. */
static void run_all_on(sdpa_backend_kind kind)
{
    sdpa_status st;
    sdpa_context *ctx = tcontext(kind, &st);
    ck_assert_msg(ctx != NULL, "%s context: %s", sdpa_backend_name(kind), sdpa_status_name(st));
    char dirs[TCORPUS_MAX][1024];
    int nd = tcorpus_dirs(dirs, TCORPUS_MAX);
    for (int k = 0; k < nd; k++) {
        sc_list list = {0};
        char err[512];
        ck_assert_msg(sc_find(dirs[k], &list, err, sizeof err), "%s", err);
        ck_assert_uint_ge(list.n, k == 0 ? 18 : 1);
        for (size_t i = 0; i < list.n; i++) {
            sc_result r;
            sc_check_dir(ctx, list.paths[i], &r);
            ck_assert_msg(r.verdict == SC_PASS, "%s on %s: %s", list.paths[i],
                          sdpa_backend_name(kind), r.reason);
            ck_assert_int_gt(r.ncmp, 0);
            for (int c = 0; c < r.ncmp; c++)
                ck_assert(r.cmp[c].ok && r.cmp[c].bad_nonfinite == 0);
        }
        sc_list_free(&list);
    }
    sdpa_context_destroy(ctx);
}

START_TEST(all_cases_reference) { run_all_on(SDPA_BACKEND_REFERENCE); }
END_TEST

START_TEST(all_cases_cpu)
{
    if (!sdpa_backend_compiled(SDPA_BACKEND_CPU)) {
        /* Not compiled: context creation must say so explicitly. */
        sdpa_status st;
        ck_assert_ptr_null(tcontext(SDPA_BACKEND_CPU, &st));
        ck_assert_int_eq(st, SDPA_ERR_UNSUPPORTED);
        return;
    }
    run_all_on(SDPA_BACKEND_CPU);
}
END_TEST

/* The wave-2 corpus beside the repository's: tests/conformance-wave2. */
static void wave2_dir(char *buf, size_t cap)
{
    snprintf(buf, cap, "%s-wave2", tcorpus_main());
}

/* Runs the wave-2 corpus on backend `kind` if it is compiled in, loadable
 * and declares any wave-2 capability: each case passes, or (only where the
 * backend lacks a capability) is UNSUPPORTED naming one it lacks. Returns
 * the number of cases that passed (-1: not run). */
static int run_wave2_dir_on(sdpa_backend_kind kind, const char *dir, size_t min_cases);
static int run_wave2_on(sdpa_backend_kind kind)
{
    char dir[1100];
    wave2_dir(dir, sizeof dir);
    return run_wave2_dir_on(kind, dir, 11);
}

static int run_wave2_dir_on(sdpa_backend_kind kind, const char *dir, size_t min_cases)
{
    const sdpa__backend *be = sdpa__backend_get(kind);
    if (!be || !sdpa_backend_compiled(kind) || be->features == 0)
        return -1;
    sdpa_status st;
    sdpa_context *ctx = tcontext(kind, &st);
    if (!ctx) {
        fprintf(stderr, "note: wave-2 corpus not run on %s: %s\n", sdpa_backend_name(kind),
                sdpa_status_name(st));
        return -1;
    }
    char err[512];
    sc_list list = {0};
    ck_assert_msg(sc_find(dir, &list, err, sizeof err), "%s", err);
    ck_assert_uint_ge(list.n, min_cases);
    int passed = 0;
    for (size_t i = 0; i < list.n; i++) {
        sc_result r;
        sc_check_dir(ctx, list.paths[i], &r);
        if (r.verdict == SC_UNSUPPORTED && be->features != SDPA__FEAT_ALL) {
            int named = 0; /* the refusal names a capability the backend lacks */
            for (int b = 0; b < SDPA__FEAT_COUNT; b++)
                named |= !(be->features >> b & 1u) && strstr(r.reason, sdpa__feature_name(b));
            ck_assert_msg(named, "%s on %s: UNSUPPORTED without a missing capability: %s",
                          list.paths[i], be->name, r.reason);
            continue;
        }
        ck_assert_msg(r.verdict == SC_PASS, "%s on %s: %s", list.paths[i], be->name, r.reason);
        passed++;
    }
    fprintf(stderr, "wave-2 cases of %s on %s: %d of %zu pass\n", dir, be->name, passed, list.n);
    sc_list_free(&list);
    sdpa_context_destroy(ctx);
    return passed;
}

START_TEST(wave2_reference_passes_all)
{
    char dir[1100], err[512];
    wave2_dir(dir, sizeof dir);
    sc_list list = {0};
    ck_assert_msg(sc_find(dir, &list, err, sizeof err), "%s", err);
    ck_assert_uint_eq(sdpa__backend_get(SDPA_BACKEND_REFERENCE)->features, SDPA__FEAT_ALL);
    ck_assert_int_eq(run_wave2_on(SDPA_BACKEND_REFERENCE), (int)list.n);
    sc_list_free(&list);
}
END_TEST

START_TEST(wave2_backends_by_features)
{
    const sdpa_backend_kind kinds[] = {SDPA_BACKEND_CPU, SDPA_BACKEND_OPENCL,
                                       SDPA_BACKEND_VULKAN};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
        run_wave2_on(kinds[k]);
}
END_TEST

/* The generated wave-2 cases (tests/gen_wave2.c: every feature and
 * combination at lengths 1, 7, 63, 65, 257, 1000, expected from its own
 * float64 oracle) on the reference, all passing, and on every backend that
 * declares wave-2 capabilities. */
START_TEST(wave2_generated_by_features)
{
    const char *gen = getenv("SDPA_GEN_WAVE2");
    ck_assert_msg(gen && *gen, "SDPA_GEN_WAVE2 is not set (tests/meson.build sets it)");
    char dir[1024], cmd[2200];
    snprintf(dir, sizeof dir, "%s/gen_wave2", g_tmp);
    snprintf(cmd, sizeof cmd, "'%s' '%s' >/dev/null", gen, dir);
    ck_assert_int_eq(system(cmd), 0);
    sc_list list = {0};
    char err[512];
    ck_assert_msg(sc_find(dir, &list, err, sizeof err), "%s", err);
    ck_assert_int_eq(run_wave2_dir_on(SDPA_BACKEND_REFERENCE, dir, 14), (int)list.n);
    sc_list_free(&list);
    const sdpa_backend_kind kinds[] = {SDPA_BACKEND_CPU, SDPA_BACKEND_OPENCL,
                                       SDPA_BACKEND_VULKAN};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
        run_wave2_dir_on(kinds[k], dir, 14);
}
END_TEST

START_TEST(find_single_and_nested)
{
    sc_list l = {0};
    char err[512], p[1024];
    snprintf(p, sizeof p, "%s/basic", conf_dir());
    ck_assert(sc_find(p, &l, err, sizeof err));
    ck_assert_uint_eq(l.n, 1);
    sc_list_free(&l);
    /* nested: tmp/suite/a/<case> is found, names sorted */
    snprintf(p, sizeof p, "%s/suite", g_tmp);
    ck_assert_int_eq(mkdir(p, 0755), 0);
    copy_case("basic", "suite/b");
    copy_case("window_causal", "suite/a");
    ck_assert(sc_find(g_tmp, &l, err, sizeof err));
    ck_assert_uint_eq(l.n, 2);
    ck_assert(strstr(l.paths[0], "suite/a") != NULL);
    sc_list_free(&l);
    ck_assert(!sc_find("/nonexistent/sdpa", &l, err, sizeof err));
    ck_assert(strstr(err, "not a folder") != NULL);
}
END_TEST

/* ---- the runner is not vacuous ---------------------------------------------------------- */

START_TEST(perturbed_expected_fails)
{
    const char *d = copy_case("basic", "perturbed");
    char p[1024];
    size_t n;
    snprintf(p, sizeof p, "%s/out.expected.f32", d);
    float *o = (float *)slurp(p, &n);
    o[7] += 1e-2f;
    spit(p, o, n);
    free(o);
    sc_result r = run_dir(d);
    ck_assert_int_eq(r.verdict, SC_FAIL);
    ck_assert(strstr(r.reason, "out: max_abs") != NULL);
    ck_assert(strstr(r.reason, "[0,0,0,7]") != NULL);
    ck_assert_double_eq_tol(r.cmp[0].max_abs, 1e-2, 1e-4);
}
END_TEST

START_TEST(nonfinite_expected_must_match)
{
    /* bool_mask_empty_row has -inf LSE entries; turn one into +inf and a
     * finite out entry into inf: both must fail. */
    const char *d = copy_case("bool_mask_empty_row", "inf");
    char p[1024];
    size_t n;
    snprintf(p, sizeof p, "%s/lse.expected.f32", d);
    float *l = (float *)slurp(p, &n);
    size_t k = 0;
    while (k < n / 4 && !isinf(l[k]))
        k++;
    ck_assert_msg(k < n / 4, "case has no -inf LSE");
    l[k] = INFINITY;
    spit(p, l, n);
    free(l);
    sc_result r = run_dir(d);
    ck_assert_int_eq(r.verdict, SC_FAIL);
    ck_assert(strstr(r.reason, "lse: 1 non-finite") != NULL);

    d = copy_case("basic", "inf_out");
    snprintf(p, sizeof p, "%s/out.expected.f32", d);
    float *o = (float *)slurp(p, &n);
    o[3] = -INFINITY;
    spit(p, o, n);
    free(o);
    expect_fail(d, "out: 1 non-finite");
}
END_TEST

START_TEST(compare_values_semantics)
{
    const double want[4] = {1.0, -INFINITY, NAN, 2.0};
    double got[4] = {1.0, -INFINITY, NAN, 2.0};
    sc_compare c;
    sc_compare_values(got, want, 4, 0, 0, &c);
    ck_assert(c.ok && c.max_abs == 0 && c.rel_l2 == 0 && c.bad_nonfinite == 0);
    got[2] = 0.0; /* NaN expected, number got */
    sc_compare_values(got, want, 4, 1, 1, &c);
    ck_assert(!c.ok && c.bad_nonfinite == 1 && c.worst == 2);
    got[2] = NAN;
    got[3] = NAN; /* finite expected, NaN got: infinite error */
    sc_compare_values(got, want, 4, 1e9, 1e9, &c);
    ck_assert(!c.ok && isinf(c.max_abs) && c.worst == 3);
    got[3] = 2.5;
    sc_compare_values(got, want, 4, 0.5, 1, &c);
    ck_assert(c.ok);
    ck_assert_double_eq_tol(c.rel_l2, 0.5 / sqrt(5.0), 1e-12);
    /* all-zero expected: rel_l2 falls back to the absolute norm */
    const double z[2] = {0, 0};
    const double g2[2] = {3e-7, 4e-7};
    sc_compare_values(g2, z, 2, 1e-6, 1e-6, &c);
    ck_assert(c.ok);
    ck_assert_double_eq_tol(c.rel_l2, 5e-7, 1e-15);
}
END_TEST

START_TEST(stats_columns_by_name)
{
    /* Reverse the stats columns and their names: the runner maps by name. */
    const char *d = copy_case("basic", "stats_perm");
    char p[1024];
    size_t n;
    snprintf(p, sizeof p, "%s/stats.expected.f32", d);
    float *s = (float *)slurp(p, &n);
    size_t rows = n / 4 / 11;
    for (size_t r = 0; r < rows; r++)
        for (int c = 0; c < 5; c++) {
            float t = s[r * 11 + (size_t)c];
            s[r * 11 + (size_t)c] = s[r * 11 + 10 - (size_t)c];
            s[r * 11 + 10 - (size_t)c] = t;
        }
    spit(p, s, n);
    free(s);
    cJSON *j = read_json(d);
    cJSON *names = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "expected"),
                                                           "stats"), "names");
    cJSON *rev = cJSON_CreateArray();
    for (int c = 10; c >= 0; c--)
        cJSON_AddItemToArray(rev, cJSON_CreateString(cJSON_GetArrayItem(names, c)->valuestring));
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "expected"), "stats"),
                              "names", rev);
    write_json(d, j);
    expect_pass(d);
    /* without the reordered names the same data fails */
    j = read_json(d);
    cJSON_DeleteItemFromObject(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "expected"), "stats"),
                               "names");
    write_json(d, j);
    expect_fail(d, "stats: max_abs");
}
END_TEST

START_TEST(kv_len_i64)
{
    const char *d = copy_case("kv_len_explicit_offset", "i64");
    char p[1024];
    size_t n;
    snprintf(p, sizeof p, "%s/kv_len.i32", d);
    int32_t *v = (int32_t *)slurp(p, &n);
    ck_assert_uint_eq(n, 3 * sizeof *v); /* B = 3 */
    int64_t w[3] = {v[0], v[1], v[2]};
    free(v);
    snprintf(p, sizeof p, "%s/kv_len.i64", d);
    spit(p, w, sizeof w);
    cJSON *j = read_json(d);
    cJSON *kv = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "inputs"), "kv_len");
    cJSON_ReplaceItemInObject(kv, "dtype", cJSON_CreateString("i64"));
    cJSON_ReplaceItemInObject(kv, "file", cJSON_CreateString("kv_len.i64"));
    write_json(d, j);
    expect_pass(d);
    /* out of int32 range, and above Skv */
    w[1] = (int64_t)1 << 40;
    spit(p, w, sizeof w);
    expect_fail(d, "kv_len[1]");
    w[1] = 66; /* Skv = 65 */
    spit(p, w, sizeof w);
    expect_fail(d, "outside [0, Skv = 65]");
    w[1] = -1;
    spit(p, w, sizeof w);
    expect_fail(d, "kv_len[1] = -1");
}
END_TEST

/* ---- malformed cases ------------------------------------------------------------------------ */

START_TEST(malformed_json)
{
    const char *d = copy_case("basic", "badjson");
    char p[1024];
    snprintf(p, sizeof p, "%s/case.json", d);
    spit(p, "{\"format\": \"sdpa-case/1\",\n \"op\": forward}", 42);
    expect_fail(d, "invalid JSON near line 2");
    spit(p, "[1, 2, 3]", 9);
    expect_fail(d, "top level must be an object");
    spit(p, "", 0);
    expect_fail(d, "invalid JSON");
    unlink(p);
    expect_fail(d, "case.json: cannot open");
}
END_TEST

START_TEST(json_truncations_and_flips)
{
    /* Every prefix of a valid case.json, and random byte flips: FAIL or PASS,
     * never a crash (Check runs this in a child process). */
    const char *d = copy_case("kv_len_explicit_offset", "fuzz");
    char p[1024];
    size_t n;
    snprintf(p, sizeof p, "%s/case.json", d);
    char *orig = slurp(p, &n);
    for (size_t len = 0; len < n; len += 3) {
        spit(p, orig, len);
        sc_result r = run_dir(d);
        ck_assert_msg(r.verdict == SC_FAIL && r.reason[0], "prefix %zu", len);
    }
    trng rng;
    trng_seed(&rng, 7);
    char *buf = malloc(n);
    int passes = 0;
    for (int it = 0; it < 300; it++) {
        memcpy(buf, orig, n);
        for (int f = 0; f < 3; f++)
            buf[trng_next(&rng) % n] = (char)(trng_next(&rng) & 0xff);
        spit(p, buf, n);
        sc_result r = run_dir(d);
        ck_assert(r.verdict == SC_PASS || (r.verdict == SC_FAIL && r.reason[0]));
        passes += r.verdict == SC_PASS;
    }
    ck_assert_int_lt(passes, 300);
    free(buf);
    free(orig);
}
END_TEST

START_TEST(malformed_files)
{
    char p[1024];
    size_t n;
    const char *d = copy_case("basic", "missing");
    snprintf(p, sizeof p, "%s/k.f32", d);
    unlink(p);
    expect_fail(d, "inputs.k: cannot open k.f32");

    d = copy_case("basic", "short");
    snprintf(p, sizeof p, "%s/q.f32", d);
    char *q = slurp(p, &n);
    spit(p, q, n - 4);
    expect_fail(d, "short file");
    char *big = calloc(1, n + 4);
    memcpy(big, q, n);
    spit(p, big, n + 4);
    expect_fail(d, "file too long");
    free(big);
    free(q);

    d = copy_case("basic", "dir_as_file");
    snprintf(p, sizeof p, "%s/v.f32", d);
    unlink(p);
    ck_assert_int_eq(mkdir(p, 0755), 0);
    expect_fail(d, "not a regular file");

    d = copy_case("basic", "escape");
    cJSON *j = read_json(d);
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "inputs"), "q"), "file",
                              cJSON_CreateString("../short/q.f32"));
    write_json(d, j);
    expect_fail(d, "not a relative path inside the case");
    j = read_json(d);
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "inputs"), "q"), "file",
                              cJSON_CreateString("/etc/passwd"));
    write_json(d, j);
    expect_fail(d, "not a relative path inside the case");
}
END_TEST

/* Edits one field of the copied basic case through a path of keys. */
static void set_field(const char *d, const char *k1, const char *k2, const char *k3, cJSON *v)
{
    cJSON *j = read_json(d);
    cJSON *o = j;
    if (k2)
        o = cJSON_GetObjectItem(o, k1);
    if (k3)
        o = cJSON_GetObjectItem(o, k2);
    const char *key = k3 ? k3 : k2 ? k2 : k1;
    if (v && cJSON_GetObjectItem(o, key))
        cJSON_ReplaceItemInObject(o, key, v);
    else if (v)
        cJSON_AddItemToObject(o, key, v);
    else
        cJSON_DeleteItemFromObject(o, key);
    write_json(d, j);
}

static cJSON *shape4(double a, double b, double c, double d)
{
    const double s[4] = {a, b, c, d};
    return cJSON_CreateDoubleArray(s, 4);
}

START_TEST(malformed_fields)
{
    const char *d = copy_case("basic", "fields");
    char name[64];
    int k = 0;
#define FRESH() (snprintf(name, sizeof name, "f%d", k++), d = copy_case("basic", name))
    set_field(d, "inputs", "q", "dtype", cJSON_CreateString("f33"));
    expect_fail(d, "unknown dtype \"f33\"");
    FRESH();
    set_field(d, "inputs", "q", "dtype", cJSON_CreateString("f16"));
    expect_fail(d, "inputs.q:");
    FRESH();
    set_field(d, "dtype", NULL, NULL, cJSON_CreateString("u8"));
    expect_fail(d, "not a storage dtype");
    FRESH();
    set_field(d, "format", NULL, NULL, cJSON_CreateString("sdpa-case/2"));
    expect_fail(d, "unsupported format");
    FRESH();
    set_field(d, "format", NULL, NULL, NULL);
    expect_fail(d, "missing string \"format\"");
    FRESH();
    set_field(d, "op", NULL, NULL, cJSON_CreateString("sideways"));
    expect_fail(d, "\"op\" must be");
    FRESH();
    set_field(d, "tolerance", NULL, NULL, NULL);
    expect_fail(d, "missing object \"tolerance\"");
    FRESH();
    set_field(d, "tolerance", "max_abs", NULL, cJSON_CreateString("small"));
    expect_fail(d, "\"max_abs\" must be a finite number");
    FRESH();
    set_field(d, "inputs", "v", NULL, NULL);
    expect_fail(d, "missing \"v\"");
    FRESH();
    set_field(d, "inputs", "masque", NULL, cJSON_CreateObject());
    expect_fail(d, "unknown input \"masque\"");
    FRESH();
    set_field(d, "expected", "dq", NULL, cJSON_CreateObject());
    expect_fail(d, "needs op \"backward\"");
    FRESH();
    set_field(d, "attrs", "diagonal", NULL, cJSON_CreateString("middle"));
    expect_fail(d, "attrs.diagonal");
    FRESH();
    set_field(d, "attrs", "window", NULL, cJSON_CreateString("causal"));
    expect_fail(d, "attrs.window");
    FRESH();
    set_field(d, "attrs", "scale", NULL, cJSON_CreateNumber(-1));
    expect_fail(d, "attrs.scale");
    FRESH();
    set_field(d, "attrs", "softcapp", NULL, cJSON_CreateNumber(1));
    expect_fail(d, "unknown attribute \"softcapp\"");
    /* shapes: rank, zero / fractional extents, mismatches, overflow */
    FRESH();
    set_field(d, "inputs", "q", "shape", cJSON_CreateIntArray((const int[]){2, 7, 16}, 3));
    expect_fail(d, "inputs.q: shape must have 4 axes");
    FRESH();
    set_field(d, "inputs", "q", "shape", shape4(1, 2, 0, 8));
    expect_fail(d, "inputs.q: shape[2] must be an integer in [1,");
    FRESH();
    set_field(d, "inputs", "q", "shape", shape4(1, 2, 2.5, 8));
    expect_fail(d, "inputs.q: shape[2]");
    FRESH();
    set_field(d, "inputs", "k", "shape", shape4(1, 2, 16, 65)); /* same bytes, D differs */
    expect_fail(d, "inputs.k: shape [1,2,16,65], expected [1,2,16,16]");
    FRESH();
    set_field(d, "inputs", "q", "shape", shape4(2147483647.0, 2147483647.0, 2147483647.0, 8));
    expect_fail(d, "overflows");
    FRESH();
    set_field(d, "inputs", "q", "shape", shape4(1, 2, 65536, 65536));
    expect_fail(d, "exceeds the limit");
    FRESH();
    set_field(d, "expected", "out", "shape", shape4(1, 2, 16, 7));
    expect_fail(d, "expected.out: shape [1,2,16,7], expected [1,2,7,16]");
    FRESH();
    set_field(d, "expected", "lse", "shape", cJSON_CreateIntArray((const int[]){1, 14}, 2));
    expect_fail(d, "expected.lse: shape");
#undef FRESH
}
END_TEST

START_TEST(lib_shape_forms_accepted)
{
    /* lse given as (B,Hq,Sq,1) and stats as (B,Hq,1,11): the library's forms. */
    const char *d = copy_case("basic", "libforms");
    set_field(d, "expected", "lse", "shape", shape4(1, 2, 7, 1));
    set_field(d, "expected", "stats", "shape", shape4(1, 2, 1, 11));
    expect_pass(d);
}
END_TEST

/* A one-key case with head size D: out = v exactly. Valid everywhere, but
 * beyond what a fast backend may support for large D. */
static const char *write_big_d_case(const char *name, int D)
{
    static char d[512];
    char p[700];
    snprintf(d, sizeof d, "%s/%s", g_tmp, name);
    ck_assert_int_eq(mkdir(d, 0755), 0);
    float *x = malloc((size_t)D * sizeof *x);
    trng r;
    trng_seed(&r, 3);
    for (int i = 0; i < D; i++)
        x[i] = (float)trng_normal(&r);
    snprintf(p, sizeof p, "%s/q.f32", d);
    spit(p, x, (size_t)D * 4);
    snprintf(p, sizeof p, "%s/k.f32", d);
    spit(p, x, (size_t)D * 4);
    free(x);
    const float v[2] = {0.5f, -1.25f};
    snprintf(p, sizeof p, "%s/v.f32", d);
    spit(p, v, sizeof v);
    snprintf(p, sizeof p, "%s/out.expected.f32", d);
    spit(p, v, sizeof v);
    char json[1024];
    int n = snprintf(json, sizeof json,
                     "{\"format\": \"sdpa-case/1\", \"name\": \"%s\", \"op\": \"forward\", "
                     "\"dtype\": \"f32\", \"attrs\": {},\n"
                     " \"inputs\": {\"q\": {\"dtype\": \"f32\", \"shape\": [1,1,1,%d], \"file\": \"q.f32\"},\n"
                     "  \"k\": {\"dtype\": \"f32\", \"shape\": [1,1,1,%d], \"file\": \"k.f32\"},\n"
                     "  \"v\": {\"dtype\": \"f32\", \"shape\": [1,1,1,2], \"file\": \"v.f32\"}},\n"
                     " \"expected\": {\"out\": {\"dtype\": \"f32\", \"shape\": [1,1,1,2], "
                     "\"file\": \"out.expected.f32\"}},\n"
                     " \"tolerance\": {\"max_abs\": 1e-6, \"rel_l2\": 1e-6}}\n",
                     name, D, D);
    snprintf(p, sizeof p, "%s/case.json", d);
    spit(p, json, (size_t)n);
    return d;
}

START_TEST(unsupported_verdict)
{
    /* attrs = {} takes every default; D = 65536 passes on the reference. */
    const char *d = write_big_d_case("big_d", 65536);
    expect_pass(d);
    if (!sdpa_backend_compiled(SDPA_BACKEND_CPU))
        return;
    sdpa_status st;
    sdpa_context *cpu = tcontext(SDPA_BACKEND_CPU, &st);
    ck_assert_ptr_nonnull(cpu);
    sc_result r;
    sc_check_dir(cpu, d, &r);
    sdpa_context_destroy(cpu);
    /* The cpu backend either computes it or refuses it explicitly; a
     * refusal is UNSUPPORTED (skipped), never FAIL. */
    ck_assert_msg(r.verdict == SC_PASS || r.verdict == SC_UNSUPPORTED, "%s", r.reason);
    if (r.verdict == SC_UNSUPPORTED) {
        ck_assert_msg(strstr(r.reason, "sdpa_plan_create: SDPA_ERR_UNSUPPORTED") != NULL, "%s",
                      r.reason);
        ck_assert_int_eq(r.ncmp, 0);
    }
}
END_TEST

START_TEST(unsupported_is_reported)
{
    /* A case whose attributes the library refuses gives FAIL with the
     * library's status name, not a crash; the verdict for
     * SDPA_ERR_UNSUPPORTED is UNSUPPORTED (checked through the message path
     * with a status that validation returns). */
    const char *d = copy_case("basic", "lib_refuses");
    set_field(d, "attrs", "qk_norm_eps", NULL, cJSON_CreateNumber(-1));
    sc_result r = run_dir(d);
    ck_assert_int_eq(r.verdict, SC_FAIL);
    ck_assert_msg(strstr(r.reason, "sdpa_plan_create: SDPA_ERR_") != NULL, "%s", r.reason);
}
END_TEST

/* ---- the corpus is what the generator writes ------------------------------------------ */

/* Compares two float32 files: equal, or within one ulp per entry (the
 * expected outputs go through libm's exp/log/tanh, which may differ in the
 * last bit of a double elsewhere); non-finite entries equal. */
static int f32_close(const char *a, size_t na, const char *b, size_t nb)
{
    if (na != nb || na % 4)
        return 0;
    for (size_t i = 0; i < na; i += 4) {
        int32_t x, y;
        memcpy(&x, a + i, 4);
        memcpy(&y, b + i, 4);
        if (x == y)
            continue;
        float fx, fy;
        memcpy(&fx, &x, 4);
        memcpy(&fy, &y, 4);
        if (!isfinite(fx) || !isfinite(fy) || (x < 0) != (y < 0) || llabs((long long)x - y) > 1)
            return 0;
    }
    return 1;
}

/* Differences between two corpus folders (recursive; top-level README.md
 * ignored). Inputs and case.json must match byte for byte; *.expected.f32 to
 * one ulp. Each difference is printed unless g_diff_quiet. */
static int g_diff_quiet;

static int corpus_diff(const char *a, const char *b, int top)
{
    int diffs = 0;
    const char *dirs[2] = {a, b};
    for (int side = 0; side < 2; side++) {
        DIR *d = opendir(dirs[side]);
        ck_assert_msg(d != NULL, "cannot open %s", dirs[side]);
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (e->d_name[0] == '.' || (top && strcmp(e->d_name, "README.md") == 0))
                continue;
            char pa[2048], pb[2048];
            struct stat sa, sb;
            snprintf(pa, sizeof pa, "%s/%s", dirs[side], e->d_name);
            snprintf(pb, sizeof pb, "%s/%s", dirs[1 - side], e->d_name);
            ck_assert_int_eq(stat(pa, &sa), 0);
            if (stat(pb, &sb) != 0 || S_ISDIR(sa.st_mode) != S_ISDIR(sb.st_mode)) {
                if (!g_diff_quiet)
                    fprintf(stderr, "corpus: %s has no counterpart %s\n", pa, pb);
                diffs++;
                continue;
            }
            if (side == 1)
                continue; /* both exist: compared from side 0 */
            if (S_ISDIR(sa.st_mode)) {
                diffs += corpus_diff(pa, pb, 0);
                continue;
            }
            size_t na, nb;
            char *ca = slurp(pa, &na), *cb = slurp(pb, &nb);
            int same = na == nb && memcmp(ca, cb, na) == 0;
            if (!same && strstr(e->d_name, ".expected.f32"))
                same = f32_close(ca, na, cb, nb);
            if (!same) {
                if (!g_diff_quiet)
                    fprintf(stderr, "corpus: %s differs from %s\n", pa, pb);
                diffs++;
            }
            free(ca);
            free(cb);
        }
        closedir(d);
    }
    return diffs;
}

START_TEST(corpus_is_fresh)
{
    /* tests/conformance equals what tests/gen_conformance.c writes now. */
    const char *gen = getenv("SDPA_GEN_CONFORMANCE");
    ck_assert_msg(gen && *gen, "SDPA_GEN_CONFORMANCE (set by tests/meson.build) is not set");
    char out[512], cmd[1400], p[1024];
    snprintf(out, sizeof out, "%s/gen", g_tmp);
    snprintf(cmd, sizeof cmd, "'%s' '%s' >/dev/null", gen, out);
    ck_assert_int_eq(system(cmd), 0);
    ck_assert_msg(corpus_diff(conf_dir(), out, 1) == 0,
                  "tests/conformance differs from gen_conformance's output: regenerate it "
                  "(tests/conformance/README.md)");
    /* The comparison is not vacuous: one flipped input bit, a changed
     * expected value and a missing case are each seen. */
    g_diff_quiet = 1;
    size_t n;
    snprintf(p, sizeof p, "%s/basic/q.f32", out);
    char *q = slurp(p, &n);
    q[5] ^= 1;
    spit(p, q, n);
    ck_assert_int_eq(corpus_diff(conf_dir(), out, 1), 1);
    q[5] ^= 1;
    spit(p, q, n);
    free(q);
    snprintf(p, sizeof p, "%s/basic/out.expected.f32", out);
    float *o = (float *)slurp(p, &n);
    o[1] = nextafterf(nextafterf(o[1], INFINITY), INFINITY); /* two ulps */
    spit(p, o, n);
    free(o);
    ck_assert_int_eq(corpus_diff(conf_dir(), out, 1), 1);
    snprintf(p, sizeof p, "%s/one_key", out);
    rm_rf(p);
    ck_assert_int_eq(corpus_diff(conf_dir(), out, 1), 2);
}
END_TEST

/* ---- inputs this runner does not know yet: SKIPPED, named ------------------------------ */

/* A wave-2 case (tests/conformance-wave2) copied into the temp folder. */
static const char *copy_w2(const char *name, const char *dst)
{
    char root[1100];
    wave2_dir(root, sizeof root);
    return copy_case_from(root, name, dst);
}

static void rewrite_i32(const char *d, const char *file, size_t at, int32_t v)
{
    char p[1024];
    size_t n;
    snprintf(p, sizeof p, "%s/%s", d, file);
    int32_t *x = (int32_t *)slurp(p, &n);
    ck_assert_uint_gt(n, at * 4);
    x[at] = v;
    spit(p, x, n);
    free(x);
}

START_TEST(wave2_inputs_checked)
{
    /* the wave-2 inputs load and run: each case passes as copied */
    expect_pass(copy_w2("w2_paged", "paged_ok"));
    /* paged: k and v only without a block table, pages only with one */
    const char *d = copy_w2("w2_paged", "paged_with_k");
    cJSON *k = cJSON_CreateObject();
    cJSON_AddStringToObject(k, "dtype", "f32");
    cJSON_AddItemToObject(k, "shape", shape4(1, 1, 1, 64)); /* q.f32's 256 bytes */
    cJSON_AddStringToObject(k, "file", "q.f32");
    set_field(d, "inputs", "k", NULL, k);
    expect_fail(d, "\"k\" given in a paged case");
    d = copy_w2("w2_paged", "pages_without_table");
    set_field(d, "inputs", "block_table", NULL, NULL);
    expect_fail(d, "needs block_table");
    d = copy_w2("w2_paged", "table_without_pages");
    set_field(d, "inputs", "v_pages", NULL, NULL);
    expect_fail(d, "missing \"v_pages\" (paged K/V");
    /* a block-table entry outside the pool */
    d = copy_w2("w2_paged", "table_outside_pool");
    rewrite_i32(d, "block_table.i32", 1, 1000);
    expect_fail(d, "block_table[1] = 1000 is outside [0, pages-1 = ");
    rewrite_i32(d, "block_table.i32", 1, -1);
    expect_fail(d, "block_table[1] = -1");
    /* K and V in one dtype */
    d = copy_w2("w2_mixed_f16q_bf16kv", "kv_differ");
    set_field(d, "inputs", "v", "dtype", cJSON_CreateString("f16"));
    expect_fail(d, "inputs.v: dtype f16 differs from k's bf16");
    /* a block dtype: last axis a multiple of 32, K/V only */
    d = copy_w2("w2_q8_0_kv", "q8_0_axis");
    cJSON *j = read_json(d);
    cJSON *sh = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "inputs"), "k"),
                                    "shape");
    ck_assert_ptr_nonnull(sh);
    double s4[4];
    for (int a = 0; a < 4; a++)
        s4[a] = cJSON_GetArrayItem(sh, a)->valuedouble;
    cJSON_Delete(j);
    set_field(d, "inputs", "k", "shape", shape4(s4[0], s4[1], s4[2] * 2, s4[3] / 2));
    expect_fail(d, "inputs.k: a q8_0 tensor's last axis (16) must be a multiple of 32");
    d = copy_w2("w2_q8_0_kv", "q8_0_mask");
    set_field(d, "inputs", "q", "dtype", cJSON_CreateString("q8_0"));
    expect_fail(d, "inputs.q");
    /* dsinks needs sinks; a typo is unknown */
    d = copy_w2("w2_backward_sinks_alibi_softcap", "dsinks_no_sinks");
    set_field(d, "inputs", "sinks", NULL, NULL);
    expect_fail(d, "expected.dsinks: needs inputs.sinks");
    d = copy_w2("w2_alibi_causal", "typo");
    j = read_json(d);
    cJSON *slopes = cJSON_Duplicate(
        cJSON_GetObjectItem(cJSON_GetObjectItem(j, "inputs"), "alibi_slopes"), 1);
    cJSON_Delete(j);
    set_field(d, "inputs", "alibi_slopes", NULL, NULL);
    set_field(d, "inputs", "alibi_slope", NULL, slopes);
    expect_fail(d, "unknown input \"alibi_slope\"");
    /* a wrong expected dsinks fails (the output is compared, not ignored) */
    d = copy_w2("w2_backward_sinks_alibi_softcap", "dsinks_wrong");
    char p[1024];
    size_t n;
    snprintf(p, sizeof p, "%s/dsinks.expected.f32", d);
    float *ds = (float *)slurp(p, &n);
    ds[0] += 0.01f;
    spit(p, ds, n);
    free(ds);
    expect_fail(d, "dsinks: max_abs");
}
END_TEST

/* ---- hostile case folders ---------------------------------------------------------------- */

START_TEST(trailing_text_refused)
{
    const char *d = copy_case("basic", "trailing");
    char p[1024];
    size_t n;
    snprintf(p, sizeof p, "%s/case.json", d);
    char *orig = slurp(p, &n);
    char *buf = malloc(n + 64);
    /* whitespace after the object is fine */
    memcpy(buf, orig, n);
    memcpy(buf + n, "\n \t\r\n", 5);
    spit(p, buf, n + 5);
    expect_pass(d);
    const char *tails[] = {"x", "}", "{\"format\": \"sdpa-case/1\"}", "\n// comment\n", "[]"};
    for (size_t t = 0; t < sizeof tails / sizeof tails[0]; t++) {
        memcpy(buf, orig, n);
        memcpy(buf + n, tails[t], strlen(tails[t]));
        spit(p, buf, n + strlen(tails[t]));
        expect_fail(d, "case.json: text after the JSON object");
    }
    /* a NUL byte hides the rest of the file from a C-string parser */
    memcpy(buf, orig, n);
    memcpy(buf + n, "\0garbage", 8);
    spit(p, buf, n + 8);
    expect_fail(d, "case.json: NUL byte");
    free(buf);
    free(orig);
}
END_TEST

START_TEST(symlinks_out_of_case_refused)
{
    char p[1024], t[1024];
    const char *other = copy_case("basic", "other");
    (void)other;
    /* a tensor file that is a symlink to a file outside the case folder
     * (here a valid q of the right size): refused */
    const char *d = copy_case("basic", "link_out");
    snprintf(p, sizeof p, "%s/q.f32", d);
    unlink(p);
    ck_assert_int_eq(symlink("../other/q.f32", p), 0);
    expect_fail(d, "inputs.q: q.f32 resolves outside the case folder");
    unlink(p);
    ck_assert_int_eq(symlink("/etc/passwd", p), 0);
    expect_fail(d, "inputs.q: q.f32 resolves outside the case folder");
    /* through a symlinked folder inside the case */
    d = copy_case("basic", "dir_out");
    snprintf(p, sizeof p, "%s/sub", d);
    ck_assert_int_eq(symlink("../other", p), 0);
    set_field(d, "inputs", "q", "file", cJSON_CreateString("sub/q.f32"));
    expect_fail(d, "inputs.q: sub/q.f32 resolves outside the case folder");
    /* case.json itself pointing elsewhere */
    d = copy_case("basic", "json_out");
    snprintf(p, sizeof p, "%s/case.json", d);
    unlink(p);
    ck_assert_int_eq(symlink("../other/case.json", p), 0);
    expect_fail(d, "case.json resolves outside the case folder");
    /* a symlink that stays inside the folder is fine */
    d = copy_case("basic", "link_in");
    snprintf(p, sizeof p, "%s/data", d);
    ck_assert_int_eq(mkdir(p, 0755), 0);
    snprintf(p, sizeof p, "%s/q.f32", d);
    snprintf(t, sizeof t, "%s/data/q.f32", d);
    ck_assert_int_eq(rename(p, t), 0);
    ck_assert_int_eq(symlink("data/q.f32", p), 0);
    expect_pass(d);
    /* and so is a case folder reached through a symlink */
    snprintf(p, sizeof p, "%s/alias", g_tmp);
    ck_assert_int_eq(symlink("link_in", p), 0);
    expect_pass(p);
}
END_TEST

START_TEST(fifo_never_blocks)
{
    /* A FIFO (or any non-regular file) at a tensor path or at case.json is
     * refused at once; before the fix, opening it waited for a writer. */
    alarm(60);
    char p[1024];
    const char *d = copy_case("basic", "fifo");
    snprintf(p, sizeof p, "%s/k.f32", d);
    unlink(p);
    ck_assert_int_eq(mkfifo(p, 0644), 0);
    expect_fail(d, "inputs.k: k.f32 is not a regular file");
    d = copy_case("basic", "fifo_json");
    snprintf(p, sizeof p, "%s/case.json", d);
    unlink(p);
    ck_assert_int_eq(mkfifo(p, 0644), 0);
    expect_fail(d, "case.json: not a regular file");
    d = copy_case("basic", "devnull");
    snprintf(p, sizeof p, "%s/v.f32", d);
    unlink(p);
    ck_assert_int_eq(symlink("/dev/null", p), 0);
    expect_fail(d, "inputs.v: v.f32 resolves outside the case folder");
    alarm(0);
}
END_TEST

START_TEST(walk_ignores_symlink_loops)
{
    /* A folder with one case and eight symlinks to itself: the case is
     * found once (before the fix: 602 times, through every chain of links
     * down to the depth limit). */
    char p[1024], t[1024];
    snprintf(p, sizeof p, "%s/loop", g_tmp);
    ck_assert_int_eq(mkdir(p, 0755), 0);
    copy_case("basic", "loop/basic");
    for (int i = 0; i < 8; i++) {
        snprintf(t, sizeof t, "%s/loop/self%d", g_tmp, i);
        ck_assert_int_eq(symlink(".", t), 0);
    }
    snprintf(t, sizeof t, "%s/loop/up", g_tmp);
    ck_assert_int_eq(symlink("..", t), 0);
    sc_list l = {0};
    char err[512];
    ck_assert_msg(sc_find(p, &l, err, sizeof err), "%s", err);
    ck_assert_uint_eq(l.n, 1);
    sc_list_free(&l);
    /* PATH itself may be a symlink (to a folder of cases or to a case) */
    snprintf(t, sizeof t, "%s/alias", g_tmp);
    ck_assert_int_eq(symlink("loop", t), 0);
    ck_assert_msg(sc_find(t, &l, err, sizeof err), "%s", err);
    ck_assert_uint_eq(l.n, 1);
    sc_list_free(&l);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("conformance");
    TCase *t = tcase_create("shared");
    tcase_add_checked_fixture(t, ref_setup, ref_teardown);
    tcase_add_test(t, all_cases_reference);
    tcase_add_test(t, all_cases_cpu);
    tcase_add_test(t, find_single_and_nested);
    tcase_add_test(t, wave2_reference_passes_all);
    tcase_add_test(t, wave2_backends_by_features);
    tcase_add_test(t, wave2_generated_by_features);
    suite_add_tcase(s, t);
    t = tcase_create("runner");
    tcase_add_checked_fixture(t, ref_setup, ref_teardown);
    tcase_add_test(t, perturbed_expected_fails);
    tcase_add_test(t, nonfinite_expected_must_match);
    tcase_add_test(t, compare_values_semantics);
    tcase_add_test(t, stats_columns_by_name);
    tcase_add_test(t, kv_len_i64);
    tcase_add_test(t, lib_shape_forms_accepted);
    tcase_add_test(t, unsupported_is_reported);
    tcase_add_test(t, unsupported_verdict);
    suite_add_tcase(s, t);
    t = tcase_create("malformed");
    tcase_add_checked_fixture(t, ref_setup, ref_teardown);
    tcase_add_test(t, malformed_json);
    tcase_add_test(t, json_truncations_and_flips);
    tcase_add_test(t, malformed_files);
    tcase_add_test(t, malformed_fields);
    tcase_add_test(t, wave2_inputs_checked);
    tcase_add_test(t, trailing_text_refused);
    tcase_add_test(t, symlinks_out_of_case_refused);
    tcase_add_test(t, fifo_never_blocks);
    tcase_add_test(t, walk_ignores_symlink_loops);
    suite_add_tcase(s, t);
    t = tcase_create("corpus");
    tcase_add_checked_fixture(t, ref_setup, ref_teardown);
    tcase_add_test(t, corpus_is_fresh);
    suite_add_tcase(s, t);
    return s;
}

int main(void) { return trun_suite(suite()); }
