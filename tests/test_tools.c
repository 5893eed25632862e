/*
 * test_tools.c — the command-line tools as a user runs them: exit codes,
 * messages and output formats of sdpa-check, sdpa-info and sdpa-bench.
 *
 * The binaries are found through $SDPA_TOOLS_DIR (set by tests/meson.build to
 * the build's tools folder); conformance cases from the repository's corpus
 * (tests/conformance) and any extra one (tests/common/corpus.h).
 * Each command's stdout and stderr are captured to files under a mkdtemp
 * folder. Checks: sdpa-check passes every case of the corpus on the reference
 * backend with the exact summary line (extra corpora: nothing fails), fails a
 * broken case with exit 1, passes the wave-2 corpus (tests/conformance-wave2)
 * on the reference, checks the wave-2 inputs like the others, counts an
 * UNSUPPORTED case as a failure unless --allow-unsupported, runs a case once
 * through a folder of self-symlinks, and
 * rejects bad flags with exit 2; sdpa-info --json is valid JSON with the
 * version, the reference backend and the shipped-profile folder the
 * environment names; sdpa-bench prints a row per backend and
 * op, its JSON's GFLOP/s times milliseconds reproduces the exact kept-pair
 * flop count for full, causal and window bands, and bad shapes exit 2;
 * --kv-dtype / --page-size lists give one row per combination in list order
 * (a bad element is named), and --interleave calls the rows in rotating
 * rounds (its JSON `order`) with `vs base` the median of the per-round
 * ratios to the shape's first row (recomputed from `rounds_ms`).
 * Presets: sdpa-tune and sdpa-bench list the same ones, and a bench of a
 * tuned preset runs the tuned configuration on every row (source column:
 * profile, shipped profile, default). A row above 100 % of a (bad) cached
 * peak makes sdpa-bench measure the peak again; shapes beyond the machine's
 * memory are refused (exit 2) before allocating, and so are --interleave
 * rows that fit one at a time but not together; --plot takes .svg only; no
 * such device exits 1 in every tool.
 * Runs in about half a minute (tiny shapes on reference; the presets on cpu
 * with a 3 s tuning budget).
 */
#include "testutil.h"
#include "corpus.h"

#include <cJSON.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char g_tmp[256];
static char *g_out, *g_err; /* captured output of the last run */

static const char *tools_dir(void)
{
    const char *d = getenv("SDPA_TOOLS_DIR");
    return d && *d ? d : "tools";
}

static const char *conf_dir(void) { return tcorpus_main(); }

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return strdup("");
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

/* Runs TOOL with the given arguments (a shell fragment, already quoted);
 * returns the exit status and keeps stdout/stderr in g_out/g_err. */
static int run(const char *tool, const char *args)
{
    char cmd[4096], o[512], e[512];
    snprintf(o, sizeof o, "%s/stdout", g_tmp);
    snprintf(e, sizeof e, "%s/stderr", g_tmp);
    snprintf(cmd, sizeof cmd, "'%s/%s' %s >'%s' 2>'%s'", tools_dir(), tool, args, o, e);
    int st = system(cmd);
    free(g_out);
    free(g_err);
    g_out = slurp(o);
    g_err = slurp(e);
    ck_assert_msg(st != -1 && WIFEXITED(st), "%s did not exit normally", cmd);
    return WEXITSTATUS(st);
}

/* Runs tool with "args --json", which must exit 0, and parses its stdout
 * (the caller frees it). */
static cJSON *run_json(const char *tool, const char *args)
{
    char all[2048];
    snprintf(all, sizeof all, "%s --json", args);
    ck_assert_msg(run(tool, all) == 0, "%s %s:\n%s%s", tool, all, g_out, g_err);
    cJSON *j = cJSON_Parse(g_out);
    ck_assert_msg(j != NULL, "%s %s: not JSON:\n%s", tool, all, g_out);
    return j;
}

static void setup(void)
{
    snprintf(g_tmp, sizeof g_tmp, "/tmp/sdpa-tools-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(g_tmp));
    unsetenv("SDPA_BACKEND");
    unsetenv("SDPA_DEVICE");
}

static void teardown(void)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_tmp);
    ck_assert_int_eq(system(cmd), 0);
    free(g_out);
    free(g_err);
    g_out = g_err = NULL;
}

static const char *last_line(const char *s)
{
    static char buf[512];
    size_t n = strlen(s);
    while (n > 0 && s[n - 1] == '\n')
        n--;
    size_t b = n;
    while (b > 0 && s[b - 1] != '\n')
        b--;
    snprintf(buf, sizeof buf, "%.*s", (int)(n - b), s + b);
    return buf;
}

static int count_cases_in(const char *dir)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char p[1400];
        struct stat st;
        snprintf(p, sizeof p, "%.1023s/%.255s/case.json", dir, e->d_name);
        n += e->d_name[0] != '.' && stat(p, &st) == 0;
    }
    closedir(d);
    return n;
}

static int count_cases(void) { return count_cases_in(conf_dir()); }

static int count_cases_wave2(void)
{
    char d[1100];
    snprintf(d, sizeof d, "%s-wave2", conf_dir());
    return count_cases_in(d);
}
#define count_cases_in_wave2 count_cases_wave2

/* sdpa-check on every corpus with `backend`: the repository's passes whole
 * with the exact summary line; in an extra one nothing fails (a case the
 * backend refuses is UNSUPPORTED, allowed here). */
static void check_all_corpora(const char *backend)
{
    char dirs[TCORPUS_MAX][1024], args[1100], want[64];
    int nd = tcorpus_dirs(dirs, TCORPUS_MAX);
    for (int k = 0; k < nd; k++) {
        int n = count_cases_in(dirs[k]), passed, failed, unsupported;
        snprintf(args, sizeof args, "--backend %.32s %s '%.1023s'", backend,
                 k ? "--allow-unsupported" : "", dirs[k]);
        ck_assert_msg(run("sdpa-check", args) == 0, "%s:\n%.2000s", dirs[k], g_out);
        ck_assert_ptr_null(strstr(g_out, "FAIL"));
        if (k == 0) {
            ck_assert_int_ge(n, 18);
            snprintf(want, sizeof want, "%d passed, 0 failed, 0 unsupported", n);
            ck_assert_str_eq(last_line(g_out), want);
            continue;
        }
        ck_assert_int_eq(sscanf(last_line(g_out), "%d passed, %d failed, %d unsupported",
                                &passed, &failed, &unsupported), 3);
        ck_assert_int_eq(failed, 0);
        ck_assert_int_eq(passed + unsupported, n);
    }
}

/* ---- sdpa-check ------------------------------------------------------------------------ */

START_TEST(check_reference_all_pass)
{
    char args[1024];
    check_all_corpora("reference");
    snprintf(args, sizeof args, "--backend reference '%s'", conf_dir());
    ck_assert_int_eq(run("sdpa-check", args), 0);
    ck_assert_ptr_nonnull(strstr(g_out, "PASS basic  out max_abs="));
    ck_assert_ptr_nonnull(strstr(g_out, "PASS backward_softcap  out max_abs="));
    ck_assert_ptr_nonnull(strstr(g_out, " dq max_abs="));
    /* one case folder, verbose */
    snprintf(args, sizeof args, "-v --backend=reference '%s/basic'", conf_dir());
    ck_assert_int_eq(run("sdpa-check", args), 0);
    ck_assert_str_eq(last_line(g_out), "1 passed, 0 failed, 0 unsupported");
    ck_assert_ptr_nonnull(strstr(g_out, "# backend reference"));
    /* the wave-2 corpus: every case, dsinks compared */
    snprintf(args, sizeof args, "--backend reference '%s-wave2'", conf_dir());
    ck_assert_msg(run("sdpa-check", args) == 0, "%.3000s", g_out);
    char want[64];
    snprintf(want, sizeof want, "%d passed, 0 failed, 0 unsupported",
             count_cases_in_wave2());
    ck_assert_str_eq(last_line(g_out), want);
    ck_assert_ptr_nonnull(strstr(g_out, " dsinks max_abs="));
}
END_TEST

START_TEST(check_cpu_when_compiled)
{
    if (!sdpa_backend_compiled(SDPA_BACKEND_CPU)) {
        ck_assert_int_eq(run("sdpa-check", "--backend cpu /nonexistent"), 1);
        ck_assert_ptr_nonnull(strstr(g_err, "cannot create a context"));
        return;
    }
    check_all_corpora("cpu");
}
END_TEST

static void spit(const char *dir, const char *name, const void *data, size_t n)
{
    char p[700];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(data, 1, n, f), n);
    fclose(f);
}

START_TEST(check_unsupported_fails_unless_allowed)
{
    /* One key, D = 65536: out = v. The reference computes it; the cpu
     * backend may refuse it, which sdpa-check reports as UNSUPPORTED: a
     * failure (exit 1) unless --allow-unsupported (exit 0). */
    enum { D = 65536 };
    char dir[600], args[800];
    snprintf(dir, sizeof dir, "%s/big_d", g_tmp);
    ck_assert_int_eq(mkdir(dir, 0755), 0);
    float *x = malloc(D * sizeof *x);
    for (int i = 0; i < D; i++)
        x[i] = (float)((i * 7919) % 13) / 13.0f - 0.5f;
    spit(dir, "q.f32", x, D * sizeof *x);
    spit(dir, "k.f32", x, D * sizeof *x);
    free(x);
    const float v[2] = {0.5f, -1.25f};
    spit(dir, "v.f32", v, sizeof v);
    spit(dir, "out.expected.f32", v, sizeof v);
    char json[1024];
    int n = snprintf(json, sizeof json,
                     "{\"format\": \"sdpa-case/1\", \"name\": \"big_d\", \"op\": \"forward\", "
                     "\"dtype\": \"f32\", \"inputs\": {"
                     "\"q\": {\"dtype\": \"f32\", \"shape\": [1,1,1,%d], \"file\": \"q.f32\"}, "
                     "\"k\": {\"dtype\": \"f32\", \"shape\": [1,1,1,%d], \"file\": \"k.f32\"}, "
                     "\"v\": {\"dtype\": \"f32\", \"shape\": [1,1,1,2], \"file\": \"v.f32\"}}, "
                     "\"expected\": {\"out\": {\"dtype\": \"f32\", \"shape\": [1,1,1,2], "
                     "\"file\": \"out.expected.f32\"}}, "
                     "\"tolerance\": {\"max_abs\": 1e-6, \"rel_l2\": 1e-6}}",
                     D, D);
    spit(dir, "case.json", json, (size_t)n);
    snprintf(args, sizeof args, "--backend reference '%s'", dir);
    ck_assert_int_eq(run("sdpa-check", args), 0);
    ck_assert_str_eq(last_line(g_out), "1 passed, 0 failed, 0 unsupported");
    if (!sdpa_backend_compiled(SDPA_BACKEND_CPU))
        return;
    snprintf(args, sizeof args, "--backend cpu '%s'", dir);
    int rc = run("sdpa-check", args);
    if (strstr(g_out, "UNSUPPORTED")) {
        ck_assert_int_eq(rc, 1);
        ck_assert_ptr_nonnull(strstr(g_out, "UNSUPPORTED big_d  (sdpa_plan_create: SDPA_ERR_UNSUPPORTED"));
        ck_assert_str_eq(last_line(g_out), "0 passed, 0 failed, 1 unsupported");
        snprintf(args, sizeof args, "--backend cpu --allow-unsupported '%s'", dir);
        ck_assert_int_eq(run("sdpa-check", args), 0);
        ck_assert_str_eq(last_line(g_out), "0 passed, 0 failed, 1 unsupported (allowed)");
    } else {
        ck_assert_int_eq(rc, 0);
        ck_assert_str_eq(last_line(g_out), "1 passed, 0 failed, 0 unsupported");
    }
}
END_TEST

