/*
 * test_peak.c — the measured device peak (sdpa_context_peak): the CPU
 * micro-benchmark (cpu and reference backends), the OpenCL kernel and the
 * Vulkan shader (each skipped with a message when its backend has no
 * device), and the per-device cache in <profile dir>/peak.jsonl.
 *
 * Cache: a second call reads the record (same value, cached = 1); refresh = 1
 * measures again and replaces it (one record per device); the thread count
 * is part of a CPU record's key; garbage, binary, truncated and wrong-typed
 * lines are skipped with exactly one WARN and dropped on the next write,
 * while JSON objects of another format version and other devices' records
 * are kept; a record from another driver version is not used and is
 * replaced; an unwritable profile dir still gives a measurement (one WARN,
 * the context's last error untouched). NULL arguments -> SDPA_ERR_NULL.
 * In fault-injection builds, a walk over every fault site of a measurement
 * and of a read reference.
 * The read reference after pauses (sdpa_context_read_time): every bad
 * argument gets its status and message and leaves *info untouched; a real
 * measurement on both host backends (a 64 MiB read takes longer than a
 * 64 KiB one; the pauses are slept); the device backends say unsupported.
 * The Vulkan context runs with the validation layer and must stay clean.
 *
 * Every test points the context's profile_dir at a fresh temp dir. Run time:
 * about 12 peak measurements of ~0.3 s plus the first OpenCL build (~1 s):
 * about 5 s on the 2-core dev VM, bounded well under 15 s.
 */
#include "testutil.h"
#include "internal.h" /* fault-injection hooks */

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifdef SDPA_HAVE_VULKAN
int sdpa__vk_validation_error_count(sdpa_context *ctx);
int sdpa__vk_validation_active(sdpa_context *ctx);
#endif

/* ---- helpers ------------------------------------------------------------------ */

static void remove_tree(const char *dir)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

/* A context on kind with its profile dir at dir; NULL when the backend has
 * no usable device (the caller skips). */
static sdpa_context *ctx_on(sdpa_backend_kind kind, const char *dir, int threads, tlogcap *cap)
{
    sdpa_context_options o;
    sdpa_context_options_init(&o);
    o.backend = kind;
    o.profile_dir = dir;
    o.threads = threads;
    o.log_level = SDPA_LOG_WARN;
    o.log_fn = tlog_capture;
    o.log_user = cap;
    sdpa_context *ctx = NULL;
    sdpa_status st = sdpa_context_create(&o, &ctx);
    if (kind == SDPA_BACKEND_CPU || kind == SDPA_BACKEND_REFERENCE)
        ck_assert_msg(st == SDPA_OK, "context on %s: %s", sdpa_backend_name(kind),
                      sdpa_status_name(st));
    return st == SDPA_OK ? ctx : NULL;
}

/* The end of a case that logged no warning and no error: the context
 * destroyed, the captured log checked, the scratch folder removed. */
