/*
 * test_tools.c — the command-line tools as a user runs them: exit codes,
 * messages and output formats of sdpa-check, sdpa-info and sdpa-bench.
 *
 * The binaries are found through $SDPA_TOOLS_DIR (set by tests/meson.build to
 * the build's tools folder); conformance cases through $SDPA_CONFORMANCE_DIR.
 * Each command's stdout and stderr are captured to files under a mkdtemp
 * folder. Checks: sdpa-check passes every shared case on the reference
 * backend with the exact summary line, fails a broken case with exit 1, and
 * rejects bad flags with exit 2; sdpa-info --json is valid JSON with the
 * version, the reference backend and the shipped-profile folder the
 * environment names; sdpa-bench prints a row per backend and
 * op, its JSON's GFLOP/s times milliseconds reproduces the exact kept-pair
 * flop count for full, causal and window bands, and bad shapes exit 2.
 * Runs in a few seconds (tiny shapes, reference backend).
 */
#include "testutil.h"

#include <cJSON.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char g_tmp[256];
static char *g_out, *g_err; /* captured output of the last run */

static const char *tools_dir(void)
{
    const char *d = getenv("SDPA_TOOLS_DIR");
    return d && *d ? d : "tools";
}

static const char *conf_dir(void)
{
    const char *d = getenv("SDPA_CONFORMANCE_DIR");
    return d && *d ? d : "../shared/conformance";
}

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

static int count_cases(void)
{
    DIR *d = opendir(conf_dir());
    ck_assert_ptr_nonnull(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char p[1024];
        struct stat st;
        snprintf(p, sizeof p, "%s/%s/case.json", conf_dir(), e->d_name);
        n += e->d_name[0] != '.' && stat(p, &st) == 0;
    }
    closedir(d);
    return n;
}

/* ---- sdpa-check ------------------------------------------------------------------------ */

START_TEST(check_reference_all_pass)
{
    char args[1024], want[64];
    snprintf(args, sizeof args, "--backend reference '%s'", conf_dir());
    ck_assert_int_eq(run("sdpa-check", args), 0);
    int n = count_cases();
    ck_assert_int_ge(n, 13);
    snprintf(want, sizeof want, "%d passed, 0 failed, 0 skipped", n);
    ck_assert_str_eq(last_line(g_out), want);
    ck_assert_ptr_nonnull(strstr(g_out, "PASS basic  out max_abs="));
    ck_assert_ptr_nonnull(strstr(g_out, "PASS backward_softcap  out max_abs="));
    ck_assert_ptr_nonnull(strstr(g_out, " dq max_abs="));
    ck_assert_ptr_null(strstr(g_out, "FAIL"));
    /* one case folder, verbose */
    snprintf(args, sizeof args, "-v --backend=reference '%s/basic'", conf_dir());
    ck_assert_int_eq(run("sdpa-check", args), 0);
    ck_assert_str_eq(last_line(g_out), "1 passed, 0 failed, 0 skipped");
    ck_assert_ptr_nonnull(strstr(g_out, "# backend reference"));
}
END_TEST

START_TEST(check_cpu_when_compiled)
{
    if (!sdpa_backend_compiled(SDPA_BACKEND_CPU)) {
        ck_assert_int_eq(run("sdpa-check", "--backend cpu /nonexistent"), 2);
        ck_assert_ptr_nonnull(strstr(g_err, "cannot create a context"));
        return;
    }
    char args[1024], want[64];
    snprintf(args, sizeof args, "--backend cpu '%s'", conf_dir());
    ck_assert_int_eq(run("sdpa-check", args), 0);
    snprintf(want, sizeof want, "%d passed, 0 failed, 0 skipped", count_cases());
    ck_assert_str_eq(last_line(g_out), want);
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

START_TEST(check_unsupported_is_skipped)
{
    /* One key, D = 65536: out = v. The reference computes it; the cpu
     * backend may refuse it, which sdpa-check reports as UNSUPPORTED and
     * counts as skipped (exit 0). */
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
    ck_assert_str_eq(last_line(g_out), "1 passed, 0 failed, 0 skipped");
    if (!sdpa_backend_compiled(SDPA_BACKEND_CPU))
        return;
    snprintf(args, sizeof args, "--backend cpu '%s'", dir);
    ck_assert_int_eq(run("sdpa-check", args), 0);
    if (strstr(g_out, "UNSUPPORTED")) {
        ck_assert_ptr_nonnull(strstr(g_out, "UNSUPPORTED big_d  (sdpa_plan_create: SDPA_ERR_UNSUPPORTED"));
        ck_assert_str_eq(last_line(g_out), "0 passed, 0 failed, 1 skipped");
    } else {
        ck_assert_str_eq(last_line(g_out), "1 passed, 0 failed, 0 skipped");
    }
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
    ck_assert_str_eq(last_line(g_out), "1 passed, 2 failed, 0 skipped");
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
 * so every case is UNSUPPORTED (skipped, exit 0) and says why. */
START_TEST(check_unfused_flag)
{
    char args[1024], want[64];
    snprintf(args, sizeof args, "--backend reference --unfused '%s'", conf_dir());
    ck_assert_int_eq(run("sdpa-check", args), 0);
    snprintf(want, sizeof want, "0 passed, 0 failed, %d skipped", count_cases());
    ck_assert_str_eq(last_line(g_out), want);
    ck_assert_ptr_nonnull(strstr(g_out, "OpenCL backend only"));
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
    ck_assert_ptr_nonnull(strstr(g_out, ",ok\n"));
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
    cJSON_Delete(j);
    snprintf(args, sizeof args, "%s --refresh-peak", again);
    ck_assert_int_eq(run("sdpa-bench", args), 0);
    j = cJSON_Parse(g_out);
    ck_assert_ptr_nonnull(j);
    bench_peak_entry(j, 0);
    cJSON_Delete(j);
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
        {"--max-seconds 0", "--max-seconds: expected a number > 0"},
        {"--gemm-params 65", "--gemm-params: expected an integer in [0, 64]"},
        {"--backend opencl-fused", "unknown backend \"opencl-fused\""},
        {"--max-seconds inf", "--max-seconds: expected a number > 0"},
        {"--frobnicate", "unknown option --frobnicate"},
        {"stray", "unexpected argument stray"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_msg(run("sdpa-bench", bad[i][0]) == 2, "sdpa-bench %s should exit 2", bad[i][0]);
        ck_assert_msg(strstr(g_err, bad[i][1]) != NULL, "sdpa-bench %s: stderr \"%s\" lacks \"%s\"",
                      bad[i][0], g_err, bad[i][1]);
        ck_assert_str_eq(g_out, "");
    }
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
    tcase_add_test(t, check_unsupported_is_skipped);
    tcase_add_test(t, check_usage_errors);
    tcase_add_test(t, check_unfused_flag);
    suite_add_tcase(s, t);
    t = tcase_create("sdpa-info");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_add_test(t, info_json);
    tcase_add_test(t, info_text_and_usage);
    suite_add_tcase(s, t);
    t = tcase_create("sdpa-bench");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 300);
    tcase_add_test(t, bench_flop_counts);
    tcase_add_test(t, bench_table_and_csv);
    tcase_add_test(t, bench_peak_and_plot);
    tcase_add_test(t, bench_usage_errors);
    tcase_add_test(t, bench_opencl_unfused_rows);
    suite_add_tcase(s, t);
    return s;
}

int main(void) { return trun_suite(suite()); }