/* A copy of the corpus case `src` as g_tmp/suite/NAME, named NAME, with an
 * extra input KEY (dtype, shape, a zero-filled file of `bytes`); key NULL
 * adds nothing. Returns the folder. */
static const char *variant(const char *src, const char *name, const char *key,
                           const char *dtype, const int *shape, int rank, size_t bytes)
{
    static char dir[700];
    char cmd[2200], p[800], file[64];
    snprintf(dir, sizeof dir, "%s/suite/%s", g_tmp, name);
    snprintf(cmd, sizeof cmd, "mkdir -p '%s/suite' && cp -r '%s/%s' '%s'", g_tmp, conf_dir(), src,
             dir);
    ck_assert_int_eq(system(cmd), 0);
    snprintf(p, sizeof p, "%s/case.json", dir);
    char *text = slurp(p);
    cJSON *j = cJSON_Parse(text);
    free(text);
    ck_assert_ptr_nonnull(j);
    cJSON_ReplaceItemInObject(j, "name", cJSON_CreateString(name));
    if (key) {
        cJSON *in = cJSON_GetObjectItem(j, "inputs"), *e = cJSON_CreateObject();
        snprintf(file, sizeof file, "%s.%s", key, dtype);
        cJSON_AddStringToObject(e, "dtype", dtype);
        cJSON_AddItemToObject(e, "shape", cJSON_CreateIntArray(shape, rank));
        cJSON_AddStringToObject(e, "file", file);
        if (cJSON_GetObjectItem(in, key))
            cJSON_ReplaceItemInObject(in, key, e);
        else
            cJSON_AddItemToObject(in, key, e);
        char *zero = calloc(1, bytes);
        spit(dir, file, zero, bytes);
        free(zero);
    }
    text = cJSON_Print(j);
    spit(dir, "case.json", text, strlen(text));
    cJSON_free(text);
    cJSON_Delete(j);
    return dir;
}

/* The wave-2 inputs are read and checked like the others: zero ALiBi
 * slopes are no ALiBi (PASS), pages without a block table and a K/V pair in
 * two dtypes FAIL naming the problem; a folder of self-symlinks does not
 * repeat them. */
START_TEST(check_wave2_inputs)
{
    const int h[1] = {2}, pages[4] = {4, 2, 32, 16}, kq[4] = {1, 2, 65, 32};
    char args[800], p[800];
    variant("basic", "a_plain", NULL, NULL, NULL, 0, 0);
    variant("basic", "alibi", "alibi_slopes", "f32", h, 1, 8);
    variant("basic", "paged", "k_pages", "f32", pages, 4, 4 * 2 * 32 * 16 * 4);
    variant("basic", "q8_0", "k", "q8_0", kq, 4, 2 * 65 * 34);
    for (int i = 0; i < 6; i++) {
        snprintf(p, sizeof p, "%s/suite/self%d", g_tmp, i);
        ck_assert_int_eq(symlink(".", p), 0);
    }
    snprintf(args, sizeof args, "--backend reference '%s/suite'", g_tmp);
    ck_assert_msg(run("sdpa-check", args) == 1, "%.2000s", g_out);
    ck_assert_str_eq(last_line(g_out), "2 passed, 2 failed, 0 unsupported");
    ck_assert_ptr_nonnull(strstr(g_out, "PASS a_plain "));
    ck_assert_ptr_nonnull(strstr(g_out, "PASS alibi "));
    ck_assert_ptr_nonnull(strstr(g_out, "FAIL paged  (inputs: \"k_pages\" needs block_table"));
    ck_assert_ptr_nonnull(strstr(g_out, "FAIL q8_0  (inputs.v: dtype f32 differs from k's q8_0"));
}
END_TEST

START_TEST(check_broken_case_fails)
{
    char dir[600], p[700], args[1400];
    snprintf(dir, sizeof dir, "%s/broken", g_tmp);
    ck_assert_int_eq(mkdir(dir, 0755), 0);
    snprintf(p, sizeof p, "%s/case.json", dir);
    FILE *f = fopen(p, "w");
    fputs("{\"format\": \"sdpa-case/1\", ", f);
    fclose(f);
    snprintf(args, sizeof args, "--backend reference '%s' '%s/basic' /nonexistent/cases", dir,
             conf_dir());
    ck_assert_int_eq(run("sdpa-check", args), 1);
    ck_assert_str_eq(last_line(g_out), "1 passed, 2 failed, 0 unsupported");
    ck_assert_ptr_nonnull(strstr(g_out, "FAIL broken  (case.json: invalid JSON"));
    ck_assert_ptr_nonnull(strstr(g_out, "FAIL /nonexistent/cases  (/nonexistent/cases: not a folder)"));
    /* a folder without any case */
    snprintf(p, sizeof p, "%s/empty", g_tmp);
    ck_assert_int_eq(mkdir(p, 0755), 0);
    snprintf(args, sizeof args, "--backend reference '%s'", p);
    ck_assert_int_eq(run("sdpa-check", args), 1);
    ck_assert_ptr_nonnull(strstr(g_out, "no case.json found"));
}
END_TEST

START_TEST(check_usage_errors)
{
    ck_assert_int_eq(run("sdpa-check", "--help"), 0);
    ck_assert_ptr_nonnull(strstr(g_out, "usage: sdpa-check"));
    ck_assert_int_eq(run("sdpa-check", "-h"), 0);
    ck_assert_int_eq(run("sdpa-check", "--bogus x"), 2);
    ck_assert_ptr_nonnull(strstr(g_err, "unknown option --bogus"));
    ck_assert_int_eq(run("sdpa-check", ""), 2);
    ck_assert_ptr_nonnull(strstr(g_err, "no PATH given"));
    ck_assert_int_eq(run("sdpa-check", "--backend nosuch x"), 2);
    ck_assert_ptr_nonnull(strstr(g_err, "unknown backend \"nosuch\""));
    ck_assert_int_eq(run("sdpa-check", "x --backend"), 2);
    ck_assert_ptr_nonnull(strstr(g_err, "--backend needs a value"));
    ck_assert_int_eq(run("sdpa-check", "--help=yes"), 2);
    ck_assert_ptr_eq(strstr(g_out, "passed"), NULL);
    ck_assert_int_eq(run("sdpa-check", "--unfused=1 x"), 2);
    ck_assert_ptr_nonnull(strstr(g_err, "--unfused takes no value"));
}
END_TEST

/* --unfused forces tile.unfused = 1: the reference backend has no such path,
 * so every case is UNSUPPORTED and says why: exit 1, or 0 with
 * --allow-unsupported. */
START_TEST(check_unfused_flag)
{
    char args[1024], want[64];
    snprintf(args, sizeof args, "--backend reference --unfused '%s'", conf_dir());
    ck_assert_int_eq(run("sdpa-check", args), 1);
    snprintf(args, sizeof args, "--backend reference --unfused --allow-unsupported '%s'",
             conf_dir());
    ck_assert_int_eq(run("sdpa-check", args), 0);
    snprintf(want, sizeof want, "0 passed, 0 failed, %d unsupported (allowed)", count_cases());
    ck_assert_str_eq(last_line(g_out), want);
    ck_assert_ptr_nonnull(strstr(g_out, "OpenCL backend only"));
}
END_TEST

/* --tile forces a configuration by parameter name: the cpu backend runs a
 * value in its table and refuses (UNSUPPORTED, with the checker's message)
 * one outside it; unknown names and non-integers are usage errors. */
START_TEST(check_tile_flag)
{
    char args[1024], want[64];
    snprintf(args, sizeof args, "--backend cpu --tile q_tile=32,k_tile=48,split_kv=auto '%s'",
             conf_dir());
    ck_assert_int_eq(run("sdpa-check", args), 0);
    snprintf(want, sizeof want, "%d passed", count_cases());
    ck_assert_msg(strncmp(last_line(g_out), want, strlen(want)) == 0, "%s", g_out);
    snprintf(args, sizeof args, "--backend cpu --tile q_tile=20 --allow-unsupported '%s'",
             conf_dir());
    ck_assert_int_eq(run("sdpa-check", args), 0);
    snprintf(want, sizeof want, "0 passed, 0 failed, %d unsupported (allowed)", count_cases());
    ck_assert_str_eq(last_line(g_out), want);
    ck_assert_ptr_nonnull(strstr(g_out, "cpu: tile.q_tile 20 is out of range"));
    ck_assert_int_eq(run("sdpa-check", "--tile bogus=1 x"), 2);
    ck_assert_ptr_nonnull(strstr(g_err, "no parameter \"bogus\""));
    ck_assert_int_eq(run("sdpa-check", "--tile q_tile=3x x"), 2);
    ck_assert_ptr_nonnull(strstr(g_err, "expected an integer or auto"));
}
END_TEST

/* ---- sdpa-info ---------------------------------------------------------------------------- */