static void end_quiet(sdpa_context *ctx, const tlogcap *cap, char *dir)
{
    sdpa_context_destroy(ctx);
    ck_assert_int_eq(cap->warns, 0);
    ck_assert_int_eq(cap->errors, 0);
    remove_tree(dir);
    free(dir);
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = calloc(1, 1 << 20);
    ck_assert_ptr_nonnull(buf);
    size_t n = fread(buf, 1, (1 << 20) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static void write_file(const char *path, const char *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(data, 1, len, f), len);
    fclose(f);
}

static int count_substr(const char *s, const char *needle)
{
    int n = 0;
    for (const char *p = s; (p = strstr(p, needle)) != NULL; p += strlen(needle)) n++;
    return n;
}

static void peak_path(const char *dir, char *out, size_t size)
{
    snprintf(out, size, "%s/peak.jsonl", dir);
}

/* Calls sdpa_context_peak and checks the answer is sane. */
static sdpa_peak_info peak_ok(sdpa_context *ctx, int refresh)
{
    sdpa_peak_info info = {.struct_size = sizeof info};
    memset(&info, 0xAB, sizeof info); /* poisoned: the call must fill it */
    info.struct_size = sizeof info;
    sdpa_status st = sdpa_context_peak(ctx, refresh, &info);
    ck_assert_msg(st == SDPA_OK, "sdpa_context_peak: %s", sdpa_status_name(st));
    ck_assert_uint_eq(info.struct_size, sizeof info);
    ck_assert_msg(info.gflops > 1.0 && info.gflops < 1e7, "peak %g GFLOP/s", info.gflops);
    ck_assert(info.cached == 0 || info.cached == 1);
    ck_assert(memchr(info.method, '\0', sizeof info.method) != NULL);
    ck_assert(strlen(info.method) > 0);
    return info;
}

/* ---- CPU and cache ------------------------------------------------------------ */

START_TEST(cpu_peak_measured_then_cached)
{
    char *dir = tmkdtemp("sdpa-test-peak"), path[512];
    peak_path(dir, path, sizeof path);
    tlogcap cap = {0};
    sdpa_context *ctx = ctx_on(SDPA_BACKEND_CPU, dir, 2, &cap);
    sdpa_peak_info a = peak_ok(ctx, 0);
    ck_assert_int_eq(a.cached, 0);
    ck_assert_str_eq(a.method + strlen(a.method) - strlen("2 threads"), "2 threads");
    ck_assert_ptr_nonnull(strstr(a.method, "cpu "));
    sdpa_peak_info b = peak_ok(ctx, 0);
    ck_assert_int_eq(b.cached, 1);
    ck_assert_double_eq(b.gflops, a.gflops);
    ck_assert_str_eq(b.method, a.method);

    /* refresh measures again and replaces the record */
    sdpa_peak_info c = peak_ok(ctx, 1);
    ck_assert_int_eq(c.cached, 0);
    sdpa_peak_info d = peak_ok(ctx, 0);
    ck_assert_int_eq(d.cached, 1);
    ck_assert_double_eq(d.gflops, c.gflops);
    char *text = slurp(path);
    ck_assert_ptr_nonnull(text);
    ck_assert_int_eq(count_substr(text, "\n"), 1);
    ck_assert_int_eq(count_substr(text, "\"threads\":2"), 1);
    free(text);
    sdpa_context_destroy(ctx);

    /* the thread count is part of the key: a 1-thread context measures */
    ctx = ctx_on(SDPA_BACKEND_CPU, dir, 1, &cap);
    sdpa_peak_info e = peak_ok(ctx, 0);
    ck_assert_int_eq(e.cached, 0);
    ck_assert_ptr_nonnull(strstr(e.method, "1 thread"));
    ck_assert_int_eq(peak_ok(ctx, 0).cached, 1);
    sdpa_context_destroy(ctx);
    text = slurp(path);
    ck_assert_int_eq(count_substr(text, "\n"), 2);
    free(text);

    /* the reference backend runs on the same CPU, with its own record */
    ctx = ctx_on(SDPA_BACKEND_REFERENCE, dir, 1, &cap);
    sdpa_peak_info r = peak_ok(ctx, 0);
    ck_assert_int_eq(r.cached, 0);
    ck_assert_ptr_nonnull(strstr(r.method, "cpu "));
    end_quiet(ctx, &cap, dir);
}
END_TEST

START_TEST(corrupt_peak_file_tolerated_and_replaced)
{
    char *dir = tmkdtemp("sdpa-test-peak"), path[512];
    peak_path(dir, path, sizeof path);
    static const char junk[] =
        "garbage that is not JSON\n"
        "\x01\x02\x00\xff binary\x00 bytes\n"
        "{\"format\":1,\"backend\":\"cpu\",\"vendor\":\"host\",\"dev\n" /* truncated */
        "{\"format\":1,\"backend\":\"cpu\",\"vendor\":\"host\",\"device\":\"x\","
        "\"compute_units\":\"two\",\"driver\":\"d\",\"threads\":1,\"gflops\":5,\"method\":\"m\"}\n"
        "{\"format\":1,\"backend\":\"cpu\",\"vendor\":\"host\",\"device\":\"x\","
        "\"compute_units\":2,\"driver\":\"d\",\"threads\":1,\"gflops\":-5,\"method\":\"m\"}\n"
        "[1,2,3]\n"
        "{\"format\":99,\"note\":\"a future version's record\"}\n"
        "{\"format\":1,\"backend\":\"cpu\",\"vendor\":\"host\",\"dev"; /* no newline */
    write_file(path, junk, sizeof junk - 1);
    tlogcap cap = {0};
    sdpa_context *ctx = ctx_on(SDPA_BACKEND_CPU, dir, 1, &cap);
    sdpa_peak_info a = peak_ok(ctx, 0);
    ck_assert_int_eq(a.cached, 0);
    ck_assert_int_eq(cap.warns, 1);
    ck_assert_ptr_nonnull(strstr(cap.last, "skipped 8"));
    ck_assert_int_eq(cap.errors, 0);

    /* rewritten: junk gone, the other version's object kept, our record in */
    char *text = slurp(path);
    ck_assert_ptr_nonnull(text);
    ck_assert_ptr_null(strstr(text, "garbage"));
    ck_assert_ptr_null(strstr(text, "[1,2,3]"));
    ck_assert_ptr_nonnull(strstr(text, "a future version's record"));
    ck_assert_int_eq(count_substr(text, "\n"), 2);
    struct stat sb;
    ck_assert_int_eq(stat(path, &sb), 0);
    ck_assert_uint_eq(strlen(text), (size_t)sb.st_size); /* no NUL bytes left */
    free(text);
    sdpa_peak_info b = peak_ok(ctx, 0);
    ck_assert_int_eq(b.cached, 1);
    ck_assert_double_eq(b.gflops, a.gflops);
    sdpa_context_destroy(ctx);
    remove_tree(dir);
    free(dir);
}
END_TEST

/* Replaces the first occurrence of `from` in s (in place; to may be longer
 * when s has room). */
static void replace_in(char *s, size_t cap, const char *from, const char *to)
{
    char *p = strstr(s, from);
    ck_assert_ptr_nonnull(p);
    size_t tail = strlen(p + strlen(from));
    ck_assert(strlen(s) - strlen(from) + strlen(to) < cap);
    memmove(p + strlen(to), p + strlen(from), tail + 1);
    memcpy(p, to, strlen(to));
}

START_TEST(other_driver_record_not_used)
{
    char *dir = tmkdtemp("sdpa-test-peak"), path[512];
    peak_path(dir, path, sizeof path);
    tlogcap cap = {0};
    sdpa_context *ctx = ctx_on(SDPA_BACKEND_CPU, dir, 1, &cap);
    sdpa_peak_info a = peak_ok(ctx, 0);
    ck_assert_int_eq(a.cached, 0);
    /* the device's record, but from another driver and with a fake value;
     * plus a record of another device, which must survive the rewrite */
    char *text = slurp(path);
    ck_assert_ptr_nonnull(text);
    char line[4096];
    snprintf(line, sizeof line, "%s", text);
    char *gf = strstr(line, "\"gflops\":");
    ck_assert_ptr_nonnull(gf);
    char *end = strchr(gf, ',');
    ck_assert_ptr_nonnull(end);
    char num[64];
    snprintf(num, sizeof num, "%.*s", (int)(end - gf), gf);
    replace_in(line, sizeof line, num, "\"gflops\":12345.5");
    char *drv = strstr(line, "\"driver\":\"");
    ck_assert_ptr_nonnull(drv);
    replace_in(line, sizeof line, "\"driver\":\"", "\"driver\":\"old-driver-0.0.1 ");
    char other[4096];
    snprintf(other, sizeof other, "%s", line);
    replace_in(other, sizeof other, "\"device\":\"", "\"device\":\"another device ");
    replace_in(other, sizeof other, "\"gflops\":12345.5", "\"gflops\":777.25");
    char both[8192];
    snprintf(both, sizeof both, "%s%s", line, other);
    write_file(path, both, strlen(both));
    free(text);

    sdpa_peak_info b = peak_ok(ctx, 0);
    ck_assert_int_eq(b.cached, 0);
    ck_assert(b.gflops != 12345.5 && b.gflops != 777.25);
    ck_assert_int_eq(peak_ok(ctx, 0).cached, 1);
    text = slurp(path);
    /* this device's stale record replaced; the other device's kept as is */
    ck_assert_int_eq(count_substr(text, "old-driver-0.0.1"), 1);
    ck_assert_int_eq(count_substr(text, "12345.5"), 0);
    ck_assert_int_eq(count_substr(text, "777.25"), 1); /* the other device's kept */
    ck_assert_int_eq(count_substr(text, "\n"), 2);
    free(text);
    ck_assert_int_eq(cap.warns, 0);
    sdpa_context_destroy(ctx);
    remove_tree(dir);
    free(dir);
}
END_TEST

START_TEST(unwritable_profile_dir_still_measures)
{
    char *dir = tmkdtemp("sdpa-test-peak"), file[512], bad[600];
    snprintf(file, sizeof file, "%s/a-file", dir);
    write_file(file, "x", 1);
    snprintf(bad, sizeof bad, "%s/profiles", file); /* a directory under a regular file */
    tlogcap cap = {0};
    sdpa_context *ctx = ctx_on(SDPA_BACKEND_CPU, bad, 1, &cap);
    sdpa_peak_info a = peak_ok(ctx, 0);
    ck_assert_int_eq(a.cached, 0);
    ck_assert_int_eq(cap.warns, 1);
    ck_assert_ptr_nonnull(strstr(cap.last, "not cached"));
    sdpa_error_info err;
    ck_assert_int_eq(sdpa_context_last_error(ctx, &err), SDPA_OK);
    ck_assert_int_eq(err.status, SDPA_OK);
    /* nothing cached: measured again */
    ck_assert_int_eq(peak_ok(ctx, 0).cached, 0);
    sdpa_context_destroy(ctx);
    remove_tree(dir);
    free(dir);
}
END_TEST

/* A FIFO at <profile dir>/peak.jsonl used to block sdpa_context_peak forever
 * in open(); now it is refused at once (one WARN naming the FIFO), the peak
 * is measured, and the failed store leaves the FIFO alone. */
START_TEST(fifo_peak_file_refused)
{
    char *dir = tmkdtemp("sdpa-test-peak"), path[600];
    snprintf(path, sizeof path, "%s/peak.jsonl", dir);
    ck_assert_int_eq(mkfifo(path, 0644), 0);
    tlogcap cap = {0};
    sdpa_context *ctx = ctx_on(SDPA_BACKEND_CPU, dir, 1, &cap);
    sdpa_peak_info a = peak_ok(ctx, 0);
    ck_assert_int_eq(a.cached, 0);
    ck_assert_int_ge(cap.warns, 1);
    ck_assert_ptr_nonnull(strstr(cap.last, "FIFO"));
    struct stat sb;
    ck_assert_int_eq(lstat(path, &sb), 0);
    ck_assert(S_ISFIFO(sb.st_mode));
    sdpa_context_destroy(ctx);
    unlink(path);
    remove_tree(dir);
    free(dir);
}
END_TEST

START_TEST(null_arguments)
{
    sdpa_peak_info info = {.struct_size = sizeof info};
    ck_assert_int_eq(sdpa_context_peak(NULL, 0, &info), SDPA_ERR_NULL);
    char *dir = tmkdtemp("sdpa-test-peak");
    tlogcap cap = {0};
    sdpa_context *ctx = ctx_on(SDPA_BACKEND_REFERENCE, dir, 1, &cap);
    ck_assert_int_eq(sdpa_context_peak(ctx, 0, NULL), SDPA_ERR_NULL);
    ck_assert_int_eq(sdpa_context_peak(ctx, 1, NULL), SDPA_ERR_NULL);
    sdpa_context_destroy(ctx);
    remove_tree(dir);
    free(dir);
}
END_TEST

/* The cpu backend's peak is measured at the width of the kernel set its
 * context runs (SDPA_CPU_KERNELS), and each set has its own record. */
START_TEST(peak_per_kernel_set)
{
    char *dir = tmkdtemp("sdpa-test-peak"), path[512];
    peak_path(dir, path, sizeof path);
    tlogcap cap = {0};
    sdpa_context *ctx = ctx_on(SDPA_BACKEND_CPU, dir, 1, &cap);
    sdpa_peak_info best = peak_ok(ctx, 0);
    sdpa_context_destroy(ctx);
    setenv("SDPA_CPU_KERNELS", "generic", 1);
    ctx = ctx_on(SDPA_BACKEND_CPU, dir, 1, &cap);
    sdpa_peak_info g = peak_ok(ctx, 0);
    ck_assert_ptr_nonnull(strstr(g.method, "cpu generic "));
    ck_assert_int_eq(peak_ok(ctx, 0).cached, 1);
    sdpa_context_destroy(ctx);
    unsetenv("SDPA_CPU_KERNELS");
    char *text = slurp(path);
    ck_assert_ptr_nonnull(text);
    ck_assert_int_eq(count_substr(text, "\"kernels\":\"generic\""), 1);
    if (strstr(best.method, "cpu generic ")) {
        /* no vector kernels on this CPU: one record serves both */
        ck_assert_int_eq(g.cached, 1);
        fprintf(stderr, "test_peak: peak_per_kernel_set: only generic kernels here\n");
    } else {
        ck_assert_int_eq(g.cached, 0);
        ck_assert_int_eq(count_substr(text, "\n"), 2);
        fprintf(stderr, "test_peak: %s %.1f vs generic %.1f GFLOP/s (1 thread)\n", best.method,
                best.gflops, g.gflops);
    }
    free(text);
    ck_assert_int_eq(cap.errors, 0);
    remove_tree(dir);
    free(dir);
}
END_TEST

/* A record from before the metric and kernel-set fields is not used for a
 * kernel set (it may have been measured at another width) and is replaced. */
START_TEST(record_without_kernels_replaced)
{
    char *dir = tmkdtemp("sdpa-test-peak"), path[512];
    peak_path(dir, path, sizeof path);
    tlogcap cap = {0};
    sdpa_context *ctx = ctx_on(SDPA_BACKEND_CPU, dir, 1, &cap);
    sdpa_peak_info a = peak_ok(ctx, 0);
    ck_assert_int_eq(a.cached, 0);
    char *text = slurp(path), line[4096];
    ck_assert_ptr_nonnull(text);
    snprintf(line, sizeof line, "%s", text);
    free(text);
    char *m = strstr(line, "\"metric\":\"fma\",\"kernels\":\"");
    ck_assert_ptr_nonnull(m);
    char *end = strchr(m + strlen("\"metric\":\"fma\",\"kernels\":\""), '"');
    ck_assert_ptr_nonnull(end);
    memmove(m, end + 2, strlen(end + 2) + 1); /* drop both fields and the comma */
    char *gf = strstr(line, "\"gflops\":");
    ck_assert_ptr_nonnull(gf);
    char *comma = strchr(gf, ',');
    char rest[4096];
    snprintf(rest, sizeof rest, "%s", comma);
    snprintf(gf, sizeof line - (size_t)(gf - line), "\"gflops\":12345.5%s", rest);
    write_file(path, line, strlen(line));
    sdpa_peak_info b = peak_ok(ctx, 0);
    ck_assert_int_eq(b.cached, 0);
    ck_assert(b.gflops != 12345.5);
    text = slurp(path);
    ck_assert_int_eq(count_substr(text, "\n"), 1);
    ck_assert_ptr_null(strstr(text, "12345.5"));
    free(text);
    ck_assert_int_eq(cap.warns, 0);
    sdpa_context_destroy(ctx);
    remove_tree(dir);
    free(dir);
}
END_TEST

static sdpa_bandwidth_info bandwidth_ok(sdpa_context *ctx, int refresh)
{
    sdpa_bandwidth_info info;
    memset(&info, 0xAB, sizeof info);
    info.struct_size = sizeof info;
    sdpa_status st = sdpa_context_bandwidth(ctx, refresh, &info);
    ck_assert_msg(st == SDPA_OK, "sdpa_context_bandwidth: %s", sdpa_status_name(st));
    ck_assert_uint_eq(info.struct_size, sizeof info);
    ck_assert_msg(info.gbps > 0.01 && info.gbps < 1e5, "bandwidth %g GB/s", info.gbps);
    ck_assert(info.cached == 0 || info.cached == 1);
    ck_assert(memchr(info.method, '\0', sizeof info.method) != NULL);
    ck_assert_ptr_nonnull(strstr(info.method, "cpu read "));
    return info;
}

/* The read bandwidth: measured, then cached beside the peak (its own
 * record), per thread count; the reference backend measures it too. */
START_TEST(bandwidth_measured_then_cached)
{
    char *dir = tmkdtemp("sdpa-test-peak"), path[512];
    peak_path(dir, path, sizeof path);
    tlogcap cap = {0};
    sdpa_context *ctx = ctx_on(SDPA_BACKEND_CPU, dir, 2, &cap);
    sdpa_bandwidth_info a = bandwidth_ok(ctx, 0);
    ck_assert_int_eq(a.cached, 0);
    ck_assert_ptr_nonnull(strstr(a.method, " 2 threads "));
    sdpa_bandwidth_info b = bandwidth_ok(ctx, 0);
    ck_assert_int_eq(b.cached, 1);
    ck_assert_double_eq(b.gbps, a.gbps);
    ck_assert_str_eq(b.method, a.method);
    peak_ok(ctx, 0);
    ck_assert_int_eq(bandwidth_ok(ctx, 0).cached, 1); /* the peak's record is another */
    char *text = slurp(path);
    ck_assert_ptr_nonnull(text);
    ck_assert_int_eq(count_substr(text, "\n"), 2);
    ck_assert_int_eq(count_substr(text, "\"metric\":\"read\""), 1);
    ck_assert_int_eq(count_substr(text, "\"gbps\":"), 1);
    free(text);
    ck_assert_int_eq(bandwidth_ok(ctx, 1).cached, 0);
    ck_assert_int_eq(sdpa_context_bandwidth(NULL, 0, &b), SDPA_ERR_NULL);
    ck_assert_int_eq(sdpa_context_bandwidth(ctx, 0, NULL), SDPA_ERR_NULL);
    sdpa_error_info e;
    sdpa_context_last_error(ctx, &e);
    ck_assert_ptr_nonnull(strstr(e.message, "sdpa_context_bandwidth"));
    sdpa_context_destroy(ctx);
    ctx = ctx_on(SDPA_BACKEND_REFERENCE, dir, 1, &cap);
    sdpa_bandwidth_info r = bandwidth_ok(ctx, 0);
    ck_assert_int_eq(r.cached, 0);
    ck_assert_ptr_nonnull(strstr(r.method, " 1 thread "));
    end_quiet(ctx, &cap, dir);
}
END_TEST

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* sdpa_context_read_time with ctx's threads: OK and a consistent info. */
static sdpa_read_time_info read_time_ok(sdpa_context *ctx, size_t bytes, double pause_ms,
                                        int repeat, int threads)
{
    sdpa_read_time_info info;
    memset(&info, 0xAB, sizeof info);
    info.struct_size = sizeof info;
    sdpa_status st = sdpa_context_read_time(ctx, bytes, pause_ms, repeat, &info);
    ck_assert_msg(st == SDPA_OK, "sdpa_context_read_time: %s", sdpa_status_name(st));
    ck_assert_uint_eq(info.struct_size, sizeof info);
    ck_assert_msg(info.min_ms > 0 && info.min_ms <= info.median_ms &&
                      info.median_ms <= info.max_ms && info.max_ms < 1e4,
                  "read times %g %g %g ms", info.min_ms, info.median_ms, info.max_ms);
    /* rounded up to whole 512-byte steps per thread, never down */
    const size_t step = 512 * (size_t)threads;
    ck_assert_uint_ge(info.bytes, bytes);
    ck_assert_uint_lt(info.bytes, bytes + step);
    ck_assert_uint_eq(info.bytes % step, 0);
    ck_assert_int_eq(info.threads, threads);
    ck_assert_int_eq(info.repeat, repeat);
    ck_assert(memchr(info.method, '\0', sizeof info.method) != NULL);
    ck_assert_ptr_nonnull(strstr(info.method, "cpu read "));
    ck_assert_ptr_nonnull(strstr(info.method, threads == 1 ? " 1 thread" : " threads"));
    return info;
}

/* Bad arguments: a status, the call's own message, *info untouched. Then
 * real reads: more bytes take longer, the pauses are slept, and the
 * reference backend reads on its one thread. About 0.3 s. */
START_TEST(read_time_reference)
{
    char *dir = tmkdtemp("sdpa-test-peak");
    tlogcap cap = {0};
    sdpa_context *ctx = ctx_on(SDPA_BACKEND_CPU, dir, 2, &cap);
    sdpa_read_time_info info;
    ck_assert_int_eq(sdpa_context_read_time(NULL, 1024, 0, 1, &info), SDPA_ERR_NULL);
    const struct {
        size_t bytes;
        double pause;
        int repeat;
        int null_info;
        size_t struct_size;
        sdpa_status want;
        const char *msg;
    } bad[] = {
        {1024, 0, 1, 1, sizeof info, SDPA_ERR_NULL, "sdpa_context_read_time: info is NULL"},
        {1024, 0, 1, 0, SDPA_READ_TIME_INFO_SIZE_V1 - 4, SDPA_ERR_INVALID_ARG,
         "read time info.struct_size"},
        {0, 0, 1, 0, sizeof info, SDPA_ERR_INVALID_ARG, "sdpa_context_read_time: bytes is 0"},
        {SIZE_MAX, 0, 1, 0, sizeof info, SDPA_ERR_INVALID_ARG, "bytes is"},
        {SIZE_MAX / 4 + 1, 0, 1, 0, sizeof info, SDPA_ERR_INVALID_ARG, "bytes is"},
        {SIZE_MAX / 4, 0, 1, 0, sizeof info, SDPA_ERR_OUT_OF_MEMORY, "more than half"},
        {1024, -1, 1, 0, sizeof info, SDPA_ERR_INVALID_ARG, "pause_ms is -1"},
        {1024, NAN, 1, 0, sizeof info, SDPA_ERR_INVALID_ARG, "pause_ms is nan"},
        {1024, INFINITY, 1, 0, sizeof info, SDPA_ERR_INVALID_ARG, "pause_ms is inf"},
        {1024, 60001, 1, 0, sizeof info, SDPA_ERR_INVALID_ARG, "pause_ms is 60001"},
        {1024, 0, 0, 0, sizeof info, SDPA_ERR_INVALID_ARG, "repeat is 0"},
        {1024, 0, -3, 0, sizeof info, SDPA_ERR_INVALID_ARG, "repeat is -3"},
        {1024, 0, 1000001, 0, sizeof info, SDPA_ERR_INVALID_ARG, "repeat is 1000001"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        memset(&info, 0x5A, sizeof info);
        info.struct_size = bad[i].struct_size;
        sdpa_status st = sdpa_context_read_time(ctx, bad[i].bytes, bad[i].pause, bad[i].repeat,
                                                bad[i].null_info ? NULL : &info);
        ck_assert_msg(st == bad[i].want, "case %zu: %s, expected %s", i, sdpa_status_name(st),
                      sdpa_status_name(bad[i].want));
        sdpa_error_info e;
        ck_assert_int_eq(sdpa_context_last_error(ctx, &e), SDPA_OK);
        ck_assert_int_eq(e.status, st);
        ck_assert_msg(strstr(e.message, bad[i].msg), "case %zu: \"%s\" lacks \"%s\"", i,
                      e.message, bad[i].msg);
        ck_assert_uint_eq(info.struct_size, bad[i].struct_size);
        ck_assert_uint_eq(((const unsigned char *)&info)[sizeof info - 1], 0x5A);
        ck_assert_uint_eq(((const unsigned char *)&info.median_ms)[0], 0x5A);
    }
    read_time_ok(ctx, 64 << 10, 0, 3, 2);
    /* the pause is slept before every read, outside the timed interval */
    double t0 = now_s();
    sdpa_read_time_info paused = read_time_ok(ctx, 1000001, 20, 3, 2);
    const double wall_ms = 1e3 * (now_s() - t0);
    ck_assert_msg(wall_ms >= 3 * 20, "3 reads after 20 ms pauses took %g ms", wall_ms);
    ck_assert_msg(paused.max_ms < 20, "a pause counted in a read: %g ms", paused.max_ms);
    sdpa_context_destroy(ctx);
    ctx = ctx_on(SDPA_BACKEND_REFERENCE, dir, 1, &cap);
    read_time_ok(ctx, 4097, 1, 2, 1);
    /* 1024x the bytes, back to back, on one thread (no barrier for a busy
     * machine to stretch): the loop reads them all */
    sdpa_read_time_info small = read_time_ok(ctx, 64 << 10, 0, 3, 1);
    sdpa_read_time_info big = read_time_ok(ctx, (size_t)64 << 20, 0, 3, 1);
    ck_assert_msg(big.min_ms > 4 * small.min_ms, "64 MiB %g ms, 64 KiB %g ms", big.min_ms,
                  small.min_ms);
    end_quiet(ctx, &cap, dir);
}
END_TEST

/* With -Dfault_injection=true: every fault site the measurement reaches
 * (the "measure_peak" wrapper, the CPU benchmark's allocations) fails the
 * call with a status, and the context measures again once disarmed. In
 * other builds no site is counted and the walk says it is skipped. */
START_TEST(fault_walk)
{
    char *dir = tmkdtemp("sdpa-test-peak");
    tlogcap cap = {0};
    sdpa_context *ctx = ctx_on(SDPA_BACKEND_CPU, dir, 1, &cap);
    sdpa__fault_arm(0);
    peak_ok(ctx, 1);
    int64_t sites = sdpa__fault_count();
    if (sites == 0)
        fprintf(stderr, "test_peak: fault_walk: not a fault-injection build; skipped\n");
    else
        fprintf(stderr, "test_peak: fault_walk: %lld fault sites\n", (long long)sites);
    for (int64_t n = 1; n <= sites; n++) {
        sdpa_peak_info info = {.struct_size = sizeof info};
        sdpa__fault_arm(n);
        sdpa_status st = sdpa_context_peak(ctx, 1, &info);
        const char *site = sdpa__fault_last_site();
        sdpa__fault_arm(0);
        ck_assert_msg(site[0] != '\0', "site %lld of %lld not reached", (long long)n,
                      (long long)sites);
        ck_assert_msg(st != SDPA_OK, "fault at %s absorbed", site);
        sdpa_error_info err;
        ck_assert_int_eq(sdpa_context_last_error(ctx, &err), SDPA_OK);
        ck_assert_int_eq(err.status, st);
        ck_assert_int_eq(peak_ok(ctx, 0).cached, 1); /* the earlier record still serves */
    }
    /* the same for the read reference (its samples, buffer, threads' slots
     * and the "measure_read_time" wrapper) */
    sdpa__fault_arm(0);
    read_time_ok(ctx, 4096, 0, 1, 1);
    sites = sdpa__fault_count();
    if (sites)
        fprintf(stderr, "test_peak: fault_walk: %lld read-time fault sites\n", (long long)sites);
    for (int64_t n = 1; n <= sites; n++) {
        sdpa_read_time_info info = {.struct_size = sizeof info};
        sdpa__fault_arm(n);
        sdpa_status st = sdpa_context_read_time(ctx, 4096, 0, 1, &info);
        const char *site = sdpa__fault_last_site();
        sdpa__fault_arm(0);
        ck_assert_msg(site[0] != '\0' && st != SDPA_OK, "read time: fault %lld at '%s' absorbed",
                      (long long)n, site);
        sdpa_error_info err;
        ck_assert_int_eq(sdpa_context_last_error(ctx, &err), SDPA_OK);
        ck_assert_int_eq(err.status, st);
        ck_assert_msg(err.message[0], "read time: fault at %s: no message", site);
        read_time_ok(ctx, 4096, 0, 1, 1);
    }
    sdpa_context_destroy(ctx);
    remove_tree(dir);
    free(dir);
}
END_TEST

/* ---- devices ----------------------------------------------------------------- */

/* Measures on a device backend (or says why it skips), then reads the cache. */
static void device_peak(sdpa_backend_kind kind, const char *method_prefix)
{
    const char *name = sdpa_backend_name(kind);
    int n = 0;
    if (!sdpa_backend_compiled(kind) || sdpa_device_count(kind, &n) != SDPA_OK || n == 0) {
        fprintf(stderr, "test_peak: %s: backend not compiled in or no device; skipped\n", name);
        return;
    }
    char *dir = tmkdtemp("sdpa-test-peak");
    tlogcap cap = {0};
    sdpa_context *ctx = ctx_on(kind, dir, SDPA_AUTO, &cap);
    if (!ctx) {
        fprintf(stderr, "test_peak: %s: no usable device; skipped\n", name);
        remove_tree(dir);
        free(dir);
        return;
    }
    sdpa_peak_info a = peak_ok(ctx, 0);
    ck_assert_int_eq(a.cached, 0);
    ck_assert_msg(strncmp(a.method, method_prefix, strlen(method_prefix)) == 0, "method '%s'",
                  a.method);
    sdpa_peak_info b = peak_ok(ctx, 0);
    ck_assert_int_eq(b.cached, 1);
    ck_assert_double_eq(b.gflops, a.gflops);
    ck_assert_str_eq(b.method, a.method);
    fprintf(stderr, "test_peak: %s peak %.1f GFLOP/s (%s)\n", name, a.gflops, a.method);
    /* no read-time reference on device backends: unsupported, with a message */
    sdpa_read_time_info rt = {.struct_size = sizeof rt};
    ck_assert_int_eq(sdpa_context_read_time(ctx, 4096, 0, 1, &rt), SDPA_ERR_UNSUPPORTED);
    sdpa_error_info e;
    ck_assert_int_eq(sdpa_context_last_error(ctx, &e), SDPA_OK);
    ck_assert_ptr_nonnull(strstr(e.message, "no read-time reference"));
#ifdef SDPA_HAVE_VULKAN
    if (kind == SDPA_BACKEND_VULKAN) {
        const char *val = getenv("SDPA_VK_VALIDATION");
        if (val && strcmp(val, "1") == 0) ck_assert_int_eq(sdpa__vk_validation_active(ctx), 1);
        int errs = sdpa__vk_validation_error_count(ctx);
        ck_assert_msg(errs == 0, "the validation layer reported %d error(s)", errs);
    }
#endif
    ck_assert_int_eq(cap.errors, 0);
    sdpa_context_destroy(ctx);
    remove_tree(dir);
    free(dir);
}

START_TEST(opencl_peak) { device_peak(SDPA_BACKEND_OPENCL, "opencl fma kernel float"); }
END_TEST

START_TEST(vulkan_peak) { device_peak(SDPA_BACKEND_VULKAN, "vulkan fma shader"); }
END_TEST

static Suite *peak_suite(void)
{
    Suite *s = suite_create("peak");
    TCase *cache = tcase_create("cpu and cache");
    tcase_add_test(cache, cpu_peak_measured_then_cached);
    tcase_add_test(cache, corrupt_peak_file_tolerated_and_replaced);
    tcase_add_test(cache, other_driver_record_not_used);
    tcase_add_test(cache, unwritable_profile_dir_still_measures);
    tcase_add_test(cache, fifo_peak_file_refused);
    tcase_add_test(cache, null_arguments);
    tcase_add_test(cache, fault_walk);
    tcase_add_test(cache, peak_per_kernel_set);
    tcase_add_test(cache, record_without_kernels_replaced);
    tcase_add_test(cache, bandwidth_measured_then_cached);
    tcase_add_test(cache, read_time_reference);
    tcase_set_timeout(cache, 60);
    suite_add_tcase(s, cache);
    TCase *dev = tcase_create("devices");
    tcase_add_test(dev, opencl_peak);
    tcase_add_test(dev, vulkan_peak);
    tcase_set_timeout(dev, 60);
    suite_add_tcase(s, dev);
    return s;
}

int main(void)
{
    /* the Vulkan context runs under the validation layer unless the caller
     * chose otherwise */
    setenv("SDPA_VK_VALIDATION", "1", 0);
    return trun_suite(peak_suite());
}