START_TEST(info_json)
{
    ck_assert_int_eq(run("sdpa-info", "--json"), 0);
    cJSON *j = cJSON_Parse(g_out);
    ck_assert_msg(j != NULL, "sdpa-info --json is not JSON:\n%s", g_out);
    ck_assert_str_eq(cJSON_GetObjectItem(j, "version")->valuestring, sdpa_version_string());
    cJSON *bs = cJSON_GetObjectItem(j, "backends");
    ck_assert(cJSON_IsArray(bs));
    ck_assert_int_eq(cJSON_GetArraySize(bs), 4);
    int found_ref = 0;
    cJSON *b;
    cJSON_ArrayForEach(b, bs)
    {
        const char *name = cJSON_GetObjectItem(b, "name")->valuestring;
        sdpa_backend_kind k;
        ck_assert_int_eq(sdpa_backend_parse(name, &k), SDPA_OK);
        ck_assert_int_eq(cJSON_IsTrue(cJSON_GetObjectItem(b, "compiled")),
                         sdpa_backend_compiled(k));
        if (k == SDPA_BACKEND_REFERENCE) {
            found_ref = 1;
            cJSON *devs = cJSON_GetObjectItem(b, "devices");
            ck_assert_int_ge(cJSON_GetArraySize(devs), 1);
            cJSON *d0 = cJSON_GetArrayItem(devs, 0);
            ck_assert_str_eq(cJSON_GetObjectItem(d0, "type")->valuestring, "CPU");
            ck_assert(cJSON_IsNumber(cJSON_GetObjectItem(d0, "compute_units")));
        }
    }
    ck_assert(found_ref);
    cJSON *au = cJSON_GetObjectItem(j, "auto");
    ck_assert_str_eq(cJSON_GetObjectItem(au, "status")->valuestring, "SDPA_OK");
    ck_assert(cJSON_IsString(cJSON_GetObjectItem(au, "backend")));
    ck_assert(cJSON_IsString(cJSON_GetObjectItem(au, "why")));
    /* tests set SDPA_PROFILE_DIR: the tool reports it as the source */
    cJSON *pd = cJSON_GetObjectItem(j, "profile_dir");
    if (getenv("SDPA_PROFILE_DIR") && *getenv("SDPA_PROFILE_DIR")) {
        ck_assert_str_eq(cJSON_GetObjectItem(pd, "path")->valuestring, getenv("SDPA_PROFILE_DIR"));
        ck_assert_str_eq(cJSON_GetObjectItem(pd, "source")->valuestring, "SDPA_PROFILE_DIR");
    }
    ck_assert(cJSON_IsObject(cJSON_GetObjectItem(j, "cache_dir")));
    /* tests set SDPA_SHIPPED_PROFILE_DIR too (the shipped suite covers the
     * build-tree rule, scripts/install-check.sh the installed one) */
    cJSON *sp = cJSON_GetObjectItem(j, "shipped_profiles");
    const char *shipped = getenv("SDPA_SHIPPED_PROFILE_DIR");
    ck_assert(cJSON_IsObject(sp));
    ck_assert(cJSON_IsNumber(cJSON_GetObjectItem(sp, "matching")));
    if (shipped && *shipped) {
        ck_assert_str_eq(cJSON_GetObjectItem(sp, "path")->valuestring, shipped);
        ck_assert_str_eq(cJSON_GetObjectItem(sp, "found_by")->valuestring,
                         "SDPA_SHIPPED_PROFILE_DIR");
        ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "environment"),
                                             "SDPA_SHIPPED_PROFILE_DIR")->valuestring, shipped);
    }
    cJSON_Delete(j);
}
END_TEST

START_TEST(info_text_and_usage)
{
    ck_assert_int_eq(run("sdpa-info", ""), 0);
    ck_assert_ptr_nonnull(strstr(g_out, "libsdpa "));
    ck_assert_ptr_nonnull(strstr(g_out, "auto: "));
    ck_assert_ptr_nonnull(strstr(g_out, "reference  compiled in"));
    ck_assert_ptr_nonnull(strstr(g_out, "\nshipped profiles: "));
    ck_assert_int_eq(run("sdpa-info", "--help"), 0);
    ck_assert_ptr_nonnull(strstr(g_out, "usage: sdpa-info"));
    ck_assert_int_eq(run("sdpa-info", "--jsn"), 2);
    ck_assert_ptr_nonnull(strstr(g_err, "unknown option --jsn"));
    ck_assert_int_eq(run("sdpa-info", "extra"), 2);
}
END_TEST

/* --tiles: the cpu table as the bounds query gives it, text and JSON. */
START_TEST(info_tiles)
{
    ck_assert_int_eq(run("sdpa-info", "--tiles"), 0);
    ck_assert_msg(strstr(g_out, "  cpu        q_tile       16..256 x16    64 ") != NULL, "%s", g_out);
    ck_assert_ptr_null(strstr(g_out, "cpu        wg_size"));
    ck_assert_int_eq(run("sdpa-info", "--tiles --json"), 0);
    cJSON *j = cJSON_Parse(g_out);
    ck_assert_msg(cJSON_IsArray(j), "not a JSON array:\n%s", g_out);
    int cpu = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, j) {
        const cJSON *be = cJSON_GetObjectItem(e, "backend");
        if (!cJSON_IsString(be) || strcmp(be->valuestring, "cpu") != 0) continue;
        cpu++;
        const char *name = cJSON_GetObjectItem(e, "name")->valuestring;
        if (strcmp(name, "k_tile") == 0) {
            ck_assert_int_eq(cJSON_GetObjectItem(e, "hi")->valueint, 512);
            ck_assert_int_eq(cJSON_GetObjectItem(e, "multiple")->valueint, 16);
        }
    }
    ck_assert_int_eq(cpu, 4);
    cJSON_Delete(j);
}
END_TEST

/* ---- sdpa-bench ----------------------------------------------------------------------------- */

/* Runs one bench shape as JSON and returns flops implied by gflops*ms. */
static double bench_flops(const char *extra, const char *op)
{
    char args[512];
    snprintf(args, sizeof args, "--backend reference --repeat 2 --warmup 0 --json --no-peak %s",
             extra);
    ck_assert_msg(run("sdpa-bench", args) == 0, "sdpa-bench %s:\n%s%s", args, g_out, g_err);
    cJSON *j = cJSON_Parse(g_out);
    ck_assert_msg(j != NULL, "not JSON:\n%s", g_out);
    cJSON *r, *hit = NULL;
    cJSON_ArrayForEach(r, cJSON_GetObjectItem(j, "results"))
    {
        if (strcmp(cJSON_GetObjectItem(r, "op")->valuestring, op) == 0)
            hit = r;
    }
    ck_assert_ptr_nonnull(hit);
    ck_assert(cJSON_IsNull(cJSON_GetObjectItem(j, "peaks")));
    ck_assert(cJSON_IsNull(cJSON_GetObjectItem(hit, "peak_frac")));
    ck_assert_str_eq(cJSON_GetObjectItem(hit, "status")->valuestring, "ok");
    double g = cJSON_GetObjectItem(hit, "gflops")->valuedouble;
    double ms = cJSON_GetObjectItem(hit, "median_ms")->valuedouble;
    double mn = cJSON_GetObjectItem(hit, "min_ms")->valuedouble;
    double mx = cJSON_GetObjectItem(hit, "max_ms")->valuedouble;
    ck_assert(mn > 0 && mn <= ms && ms <= mx);
    ck_assert_double_eq_tol(cJSON_GetObjectItem(hit, "vs_first")->valuedouble, 1.0, 1e-12);
    cJSON_Delete(j);
    return g * 1e9 * ms * 1e-3;
}

START_TEST(bench_flop_counts)
{
    /* B2 Hq2: 4 heads; D 16, Dv 8: 2*(16+8) = 48 flops per kept pair. */
    double full = bench_flops("--shape 2,2,1,8,8,16,8", "fwd");
    ck_assert_double_eq_tol(full, 4 * 64 * 48.0, 1e-6 * full);
    /* causal, Sq = Skv = 8: 36 kept pairs */
    double causal = bench_flops("--shape 2,2,1,8,8,16,8 --causal", "fwd");
    ck_assert_double_eq_tol(causal, 4 * 36 * 48.0, 1e-6 * causal);
    /* window (2, 1), top-left: 2+3+4+4+4+4+4+3 = 28 pairs */
    double win = bench_flops("--shape 2,2,1,8,8,16,8 --window 2,1 --diagonal top_left", "fwd");
    ck_assert_double_eq_tol(win, 4 * 28 * 48.0, 1e-6 * win);
    /* decode with bottom-right causal: Sq 1 sees all 8 keys */
    double dec = bench_flops("--shape 1,1,1,1,8,16 --causal", "fwd");
    ck_assert_double_eq_tol(dec, 8 * 64.0, 1e-6 * dec);
    /* top-left causal at Sq 1 sees key 0 only */
    dec = bench_flops("--shape 1,1,1,1,8,16 --causal --diagonal top_left", "fwd");
    ck_assert_double_eq_tol(dec, 1 * 64.0, 1e-6 * dec);
    /* backward counts 2.5x */
    double bwd = bench_flops("--shape 1,2,2,8,8,16 --causal --backward --stats", "bwd");
    ck_assert_double_eq_tol(bwd, 2.5 * 2 * 36 * 64.0, 1e-6 * bwd);
}
END_TEST

START_TEST(bench_table_and_csv)
{
    ck_assert_int_eq(run("sdpa-bench", "--backend reference --shape 1,2,2,16,16,32 --repeat 2 "
                                        "--warmup 1 --backward"), 0);
    ck_assert_ptr_nonnull(strstr(g_out, "GFLOP/s"));
    ck_assert_ptr_nonnull(strstr(g_out, "reference"));
    ck_assert_ptr_nonnull(strstr(g_out, "1,2,2,16,16,32,32"));
    ck_assert_ptr_nonnull(strstr(g_out, " fwd "));
    ck_assert_ptr_nonnull(strstr(g_out, " bwd "));
    ck_assert_int_eq(run("sdpa-bench", "--backend reference --shape 1,1,1,4,4,8 --repeat 1 "
                                        "--warmup 0 --csv --dtype bf16"), 0);
    /* header + one row */
    int lines = 0;
    for (const char *p = g_out; *p; p++)
        lines += *p == '\n';
    ck_assert_int_eq(lines, 2);
    ck_assert_ptr_nonnull(strstr(g_out, "backend,device,op,shape,mask,dtype,plan_ms"));
    ck_assert_ptr_nonnull(strstr(g_out, "\"1,1,1,4,4,8,8\",none,bf16"));
    /* new columns go at the end: vs_base and its quartiles, empty without
     * --interleave, then touch_bytes, empty without --gap-touch */
    ck_assert_ptr_nonnull(strstr(g_out, ",status,vs_base,vs_base_q1,vs_base_q3,touch_bytes\n"));
    ck_assert_ptr_nonnull(strstr(g_out, ",ok,,,,\n"));
    /* --max-seconds: a tiny budget leaves exactly one timed run */
    const char *runs[][2] = {{"", "5"}, {"--max-seconds 1e-9", "1"}};
    for (int i = 0; i < 2; i++) {
        char args[256];
        snprintf(args, sizeof args, "--backend reference --shape 1,1,1,4,4,8 --repeat 5 "
                                    "--warmup 2 --no-peak --json %s", runs[i][0]);
        ck_assert_int_eq(run("sdpa-bench", args), 0);
        cJSON *j = cJSON_Parse(g_out);
        ck_assert_ptr_nonnull(j);
        cJSON *r0 = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "results"), 0);
        ck_assert_int_eq(cJSON_GetObjectItem(r0, "runs")->valueint, atoi(runs[i][1]));
        cJSON_Delete(j);
    }
}
END_TEST

/* The one entry of the JSON "peaks" array (backend reference): its gflops,
 * checking the method and whether it came from the cache. */
static double bench_peak_entry(cJSON *j, int want_cached)
{
    cJSON *pa = cJSON_GetObjectItem(j, "peaks");
    ck_assert(cJSON_IsArray(pa));
    ck_assert_int_eq(cJSON_GetArraySize(pa), 1);
    cJSON *pk = cJSON_GetArrayItem(pa, 0);
    ck_assert_str_eq(cJSON_GetObjectItem(pk, "backend")->valuestring, "reference");
    ck_assert_ptr_nonnull(strstr(cJSON_GetObjectItem(pk, "method")->valuestring, "cpu "));
    ck_assert_int_eq(cJSON_IsTrue(cJSON_GetObjectItem(pk, "cached")), want_cached);
    double peak = cJSON_GetObjectItem(pk, "gflops")->valuedouble;
    ck_assert(peak > 0.1 && peak < 1e6);
    return peak;
}

/* Decode rows (Sq <= 16) carry the K/V bytes read per second and their
 * fraction of the measured read bandwidth; other rows carry neither. */
START_TEST(bench_decode_bandwidth)
{
    char args[1024], prof[600];
    snprintf(prof, sizeof prof, "%s/profiles-bw", g_tmp);
    snprintf(args, sizeof args,
             "--backend cpu --shape 1,4,2,1,512,64 --shape 1,2,2,64,64,32 --dtype f16 "
             "--repeat 1 --warmup 0 --json --profile-dir '%s'", prof);
    ck_assert_int_eq(run("sdpa-bench", args), 0);
    cJSON *j = cJSON_Parse(g_out);
    ck_assert_ptr_nonnull(j);
    cJSON *bws = cJSON_GetObjectItem(j, "bandwidths");
    ck_assert_int_eq(cJSON_GetArraySize(bws), 1);
    cJSON *bw = cJSON_GetArrayItem(bws, 0);
    const double gbps = cJSON_GetObjectItem(bw, "gbps")->valuedouble;
    ck_assert(gbps > 0.01 && gbps < 1e5);
    ck_assert_ptr_nonnull(strstr(cJSON_GetObjectItem(bw, "method")->valuestring, "cpu read "));
    cJSON *res = cJSON_GetObjectItem(j, "results");
    ck_assert_int_eq(cJSON_GetArraySize(res), 2);
    cJSON *dec = cJSON_GetArrayItem(res, 0), *pre = cJSON_GetArrayItem(res, 1);
    /* B1 Hkv2 Skv512 D=Dv=64 f16: 2 * 512 * 128 * 2 bytes */
    const double want = 2.0 * 512 * 128 * 2 / (cJSON_GetObjectItem(dec, "median_ms")->valuedouble * 1e-3) / 1e9;
    const double got = cJSON_GetObjectItem(dec, "kv_gbps")->valuedouble;
    ck_assert_double_eq_tol(got, want, 1e-9 * want);
    ck_assert_double_eq(cJSON_GetObjectItem(dec, "bandwidth_gbps")->valuedouble, gbps);
    ck_assert_double_eq_tol(cJSON_GetObjectItem(dec, "bw_frac")->valuedouble, got / gbps,
                            1e-9 * got / gbps);
    ck_assert(cJSON_IsNull(cJSON_GetObjectItem(pre, "kv_gbps")));
    ck_assert(cJSON_IsNull(cJSON_GetObjectItem(pre, "bw_frac")));
    cJSON_Delete(j);
    snprintf(args, sizeof args,
             "--backend cpu --shape 1,4,2,1,512,64 --repeat 1 --warmup 0 --csv --profile-dir '%s'",
             prof);
    ck_assert_int_eq(run("sdpa-bench", args), 0);
    ck_assert_ptr_nonnull(strstr(g_out, ",gflops,kv_gbps,bw_frac,peak_frac,"));
    ck_assert_ptr_null(strstr(g_out, "read_ms")); /* only with --read-ref */
    snprintf(args, sizeof args,
             "--backend cpu --shape 1,4,2,1,512,64 --repeat 1 --warmup 0 --profile-dir '%s'", prof);
    ck_assert_int_eq(run("sdpa-bench", args), 0);
    ck_assert_ptr_nonnull(strstr(g_out, " % bw "));
    ck_assert_ptr_nonnull(strstr(g_out, "\n% bw: decode rows"));
    /* --refresh-peak measures the bandwidth again after the rows too; the
     * rows use the first, the cache keeps the second */
    snprintf(args, sizeof args,
             "--backend cpu --shape 1,4,2,1,512,64 --repeat 1 --warmup 0 --json --refresh-peak "
             "--profile-dir '%s'", prof);
    ck_assert_int_eq(run("sdpa-bench", args), 0);
    j = cJSON_Parse(g_out);
    ck_assert_ptr_nonnull(j);
    bw = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "bandwidths"), 0);
    const double first = cJSON_GetObjectItem(bw, "gbps")->valuedouble;
    const double later = cJSON_GetObjectItem(bw, "gbps_after")->valuedouble;
    ck_assert(later > 0.01 && later < 1e5);
    ck_assert_double_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "results"), 0),
                                            "bandwidth_gbps")->valuedouble, first);
    cJSON_Delete(j);
    snprintf(args, sizeof args,
             "--backend cpu --shape 1,4,2,1,512,64 --repeat 1 --warmup 0 --json --profile-dir '%s'",
             prof);
    ck_assert_int_eq(run("sdpa-bench", args), 0);
    j = cJSON_Parse(g_out);
    ck_assert_ptr_nonnull(j);
    bw = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "bandwidths"), 0);
    ck_assert_double_eq(cJSON_GetObjectItem(bw, "gbps")->valuedouble, later);
    ck_assert(cJSON_IsNull(cJSON_GetObjectItem(bw, "gbps_after")));
    cJSON_Delete(j);
}
END_TEST

/* --read-ref: every forward row gets the median of a plain read of its K/V
 * bytes after the same pause, and the ratio to it, in JSON, CSV and the
 * table; backward rows get none. About 0.5 s. */
START_TEST(bench_read_reference)
{
    const char *args = "--backend cpu --shape 1,4,2,1,512,64 --shape 1,2,2,16,16,16 --backward "
                       "--repeat 3 --warmup 0 --gap-ms 2 --read-ref --no-peak";
    char more[512];
    snprintf(more, sizeof more, "%s --json", args);
    ck_assert_msg(run("sdpa-bench", more) == 0, "sdpa-bench %s:\n%s%s", more, g_out, g_err);
    cJSON *j = cJSON_Parse(g_out);
    ck_assert_ptr_nonnull(j);
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(j, "read_ref")));
    int fwd = 0, bwd = 0;
    cJSON *r;
    cJSON_ArrayForEach(r, cJSON_GetObjectItem(j, "results"))
    {
        ck_assert_str_eq(cJSON_GetObjectItem(r, "status")->valuestring, "ok");
        cJSON *rd = cJSON_GetObjectItem(r, "read_ms"), *vs = cJSON_GetObjectItem(r, "vs_read");
        if (strcmp(cJSON_GetObjectItem(r, "op")->valuestring, "bwd") == 0) {
            ck_assert(cJSON_IsNull(rd) && cJSON_IsNull(vs));
            bwd++;
            continue;
        }
        const double med = cJSON_GetObjectItem(r, "median_ms")->valuedouble;
        ck_assert_msg(cJSON_IsNumber(rd) && rd->valuedouble > 0 && rd->valuedouble < 1e3,
                      "read_ms %s", cJSON_Print(rd));
        ck_assert_double_eq_tol(vs->valuedouble, med / rd->valuedouble,
                                1e-9 * med / rd->valuedouble);
        fwd++;
    }
    ck_assert_int_eq(fwd, 2);
    ck_assert_int_eq(bwd, 2);
    cJSON_Delete(j);
    snprintf(more, sizeof more, "%s --csv", args);
    ck_assert_int_eq(run("sdpa-bench", more), 0);
    ck_assert_ptr_nonnull(strstr(g_out, ",vs_first,read_ms,vs_read,mem_mib,"));
    ck_assert_int_eq(run("sdpa-bench", args), 0);
    ck_assert_ptr_nonnull(strstr(g_out, " read ms  vs read "));
    ck_assert_ptr_nonnull(strstr(g_out, "\nvs read: forward rows"));
    ck_assert_ptr_nonnull(strstr(g_out, "\n  cpu       cpu read "));
    /* without the flag: no such columns, no note, and JSON says so */
    ck_assert_int_eq(run("sdpa-bench", "--backend cpu --shape 1,4,2,1,512,64 --repeat 1 "
                                        "--warmup 0 --no-peak --json"), 0);
    j = cJSON_Parse(g_out);
    ck_assert_ptr_nonnull(j);
    ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(j, "read_ref")));
    ck_assert_ptr_null(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "results"), 0),
                                           "read_ms"));
    cJSON_Delete(j);
}
END_TEST

START_TEST(bench_peak_and_plot)
{
    char args[1024], svg[600], prof[600];
    /* a fresh profile dir: the first run measures, the second reads the
     * cache, --refresh-peak measures again */
    snprintf(prof, sizeof prof, "%s/profiles", g_tmp);
    setenv("SDPA_PROFILE_DIR", prof, 1);
    snprintf(svg, sizeof svg, "%s/g.svg", g_tmp);
    snprintf(args, sizeof args, "--backend reference --shape 1,1,1,8,8,16 --shape 1,1,1,16,16,16 "
                                "--repeat 1 --warmup 0 --json --plot '%s'", svg);
    ck_assert_int_eq(run("sdpa-bench", args), 0);
    cJSON *j = cJSON_Parse(g_out);
    ck_assert_ptr_nonnull(j);
    double peak = bench_peak_entry(j, 0);
    cJSON *r;
    int n = 0;
    cJSON_ArrayForEach(r, cJSON_GetObjectItem(j, "results"))
    {
        double g = cJSON_GetObjectItem(r, "gflops")->valuedouble;
        ck_assert_double_eq_tol(cJSON_GetObjectItem(r, "peak_gflops")->valuedouble, peak, 1e-9 * peak);
        ck_assert_double_eq_tol(cJSON_GetObjectItem(r, "peak_frac")->valuedouble, g / peak,
                                1e-9 * g / peak);
        n++;
    }
    ck_assert_int_eq(n, 2);
    cJSON_Delete(j);
    const char *again = "--backend reference --shape 1,1,1,8,8,16 --repeat 1 --warmup 0 --json";
    ck_assert_int_eq(run("sdpa-bench", again), 0);
    j = cJSON_Parse(g_out);
    ck_assert_ptr_nonnull(j);
    ck_assert_double_eq(bench_peak_entry(j, 1), peak);
    /* measured after the rows only with --refresh-peak */
    ck_assert(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "peaks"), 0),
                                               "gflops_after")));
    cJSON_Delete(j);
    /* --refresh-peak: measured before the rows (the figure the rows use) and
     * after them; the cache keeps the later one */
    snprintf(args, sizeof args, "%s --refresh-peak", again);
    ck_assert_int_eq(run("sdpa-bench", args), 0);
    j = cJSON_Parse(g_out);
    ck_assert_ptr_nonnull(j);
    const double before = bench_peak_entry(j, 0);
    const double after =
        cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "peaks"), 0), "gflops_after")
            ->valuedouble;
    ck_assert(after > 0.1 && after < 1e6);
    cJSON *r0 = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "results"), 0);
    ck_assert_double_eq(cJSON_GetObjectItem(r0, "peak_gflops")->valuedouble, before);
    cJSON_Delete(j);
    ck_assert_int_eq(run("sdpa-bench", again), 0);
    j = cJSON_Parse(g_out);
    ck_assert_ptr_nonnull(j);
    ck_assert_double_eq(bench_peak_entry(j, 1), after);
    cJSON_Delete(j);
    snprintf(args, sizeof args, "%s --refresh-peak", "--backend reference --shape 1,1,1,8,8,16 "
                                                     "--repeat 1 --warmup 0");
    ck_assert_int_eq(run("sdpa-bench", args), 0);
    ck_assert_ptr_nonnull(strstr(g_out, "measured before the rows, the figure used, and after them"));
    ck_assert_ptr_nonnull(strstr(g_out, "; measured now; "));
    ck_assert_ptr_nonnull(strstr(g_out, " after the rows ("));
    char *s = slurp(svg);
    ck_assert_ptr_nonnull(strstr(s, "<svg xmlns=\"http://www.w3.org/2000/svg\""));
    ck_assert_ptr_nonnull(strstr(s, "<polyline"));
    ck_assert_ptr_nonnull(strstr(s, ">reference fwd</text>"));
    ck_assert_ptr_nonnull(strstr(s, "</svg>"));
    free(s);
    /* an unwritable plot path fails the run (exit 1) with a message */
    ck_assert_int_eq(run("sdpa-bench", "--backend reference --shape 1,1,1,8,8,16 --repeat 1 "
                                        "--warmup 0 --no-peak --plot /nonexistent/dir/x.svg"), 1);
    ck_assert_ptr_nonnull(strstr(g_err, "--plot: cannot write /nonexistent/dir/x.svg"));
}
END_TEST

/* Fused vs unfused side by side: `opencl-unfused` rows run the CLBlast path
 * forward (kernel "unfused") and report the backward as unsupported, with
 * exit status 0; without CLBlast the forward row is unsupported too. Scores
 * over the workspace limit make an unsupported row, not a failed run. */
START_TEST(bench_opencl_unfused_rows)
{
    int n = 0;
    if (!sdpa_backend_compiled(SDPA_BACKEND_OPENCL) ||
        sdpa_device_count(SDPA_BACKEND_OPENCL, &n) != SDPA_OK || n == 0) {
        fprintf(stderr, "test_tools: no OpenCL device; opencl-unfused rows not checked\n");
        return;
    }
    const char *args = "--backend opencl,opencl-unfused --shape 1,2,1,7,65,32 --backward "
                       "--repeat 1 --warmup 0 --json --no-peak";
    ck_assert_msg(run("sdpa-bench", args) == 0, "sdpa-bench %s:\n%s%s", args, g_out, g_err);
    cJSON *j = cJSON_Parse(g_out);
    ck_assert_msg(j != NULL, "not JSON:\n%s", g_out);
    int seen = 0;
    cJSON *r;
    cJSON_ArrayForEach(r, cJSON_GetObjectItem(j, "results"))
    {
        const char *be = cJSON_GetObjectItem(r, "backend")->valuestring;
        const char *op = cJSON_GetObjectItem(r, "op")->valuestring;
        const char *st = cJSON_GetObjectItem(r, "status")->valuestring;
        const char *kernel = cJSON_GetObjectItem(r, "kernel")->valuestring;
        cJSON *err = cJSON_GetObjectItem(r, "error");
        const char *msg = cJSON_IsString(err) ? err->valuestring : "";
        if (strcmp(be, "opencl") == 0) {
            ck_assert_str_eq(st, "ok");
            ck_assert_str_eq(kernel, "fused");
            seen |= 1;
        } else if (strcmp(be, "opencl-unfused") == 0 && strcmp(op, "fwd") == 0) {
            if (strcmp(st, "ok") == 0)
                ck_assert_str_eq(kernel, "unfused");
            else
                ck_assert_msg(strcmp(st, "unsupported") == 0 && strstr(msg, "CLBlast"),
                              "unfused fwd: %s %s", st, msg);
            seen |= 2;
        } else if (strcmp(be, "opencl-unfused") == 0) {
            ck_assert_str_eq(st, "unsupported");
            seen |= 4;
        }
    }
    ck_assert_int_eq(seen, 7);
    cJSON_Delete(j);

    /* scores beyond the default 256 MiB workspace limit: refused, reported
     * as unsupported with the reason, and not a failed run */
    args = "--backend opencl-unfused --shape 1,1,1,8192,8192,16 --repeat 1 --warmup 0 "
           "--json --no-peak";
    ck_assert_msg(run("sdpa-bench", args) == 0, "sdpa-bench %s:\n%s%s", args, g_out, g_err);
    j = cJSON_Parse(g_out);
    ck_assert_msg(j != NULL, "not JSON:\n%s", g_out);
    cJSON *row = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "results"), 0);
    ck_assert_ptr_nonnull(row);
    ck_assert_str_eq(cJSON_GetObjectItem(row, "status")->valuestring, "unsupported");
    ck_assert_msg(strstr(cJSON_GetObjectItem(row, "error")->valuestring, "SDPA_ERR_WORKSPACE") ||
                      strstr(cJSON_GetObjectItem(row, "error")->valuestring, "CLBlast"),
                  "%s", cJSON_GetObjectItem(row, "error")->valuestring);
    cJSON_Delete(j);
}
END_TEST

START_TEST(bench_usage_errors)
{
    ck_assert_int_eq(run("sdpa-bench", "--help"), 0);
    ck_assert_ptr_nonnull(strstr(g_out, "usage: sdpa-bench"));
    ck_assert_ptr_nonnull(strstr(g_out, "  --read-ref       also time, per forward row, a plain"));
    ck_assert_ptr_nonnull(strstr(g_out, "`vs read` near 1 means"));
    ck_assert_ptr_nonnull(strstr(g_out, "no such reference\n  --json | --csv "));
    const char *bad[][2] = {
        {"--shape 1,2,3", "--shape: expected B,Hq,Hkv,Sq,Skv,D[,Dv]"},
        {"--shape 1,2,2,8,8,0", "--shape: expected"},
        {"--shape 1,2,2,8,8,x", "--shape: expected"},
        {"--shape 1,2,2,8,8,16,16,3", "--shape: expected"},
        {"--shape 1,3,2,8,8,16", "must be a multiple of Hkv"},
        {"--shape", "--shape needs a value"},
        {"--dtype f64", "--dtype: expected f32, f16 or bf16"},
        {"--causal --window 2,0", "exclude each other"},
        {"--window 2", "--window: expected L,R"},
        {"--window -2,0", "--window: expected L,R"},
        {"--backend nosuch", "unknown backend \"nosuch\""},
        {"--preset huge", "unknown preset \"huge\""},
        {"--repeat 0", "--repeat: expected"},
        {"--threads two", "--threads: expected"},
        {"--json --csv", "exclude each other"},
        {"--plot=", "--plot: empty file name"},
        {"--no-peak=1", "--no-peak takes no value"},
        {"--refresh-peak=1", "--refresh-peak takes no value"},
        {"--read-ref=1", "--read-ref takes no value"},
        {"--max-seconds 0", "--max-seconds: expected a number > 0"},
        {"--gemm-params 65", "--gemm-params: expected an integer in [0, 64]"},
        {"--backend opencl-fused", "unknown backend \"opencl-fused\""},
        {"--max-seconds inf", "--max-seconds: expected a number > 0"},
        {"--frobnicate", "unknown option --frobnicate"},
        /* list elements are checked one by one and the bad one is named */
        {"--kv-dtype f32,f64", "--kv-dtype: expected f32, f16, bf16, q8_0 or q4_0, got \"f64\""},
        {"--kv-dtype f16,", "--kv-dtype: expected f32, f16, bf16, q8_0 or q4_0, got \"\""},
        {"--page-size 0,16,x", "--page-size: expected an integer in [0, 1048576] (0 = "
                               "contiguous), got \"x\""},
        {"--page-size 16,-1", "got \"-1\""},
        {"--page-size 0,1048577", "got \"1048577\""},
        {"--page-size 1,2,3,4,5,6,7,8,9", "--page-size: at most 8 values"},
        {"--interleave=1", "--interleave takes no value"},
        {"stray", "unexpected argument stray"},
        /* --gap-touch: only after a pause, only host buffers, dout only backward */
        {"--gap-touch q", "--gap-touch needs --gap-ms above 0"},
        {"--gap-touch q --gap-ms 0", "--gap-touch needs --gap-ms above 0"},
        {"--gap-touch q,x --gap-ms 1", "--gap-touch: expected a comma list of q, k, v, dout, "
                                       "got \"q,x\""},
        {"--gap-touch q,,k --gap-ms 1", "--gap-touch: expected a comma list"},
        {"--gap-touch dout --gap-ms 1", "--gap-touch dout needs --backward"},
        {"--backend cpu,vulkan --gap-touch q --gap-ms 1", "--gap-touch: backend vulkan: only "
                                                          "cpu and reference"},
        {"--backend opencl-unfused --gap-touch q --gap-ms 1", "backend opencl: only cpu"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_msg(run("sdpa-bench", bad[i][0]) == 2, "sdpa-bench %s should exit 2", bad[i][0]);
        ck_assert_msg(strstr(g_err, bad[i][1]) != NULL, "sdpa-bench %s: stderr \"%s\" lacks \"%s\"",
                      bad[i][0], g_err, bad[i][1]);
        ck_assert_str_eq(g_out, "");
    }
}
END_TEST


/* The fields of a result row, for the list and interleave tests. */
static const char *jstr(cJSON *r, const char *k)
{
    cJSON *x = cJSON_GetObjectItem(r, k);
    ck_assert_msg(cJSON_IsString(x), "no string %s", k);
    return x->valuestring;
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* --kv-dtype and --page-size lists: every shape once per combination, K/V
 * type outer, page size inner, in the listed order (not sorted), labelled in
 * the dtype and mask columns; 0 is contiguous; a single value is one row. */
START_TEST(bench_variant_lists)
{
    ck_assert_msg(run("sdpa-bench", "--backend reference --shape 1,2,2,1,32,16 --shape "
                                    "1,1,1,2,8,8 --kv-dtype f16,f32 --page-size 16,0 "
                                    "--repeat 1 --warmup 0 --no-peak --json") == 0,
                  "%s%s", g_out, g_err);
    cJSON *j = cJSON_Parse(g_out);
    ck_assert_ptr_nonnull(j);
    cJSON *res = cJSON_GetObjectItem(j, "results");
    ck_assert_int_eq(cJSON_GetArraySize(res), 8);
    const char *want[8][3] = {
        {"1,2,2,1,32,16,16", "f32/f16", "none+paged16"}, {"1,2,2,1,32,16,16", "f32/f16", "none"},
        {"1,2,2,1,32,16,16", "f32", "none+paged16"},     {"1,2,2,1,32,16,16", "f32", "none"},
        {"1,1,1,2,8,8,8", "f32/f16", "none+paged16"},    {"1,1,1,2,8,8,8", "f32/f16", "none"},
        {"1,1,1,2,8,8,8", "f32", "none+paged16"},        {"1,1,1,2,8,8,8", "f32", "none"},
    };
    for (int i = 0; i < 8; i++) {
        cJSON *r = cJSON_GetArrayItem(res, i);
        ck_assert_str_eq(jstr(r, "shape"), want[i][0]);
        ck_assert_str_eq(jstr(r, "dtype"), want[i][1]);
        ck_assert_str_eq(jstr(r, "mask"), want[i][2]);
        ck_assert_str_eq(jstr(r, "status"), "ok");
    }
    /* no --interleave: no pairing, no order */
    ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(j, "interleave")));
    ck_assert_ptr_null(cJSON_GetObjectItem(j, "order"));
    ck_assert_ptr_null(cJSON_GetObjectItem(cJSON_GetArrayItem(res, 0), "vs_base"));
    cJSON_Delete(j);
    /* single values: one row each, 0 = contiguous */
    const char *one[][2] = {{"--page-size 16", "none+paged16"}, {"--page-size 0", "none"}};
    for (int i = 0; i < 2; i++) {
        char args[256];
        snprintf(args, sizeof args, "--backend reference --shape 1,2,2,1,32,16 --repeat 1 "
                                    "--warmup 0 --no-peak --json %s", one[i][0]);
        ck_assert_int_eq(run("sdpa-bench", args), 0);
        j = cJSON_Parse(g_out);
        res = cJSON_GetObjectItem(j, "results");
        ck_assert_int_eq(cJSON_GetArraySize(res), 1);
        ck_assert_str_eq(jstr(cJSON_GetArrayItem(res, 0), "mask"), one[i][1]);
        cJSON_Delete(j);
    }
}
END_TEST

/* Checks one --interleave JSON run: every round calls the rows in turn from
 * row r mod n on (order holds results indices of forward rows, fwd_rows[k]
 * the k-th); each row's vs_base is the median (q1, q3 the quartiles) of
 * base / row over its rounds_ms, the base being the first row of the same
 * shape and op, whose own is exactly 1. */
static void check_interleave_json(cJSON *j, int repeat, const int *fwd_rows, int n)
{
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(j, "interleave")));
    cJSON *order = cJSON_GetObjectItem(j, "order"), *res = cJSON_GetObjectItem(j, "results");
    ck_assert_int_eq(cJSON_GetArraySize(order), repeat);
    for (int r = 0; r < repeat; r++) {
        cJSON *ro = cJSON_GetArrayItem(order, r);
        ck_assert_int_eq(cJSON_GetArraySize(ro), n);
        for (int k = 0; k < n; k++)
            ck_assert_msg(cJSON_GetArrayItem(ro, k)->valueint == fwd_rows[(r + k) % n],
                          "round %d position %d: row %d, expected %d", r, k,
                          cJSON_GetArrayItem(ro, k)->valueint, fwd_rows[(r + k) % n]);
    }
    const int nres = cJSON_GetArraySize(res);
    for (int i = 0; i < nres; i++) {
        cJSON *x = cJSON_GetArrayItem(res, i), *base = NULL;
        for (int b = 0; b <= i && !base; b++) {
            cJSON *y = cJSON_GetArrayItem(res, b);
            if (!strcmp(jstr(y, "shape"), jstr(x, "shape")) && !strcmp(jstr(y, "op"), jstr(x, "op")))
                base = y;
        }
        ck_assert_str_eq(jstr(x, "status"), "ok");
        ck_assert_int_eq(cJSON_GetObjectItem(x, "runs")->valueint, repeat);
        cJSON *rx = cJSON_GetObjectItem(x, "rounds_ms"), *rb = cJSON_GetObjectItem(base, "rounds_ms");
        ck_assert_int_eq(cJSON_GetArraySize(rx), repeat);
        double q[16];
        for (int k = 0; k < repeat; k++)
            q[k] = cJSON_GetArrayItem(rb, k)->valuedouble / cJSON_GetArrayItem(rx, k)->valuedouble;
        qsort(q, (size_t)repeat, sizeof q[0], cmp_dbl);
        const double med = repeat % 2 ? q[repeat / 2] : 0.5 * (q[repeat / 2 - 1] + q[repeat / 2]);
        const double vb = cJSON_GetObjectItem(x, "vs_base")->valuedouble;
        const double q1 = cJSON_GetObjectItem(x, "vs_base_q1")->valuedouble;
        const double q3 = cJSON_GetObjectItem(x, "vs_base_q3")->valuedouble;
        ck_assert_msg(fabs(vb - med) <= 1e-12 * med, "row %d: vs_base %g, paired median %g", i,
                      vb, med);
        ck_assert(q[0] <= q1 && q1 <= vb && vb <= q3 && q3 <= q[repeat - 1]);
        if (base == x)
            ck_assert(vb == 1.0 && q1 == 1.0 && q3 == 1.0);
        else /* timings of different rows are never all equal */
            ck_assert_msg(vb != 1.0, "row %d: vs_base exactly 1", i);
    }
}

/* --interleave: all rows set up, then round r calls every row once from row
 * r mod n on; `vs base` is the paired ratio to the shape's first row, in
 * JSON (with quartiles and the rounds' times), CSV (last columns) and the
 * table (beside vs first), absent from the table without the flag. Backward
 * rows take their turn with their forward. About 0.2 s. */
START_TEST(bench_interleave)
{
    const char *args = "--backend reference --shape 1,2,2,1,32,16 --shape 1,1,1,2,8,8 "
                       "--kv-dtype f32,f16 --page-size 0,16 --repeat 3 --warmup 1 --no-peak "
                       "--interleave";
    char more[512];
    cJSON *j = run_json("sdpa-bench", args);
    const int rows8[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    check_interleave_json(j, 3, rows8, 8);
    cJSON_Delete(j);
    /* with --backward: forward and backward of a row are its calls of a
     * round; the order names its forward row */
    ck_assert_msg(run("sdpa-bench", "--backend reference --shape 1,1,1,4,8,8 --kv-dtype f32,f16 "
                                    "--backward --repeat 4 --warmup 0 --no-peak --interleave "
                                    "--json") == 0, "%s%s", g_out, g_err);
    j = cJSON_Parse(g_out);
    ck_assert_ptr_nonnull(j);
    const int rows2[2] = {0, 2}; /* fwd f32, bwd f32, fwd f32/f16, bwd f32/f16 */
    check_interleave_json(j, 4, rows2, 2);
    cJSON_Delete(j);
    snprintf(more, sizeof more, "%s --csv", args);
    ck_assert_int_eq(run("sdpa-bench", more), 0);
    ck_assert_ptr_nonnull(strstr(g_out, ",source,status,vs_base,vs_base_q1,vs_base_q3,"
                                        "touch_bytes\n"));
    ck_assert_ptr_nonnull(strstr(g_out, ",ok,1.000,1.000,1.000,\n"));
    ck_assert_int_eq(run("sdpa-bench", args), 0);
    ck_assert_ptr_nonnull(strstr(g_out, "  vs first  vs base  "));
    ck_assert_ptr_null(strstr(g_out, "vs_base_q1"));
    ck_assert_int_eq(run("sdpa-bench", "--backend reference --shape 1,1,1,2,8,8 --repeat 1 "
                                       "--warmup 0 --no-peak"), 0);
    ck_assert_ptr_null(strstr(g_out, "vs base"));
    /* --max-seconds stops a row at its budget and the others go on: the
     * slow row (about 10 ms a call) runs once, the fast one every round */
    ck_assert_int_eq(run("sdpa-bench", "--backend reference --shape 1,4,4,128,128,64 --shape "
                                       "1,1,1,1,16,8 --repeat 4 --warmup 0 --no-peak "
                                       "--interleave --max-seconds 0.004 --json"), 0);
    j = cJSON_Parse(g_out);
    ck_assert_ptr_nonnull(j);
    cJSON *res = cJSON_GetObjectItem(j, "results");
    ck_assert_int_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(res, 0), "runs")->valueint, 1);
    ck_assert_int_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(res, 1), "runs")->valueint, 4);
    cJSON *r0 = cJSON_GetObjectItem(cJSON_GetArrayItem(res, 0), "rounds_ms");
    ck_assert(cJSON_IsNumber(cJSON_GetArrayItem(r0, 0)) && cJSON_IsNull(cJSON_GetArrayItem(r0, 3)));
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "order"), 3)), 1);
    cJSON_Delete(j);
}
END_TEST

/* ---- presets shared by sdpa-tune and sdpa-bench ------------------------------------------ */

/* The --preset block of a tool's --help: the lines after "--preset" up to
 * the next flag. */
static char *preset_help(const char *tool)
{
    ck_assert_int_eq(run(tool, "--help"), 0);
    const char *p = strstr(g_out, "--preset");
    ck_assert_ptr_nonnull(p);
    p = strchr(p, '\n');
    ck_assert_ptr_nonnull(p);
    const char *end = strstr(p, "\n  --");
    ck_assert_ptr_nonnull(end);
    return strndup(p + 1, (size_t)(end - p));
}

/* One table: both tools list the same presets with the same rows. */
START_TEST(presets_same_in_both_tools)
{
    char *bench = preset_help("sdpa-bench");
    char *tune = preset_help("sdpa-tune");
    ck_assert_msg(strstr(tune, bench) == tune, "sdpa-tune's presets:\n%s\nsdpa-bench's:\n%s",
                  tune, bench);
    const char *names[] = {"llm-prefill", "llm-decode", "vit", "mobile", "all"};
    for (int i = 0; i < 5; i++)
        ck_assert_msg(strstr(bench, names[i]), "--help lacks preset %s:\n%s", names[i], bench);
    ck_assert_ptr_nonnull(strstr(bench, "B1 H4 S256 D64 f16"));
    free(bench);
    free(tune);
}
END_TEST

/* `sdpa-tune --preset all` then `sdpa-bench --preset all` on the same profile
 * dir: every bench row runs a configuration from that profile (the tuned
 * one), so each preset row fell in a bucket the tuner wrote. The same dir
 * given as the shipped dir instead says `shipped profile`; an empty one
 * `default`. */
START_TEST(bench_runs_what_tune_tuned)
{
    if (!sdpa_backend_compiled(SDPA_BACKEND_CPU)) {
        fprintf(stderr, "test_tools: no cpu backend; tuned presets not checked\n");
        return;
    }
    char args[1400], prof[600], empty[600];
    snprintf(prof, sizeof prof, "%s/tuned", g_tmp);
    snprintf(empty, sizeof empty, "%s/empty", g_tmp);
    snprintf(args, sizeof args, "--backend cpu --preset all --budget 3 --json --profile-dir '%s'",
             prof);
    ck_assert_msg(run("sdpa-tune", args) == 0, "sdpa-tune %s:\n%s%s", args, g_out, g_err);
    cJSON *t = cJSON_Parse(g_out);
    ck_assert_msg(t != NULL, "sdpa-tune --json is not clean JSON:\n%s", g_out);
    int nbuckets = cJSON_GetArraySize(cJSON_GetObjectItem(t, "buckets"));
    ck_assert_int_ge(nbuckets, 8);
    /* progress went to stderr, one plain line per candidate */
    ck_assert_ptr_nonnull(strstr(g_err, " s left\n"));
    ck_assert_ptr_null(strstr(g_out, " s left"));

    const char *src[][2] = {{"profile", prof}, {"shipped profile", empty}, {"default", empty}};
    for (int k = 0; k < 3; k++) {
        if (k == 1)
            setenv("SDPA_SHIPPED_PROFILE_DIR", prof, 1);
        if (k == 2)
            setenv("SDPA_SHIPPED_PROFILE_DIR", empty, 1);
        snprintf(args, sizeof args, "--backend cpu --preset all --repeat 1 --warmup 0 --json "
                                    "--no-peak --profile-dir '%s'", src[k][1]);
        ck_assert_msg(run("sdpa-bench", args) == 0, "sdpa-bench %s:\n%s%s", args, g_out, g_err);
        cJSON *b = cJSON_Parse(g_out);
        ck_assert_ptr_nonnull(b);
        cJSON *r;
        int n = 0;
        cJSON_ArrayForEach(r, cJSON_GetObjectItem(b, "results"))
        {
            const char *shape = cJSON_GetObjectItem(r, "shape")->valuestring;
            const char *source = cJSON_GetObjectItem(r, "source")->valuestring;
            const char *config = cJSON_GetObjectItem(r, "config")->valuestring;
            ck_assert_msg(strcmp(source, src[k][0]) == 0, "row %s: source \"%s\", want \"%s\"",
                          shape, source, src[k][0]);
            ck_assert_str_eq(cJSON_GetObjectItem(r, "status")->valuestring, "ok");
            if (k < 2) {
                /* the tuned parameters (one bucket per row, in order) are in
                 * the row's configuration */
                cJSON *tb = cJSON_GetArrayItem(cJSON_GetObjectItem(t, "buckets"), n);
                ck_assert_ptr_nonnull(tb);
                char tuned[256];
                snprintf(tuned, sizeof tuned, "%s", cJSON_GetObjectItem(tb, "tuned")->valuestring);
                for (char *sv = NULL, *tok = strtok_r(tuned, " ", &sv); tok;
                     tok = strtok_r(NULL, " ", &sv))
                    ck_assert_msg(strstr(config, tok), "row %s: config \"%s\" lacks tuned %s",
                                  shape, config, tok);
            }
            n++;
        }
        ck_assert_int_eq(n, nbuckets);
        cJSON_Delete(b);
    }
    cJSON_Delete(t);
    /* the table and CSV carry the source too */
    snprintf(args, sizeof args, "--backend cpu --preset mobile --repeat 1 --warmup 0 --no-peak "
                                "--profile-dir '%s'", prof);
    ck_assert_int_eq(run("sdpa-bench", args), 0);
    ck_assert_ptr_nonnull(strstr(g_out, " source "));
    ck_assert_ptr_nonnull(strstr(g_out, "  profile  "));
    snprintf(args, sizeof args, "--backend cpu --preset mobile --repeat 1 --warmup 0 --no-peak "
                                "--csv --profile-dir '%s'", prof);
    ck_assert_int_eq(run("sdpa-bench", args), 0);
    ck_assert_ptr_nonnull(strstr(g_out, ",peak_frac,peak_suspect,vs_first,mem_mib,kernel,config,"
                                        "source,status,vs_base,vs_base_q1,vs_base_q3,"
                                        "touch_bytes\n"));
    ck_assert_ptr_nonnull(strstr(g_out, ",profile,ok,,,,\n"));
}
END_TEST

/* sdpa-tune's progress goes to stderr in text mode too: stdout holds the
 * header and table only. */
START_TEST(tune_progress_on_stderr)
{
    char args[1024];
    snprintf(args, sizeof args, "--backend reference --shape 1,1,1,4,4,8 --budget 1 "
                                "--profile-dir '%s/p'", g_tmp);
    ck_assert_msg(run("sdpa-tune", args) == 0, "sdpa-tune %s:\n%s%s", args, g_out, g_err);
    ck_assert_ptr_nonnull(strstr(g_out, "default ms"));
    ck_assert_msg(strstr(g_out, " s left") == NULL, "progress on stdout:\n%s", g_out);
    ck_assert_msg(strstr(g_err, "B1 H1 S4 D8 f32: 1/"), "no progress on stderr:\n%s", g_err);
}
END_TEST

/* A peak cached far too low makes rows read above 100 %: the tool measures
 * the peak again (and replaces the cache) instead of printing them. */
START_TEST(bench_peak_above_100_remeasured)
{
    char args[1024], prof[600], path[700];
    snprintf(prof, sizeof prof, "%s/profiles", g_tmp);
    snprintf(path, sizeof path, "%s/peak.jsonl", prof);
    snprintf(args, sizeof args, "--backend reference --shape 1,2,2,16,16,16 --repeat 1 "
                                "--warmup 0 --json --profile-dir '%s'", prof);
    ck_assert_int_eq(run("sdpa-bench", args), 0);
    /* the cached record, with an absurdly low peak */
    char *line = slurp(path);
    cJSON *rec = cJSON_Parse(line);
    ck_assert_msg(rec != NULL, "peak.jsonl: %s", line);
    free(line);
    double measured = cJSON_GetObjectItem(rec, "gflops")->valuedouble;
    cJSON_SetNumberValue(cJSON_GetObjectItem(rec, "gflops"), 1e-6);
    char *text = cJSON_PrintUnformatted(rec);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "%s\n", text);
    fclose(f);
    free(text);
    cJSON_Delete(rec);

    ck_assert_int_eq(run("sdpa-bench", args), 0);
    cJSON *j = cJSON_Parse(g_out);
    ck_assert_ptr_nonnull(j);
    cJSON *pk = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "peaks"), 0);
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(pk, "remeasured")));
    ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(pk, "cached")));
    double peak = cJSON_GetObjectItem(pk, "gflops")->valuedouble;
    ck_assert_msg(peak > 1e3 * 1e-6, "peak %g not re-measured (was %g)", peak, measured);
    cJSON *r = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "results"), 0);
    ck_assert_double_le(cJSON_GetObjectItem(r, "peak_frac")->valuedouble, 1.0);
    ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(r, "peak_suspect")));
    ck_assert_double_eq(cJSON_GetObjectItem(r, "peak_gflops")->valuedouble, peak);
    ck_assert_ptr_nonnull(strstr(g_err, "measuring the peak again"));
    cJSON_Delete(j);
    /* the cache holds the new peak: the next run reads it */
    ck_assert_int_eq(run("sdpa-bench", args), 0);
    j = cJSON_Parse(g_out);
    pk = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "peaks"), 0);
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(pk, "cached")));
    ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(pk, "remeasured")));
    ck_assert_double_eq(cJSON_GetObjectItem(pk, "gflops")->valuedouble, peak);
    cJSON_Delete(j);
}
END_TEST

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Shapes whose buffers exceed the machine's memory are refused with exit 2
 * before anything is allocated (quickly, nothing on stdout), by both tools
 * that allocate a shape's tensors. */
START_TEST(tools_refuse_shapes_beyond_memory)
{
    /* 2^31 x 64 x 4 bytes = 512 GiB per tensor: beyond any test machine */
    const char *huge = "--shape 2147483648,64,64,1,1,1";
    char args[512];
    snprintf(args, sizeof args, "--backend reference %s --no-peak", huge);
    double t0 = now_s();
    ck_assert_int_eq(run("sdpa-bench", args), 2);
    ck_assert_msg(strstr(g_err, "refused before allocating") && strstr(g_err, "GiB"), "%s", g_err);
    ck_assert_str_eq(g_out, "");
    snprintf(args, sizeof args, "--backend reference %s --budget 1", huge);
    ck_assert_int_eq(run("sdpa-tune", args), 2);
    ck_assert_msg(strstr(g_err, "refused before allocating"), "%s", g_err);
    ck_assert_str_eq(g_out, "");
    ck_assert_msg(now_s() - t0 < 30, "refusing took %.1f s", now_s() - t0);
    /* --interleave holds every row's buffers at once: six variants of a shape
     * that takes 40 % of the memory each (q, k, v, out f32 on reference plus
     * the host's q, k, v: 28 bytes per B) fit one at a time, not together */
    long np = sysconf(_SC_PHYS_PAGES), ps = sysconf(_SC_PAGESIZE);
    if (np > 0 && ps > 0) {
        const long long b = (long long)(0.4 * (double)np * (double)ps / (28.0 * 64));
        snprintf(args, sizeof args, "--backend reference --shape %lld,1,1,1,1,64 --kv-dtype "
                                    "f32,f16,bf16 --page-size 0,16 --no-peak --interleave", b);
        t0 = now_s();
        ck_assert_int_eq(run("sdpa-bench", args), 2);
        ck_assert_msg(strstr(g_err, "--interleave sets up all 6 shapes at once: the shapes "
                                    "together need") &&
                          strstr(g_err, "refused before allocating"), "%s", g_err);
        ck_assert_str_eq(g_out, "");
        ck_assert_msg(now_s() - t0 < 10, "refusing took %.1f s", now_s() - t0);
    }
    /* the 56 GiB case of the report, where the machine has less */
    long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    if (pages > 0 && (double)pages * (double)psize < 56.0 * 1073741824.0) {
        ck_assert_int_eq(run("sdpa-bench", "--shape 2147483648,1,1,1,1,1 --no-peak"), 2);
        ck_assert_ptr_nonnull(strstr(g_err, "needs 56.0 GiB"));
    }
    /* a dry run allocates nothing, so it is not refused */
    snprintf(args, sizeof args, "--backend reference %s --dry-run", huge);
    ck_assert_int_ne(run("sdpa-tune", args), 2);
}
END_TEST

/* --plot writes SVG, so any other suffix is a usage error (nothing run,
 * nothing written). */
/* --gap-ms: the pause is taken before every call (warm-up included), outside
 * the timed interval, and reported in JSON and CSV; bad values are usage
 * errors. */
START_TEST(bench_gap_ms)
{
    const char *base = "--backend reference --shape 1,1,1,4,4,8 --repeat 4 --warmup 1 --backward";
    char args[256];
    snprintf(args, sizeof args, "%s --json --no-peak --gap-ms 60", base);
    double t0 = now_s();
    ck_assert_msg(run("sdpa-bench", args) == 0, "%s%s", g_out, g_err);
    double wall = now_s() - t0;
    /* 5 forwards + 5 backwards, each after 60 ms */
    ck_assert_msg(wall >= 10 * 0.060, "took %.3f s", wall);
    cJSON *j = cJSON_Parse(g_out);
    ck_assert_ptr_nonnull(j);
    ck_assert(cJSON_GetObjectItem(j, "gap_ms")->valuedouble == 60);
    cJSON *r;
    cJSON_ArrayForEach(r, cJSON_GetObjectItem(j, "results"))
    {
        ck_assert(cJSON_GetObjectItem(r, "gap_ms")->valuedouble == 60);
        /* the sleep is not in the timings */
        ck_assert_msg(cJSON_GetObjectItem(r, "min_ms")->valuedouble < 60, "%s", g_out);
    }
    cJSON_Delete(j);
    snprintf(args, sizeof args, "%s --csv --no-peak --gap-ms 0.5", base);
    ck_assert_int_eq(run("sdpa-bench", args), 0);
    ck_assert_ptr_nonnull(strstr(g_out, "plan_ms,gap_ms,runs,"));
    ck_assert_ptr_nonnull(strstr(g_out, ",0.5,4,"));
    ck_assert_int_eq(run("sdpa-bench", "--gap-ms -1"), 2);
    ck_assert_ptr_nonnull(strstr(g_err, "--gap-ms"));
}
END_TEST

/* --gap-touch: after each pause the listed inputs are read (whole buffers,
 * the paged pool for k and v), dout only before the backward; the bytes per
 * call are reported per row (JSON touch_bytes, CSV's last column) and the
 * list at the top; without the option the CSV cell is empty and JSON says
 * null. */
START_TEST(bench_gap_touch)
{
    const char *base = "--backend reference,cpu --shape 1,2,2,8,16,8 --repeat 2 --warmup 1 "
                       "--no-peak --gap-ms 1";
    char args[512];
    snprintf(args, sizeof args, "%s --backward --gap-touch q,k,v,dout", base);
    cJSON *j = run_json("sdpa-bench", args);
    ck_assert_str_eq(cJSON_GetObjectItem(j, "gap_touch")->valuestring, "q,k,v,dout");
    const double q = 2 * 8 * 8 * 4, kv = 2 * 16 * 8 * 4; /* bytes of q (and dout), k, v */
    int rows = 0;
    cJSON *r;
    cJSON_ArrayForEach(r, cJSON_GetObjectItem(j, "results"))
    {
        const int bwd = strcmp(jstr(r, "op"), "bwd") == 0;
        ck_assert_str_eq(jstr(r, "status"), "ok");
        ck_assert_msg(cJSON_GetObjectItem(r, "touch_bytes")->valuedouble ==
                          q + 2 * kv + (bwd ? q : 0),
                      "%s", g_out);
        rows++;
    }
    ck_assert_int_eq(rows, 4);
    cJSON_Delete(j);
    /* paged K/V: the pool (4 pages of 4 keys per head) */
    snprintf(args, sizeof args, "%s --page-size 4 --csv --gap-touch k", base);
    ck_assert_msg(run("sdpa-bench", args) == 0, "%s%s", g_out, g_err);
    ck_assert_msg(strstr(g_out, ",vs_base_q3,touch_bytes\n"), "%s", g_out);
    ck_assert_msg(strstr(g_out, ",1024\n"), "%s", g_out);
    /* without it */
    snprintf(args, sizeof args, "%s --csv", base);
    ck_assert_int_eq(run("sdpa-bench", args), 0);
    ck_assert_msg(strstr(g_out, ",ok,,,,\n"), "%s", g_out);
    j = run_json("sdpa-bench", base);
    ck_assert(cJSON_IsNull(cJSON_GetObjectItem(j, "gap_touch")));
    cJSON_ArrayForEach(r, cJSON_GetObjectItem(j, "results"))
        ck_assert_ptr_null(cJSON_GetObjectItem(r, "touch_bytes"));
    cJSON_Delete(j);
    /* the table says it under the rows */
    snprintf(args, sizeof args, "%s --gap-touch q,v", base);
    ck_assert_int_eq(run("sdpa-bench", args), 0);
    ck_assert_msg(strstr(g_out, "after each 1 ms pause the calling thread read q,v before the "
                                "timed call (--gap-touch)"),
                  "%s", g_out);
}
END_TEST

START_TEST(bench_plot_svg_only)
{
    const char *bad[] = {"x.png", "x.svg.png", "plot", ".svg", "dir/.svg"};
    for (int i = 0; i < 5; i++) {
        char args[1024], path[700];
        snprintf(path, sizeof path, "%s/%s", g_tmp, bad[i]);
        snprintf(args, sizeof args, "--backend reference --shape 1,1,1,4,4,8 --no-peak "
                                    "--plot '%s'", path);
        ck_assert_msg(run("sdpa-bench", args) == 2, "--plot %s should exit 2", bad[i]);
        ck_assert_msg(strstr(g_err, "must end in .svg"), "--plot %s: %s", bad[i], g_err);
        ck_assert_str_eq(g_out, "");
        ck_assert_int_ne(access(path, F_OK), 0);
    }
    char args[1024], path[700];
    snprintf(path, sizeof path, "%s/x.SVG", g_tmp);
    snprintf(args, sizeof args, "--backend reference --shape 1,1,1,4,4,8 --no-peak --repeat 1 "
                                "--warmup 0 --plot '%s'", path);
    ck_assert_int_eq(run("sdpa-bench", args), 0);
    ck_assert_int_eq(access(path, F_OK), 0);
    /* page-size variants are lines of their own, not points of one line */
    snprintf(args, sizeof args, "--backend reference --shape 1,1,1,1,16,8 --shape 1,1,1,1,32,8 "
                                "--page-size 0,16 --no-peak --repeat 1 --warmup 0 --plot '%s'", path);
    ck_assert_int_eq(run("sdpa-bench", args), 0);
    char *svg = slurp(path);
    ck_assert_msg(strstr(svg, ">reference fwd</text>") && strstr(svg, ">reference fwd +paged16</text>"),
                  "%s", svg);
    free(svg);
}
END_TEST

/* No such device is exit 1 in every tool that opens a device (docs/tools.md):
 * the flag where there is one, SDPA_DEVICE otherwise. */
START_TEST(no_such_device_exit_1)
{
    char args[1024];
    const char *dev = "--device no-such-device-anywhere";
    snprintf(args, sizeof args, "--backend reference %s '%s'", dev, conf_dir());
    ck_assert_int_eq(run("sdpa-check", args), 1);
    ck_assert_ptr_nonnull(strstr(g_err, "cannot create a context"));
    snprintf(args, sizeof args, "--backend reference %s --shape 1,1,1,4,4,8 --no-peak", dev);
    ck_assert_int_eq(run("sdpa-bench", args), 1);
    ck_assert_ptr_nonnull(strstr(g_err, "SDPA_ERR_NO_DEVICE"));
    snprintf(args, sizeof args, "--backend reference %s --shape 1,1,1,4,4,8 --budget 1 "
                                "--profile-dir '%s/p'", dev, g_tmp);
    ck_assert_int_eq(run("sdpa-tune", args), 1);
    ck_assert_ptr_nonnull(strstr(g_err, "cannot create a context"));
    setenv("SDPA_DEVICE", "no-such-device-anywhere", 1);
    ck_assert_int_eq(run("sdpa-lab", "--backend reference variance --dims 8"), 1);
    unsetenv("SDPA_DEVICE");
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("tools");
    TCase *t = tcase_create("sdpa-check");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 300);
    tcase_add_test(t, check_reference_all_pass);
    tcase_add_test(t, check_cpu_when_compiled);
    tcase_add_test(t, check_broken_case_fails);
    tcase_add_test(t, check_unsupported_fails_unless_allowed);
    tcase_add_test(t, check_wave2_inputs);
    tcase_add_test(t, check_usage_errors);
    tcase_add_test(t, check_unfused_flag);
    tcase_add_test(t, check_tile_flag);
    suite_add_tcase(s, t);
    t = tcase_create("sdpa-info");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_add_test(t, info_json);
    tcase_add_test(t, info_text_and_usage);
    tcase_add_test(t, info_tiles);
    suite_add_tcase(s, t);
    t = tcase_create("sdpa-bench");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 300);
    tcase_add_test(t, bench_flop_counts);
    tcase_add_test(t, bench_table_and_csv);
    tcase_add_test(t, bench_gap_ms);
    tcase_add_test(t, bench_gap_touch);
    tcase_add_test(t, bench_peak_and_plot);
    tcase_add_test(t, bench_decode_bandwidth);
    tcase_add_test(t, bench_read_reference);
    tcase_add_test(t, bench_usage_errors);
    tcase_add_test(t, bench_variant_lists);
    tcase_add_test(t, bench_interleave);
    tcase_add_test(t, bench_opencl_unfused_rows);
    tcase_add_test(t, bench_peak_above_100_remeasured);
    tcase_add_test(t, bench_plot_svg_only);
    suite_add_tcase(s, t);
    t = tcase_create("presets, limits, exit codes");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 300);
    tcase_add_test(t, presets_same_in_both_tools);
    tcase_add_test(t, bench_runs_what_tune_tuned);
    tcase_add_test(t, tune_progress_on_stderr);
    tcase_add_test(t, tools_refuse_shapes_beyond_memory);
    tcase_add_test(t, no_such_device_exit_1);
    suite_add_tcase(s, t);
    return s;
}

int main(void) { return trun_suite(suite()); }
