/*
 * cpu_bandwidth.c — the host's read bandwidth, measured: the
 * measure_bandwidth slot of the cpu and reference backends (both stream K/V
 * from host memory), behind sdpa_context_bandwidth (src/core/peak.c), which
 * caches the result next to the FMA peak.
 *
 * A STREAM-like read loop: one buffer of 4x the last-level cache (sysfs;
 * at least 64 MiB, at most 1 GiB, halved while the allocation fails;
 * sdpa__host_alloc, so in huge pages where buffers get them) split into one
 * slice per thread of the context; a first untimed round has each thread
 * write its slice (first touch: its pages are mapped, and local to it), then
 * every round starts one pthread per slice that reads it once with vector
 * loads of the widest ISA summed into 8 accumulators (the sum goes to a
 * volatile sink, so nothing is dropped; nothing is written during the timed
 * rounds), timed from the first start to the last join (thread starts cost
 * ~0.1 ms of a ~30 ms round); the best of ROUNDS rounds is kept (short
 * rounds raise the odds of one undisturbed by other load). Threads are
 * joined before returning; the buffer is freed.
 *
 * Also the measure_read_time slot of both tables (sdpa_context_read_time,
 * through src/core/peak.c, which checks the arguments and takes the median):
 * the same read loop over a buffer of the caller's size (sdpa__host_alloc),
 * each read after a pause that every thread sleeps itself, the threads then
 * released together by a spin barrier (sdpa.h says what the time contains).
 * Threads are started once per call and gated: none touches the buffer
 * before all have started, so a failed start joins the others without a
 * hang.
 */
#include "host_buffers.h"
#include "cpu_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ROUNDS 6
#define MIN_BYTES ((size_t)64 << 20)
/* 1 GiB (256 MiB in a 32-bit address space) */
#define MAX_BYTES (SIZE_MAX > 0xFFFFFFFFu ? (size_t)1 << 30 : (size_t)256 << 20)

/* 64 bytes per vector; the compiler maps it to the ISA of the function. */
typedef float vec16 __attribute__((vector_size(64)));

#define READ_BODY                                                                           \
    vec16 s[8] = {0};                                                                       \
    for (size_t i = 0; i + 8 <= n; i += 8) {                                                \
        _Pragma("GCC unroll 8") for (int u = 0; u < 8; u++) s[u] += p[i + u];               \
    }                                                                                       \
    vec16 t = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));            \
    float r = 0;                                                                            \
    for (int e = 0; e < 16; e++) r += t[e];                                                 \
    return r;

#if defined(__GNUC__) && defined(__x86_64__)
__attribute__((target("avx512f"))) static float read_avx512(const vec16 *p, size_t n)
{
    READ_BODY
}
__attribute__((target("avx2"))) static float read_avx2(const vec16 *p, size_t n) { READ_BODY }
#endif
static float read_base(const vec16 *p, size_t n) { READ_BODY }

typedef float (*read_fn)(const vec16 *, size_t);

static read_fn pick_reader(const char **name)
{
#if defined(__GNUC__) && defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return *name = "avx512", read_avx512;
    if (__builtin_cpu_supports("avx2")) return *name = "avx2", read_avx2;
#endif
    return *name = "generic", read_base;
}

/* Bytes of the last-level cache (0 when unknown). */
static size_t llc_bytes(void)
{
    size_t best = 0;
    for (int i = 0; i < 8; i++) {
        char path[96];
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        FILE *f = fopen(path, "r");
        if (!f) break;
        unsigned long v = 0;
        char unit = 0;
        if (fscanf(f, "%lu%c", &v, &unit) >= 1) {
            size_t b = (size_t)v * (unit == 'K' ? 1024u : unit == 'M' ? 1024u * 1024u : 1u);
            if (b > best) best = b;
        }
        fclose(f);
    }
    return best;
}

typedef struct bw_worker {
    read_fn fn;
    vec16 *p;
    size_t n;  /* vectors */
    bool touch; /* first pass: write the slice (its pages then belong here) */
    volatile float sink;
} bw_worker;

static void *bw_main(void *arg)
{
    bw_worker *w = arg;
    if (w->touch)
        memset(w->p, 0, w->n * sizeof(vec16));
    else
        w->sink += w->fn(w->p, w->n);
    return NULL;
}

sdpa_status sdpa__cpu_measure_bandwidth(sdpa_context *ctx, void *state, double seconds,
                                        double *gbps, char *method, size_t method_len)
{
    (void)state;
    (void)seconds; /* the buffer size sets the time: a few passes of ~30 ms */
    int threads = sdpa__context_threads(ctx);
    if (threads < 1) threads = 1;
    if (threads > 1024) threads = 1024;
    size_t bytes = 4 * llc_bytes();
    if (bytes < MIN_BYTES) bytes = MIN_BYTES;
    if (bytes > MAX_BYTES) bytes = MAX_BYTES;
    vec16 *buf = NULL;
    size_t per = 0; /* vectors per thread */
    for (;; bytes /= 2) { /* a smaller buffer where memory is short */
        per = bytes / sizeof(vec16) / (size_t)threads / 8 * 8;
        if (per < 8) per = 8;
        bytes = per * (size_t)threads * sizeof(vec16);
        buf = sdpa__host_alloc(ctx, bytes);
        if (buf || bytes <= MIN_BYTES) break;
    }

    const char *isa = "";
    const read_fn fn = pick_reader(&isa);
    bw_worker *w = sdpa__calloc((size_t)threads, sizeof *w);
    pthread_t *tid = sdpa__calloc((size_t)threads, sizeof *tid);
    if (!buf || !w || !tid) {
        sdpa__aligned_free(buf);
        free(w);
        free(tid);
        return SDPA__FAIL(ctx, SDPA_ERR_OUT_OF_MEMORY, "cpu bandwidth: %zu MiB buffer",
                          bytes >> 20);
    }
    /* round 0 touches the buffer (untimed); rounds 1.. read it */
    double best = 0;
    int started = 0;
    for (int round = 0; round <= ROUNDS; round++) {
        const double t0 = sdpa__now();
        started = 0;
        for (int t = 0; t < threads; t++) {
            w[t] = (bw_worker){fn, buf + (size_t)t * per, per, round == 0, 0};
            if (pthread_create(&tid[t], NULL, bw_main, &w[t]) != 0) break;
            started++;
        }
        for (int t = 0; t < started; t++) pthread_join(tid[t], NULL);
        const double dt = sdpa__now() - t0;
        if (started < threads) break;
        if (round > 0 && dt > 0 && (double)bytes / dt / 1e9 > best) best = (double)bytes / dt / 1e9;
    }
    sdpa__aligned_free(buf);
    free(w);
    free(tid);
    SDPA__CHECK(ctx, best > 0, SDPA_ERR_OUT_OF_MEMORY,
                "cpu bandwidth: could not start %d threads (started %d)", threads, started);
    *gbps = best;
    if (method && method_len)
        snprintf(method, method_len, "cpu read %s %d thread%s %zu MiB", isa, threads,
                 threads == 1 ? "" : "s", bytes >> 20);
    return SDPA_OK;
}

/* ---- reads after a pause (measure_read_time) ---- */

/* What the threads of one measure_read_time call share. The counters only
 * grow: read r's barrier opens when `arrived` reaches (r + 1) * threads, and
 * the thread that brings `finished` to (r + 1) * threads ends read r. */
typedef struct rt_shared {
    read_fn fn;
    int threads, repeat;
    double pause_ms;
    atomic_int go;       /* 0 = wait, 1 = all threads started, -1 = give up */
    atomic_int arrived;  /* barrier arrivals, over all reads */
    atomic_int finished; /* slices read, over all reads */
    double t0;           /* the current read's start: the last arrival */
    double *ms;          /* [repeat] */
} rt_shared;

typedef struct rt_worker {
    rt_shared *sh;
    vec16 *p;
    size_t n; /* vectors */
    volatile float sink;
} rt_worker;

static void pause_ms(double ms)
{
    if (ms <= 0) return;
    struct timespec ts;
    ts.tv_sec = (time_t)(ms / 1000.0);
    ts.tv_nsec = (long)((ms - 1000.0 * (double)ts.tv_sec) * 1e6);
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static void *rt_main(void *arg)
{
    rt_worker *w = arg;
    rt_shared *sh = w->sh;
    int go;
    while ((go = atomic_load(&sh->go)) == 0) sdpa__cpu_relax();
    if (go < 0) return NULL;
    memset(w->p, 0, w->n * sizeof(vec16)); /* first touch: the slice's pages are this thread's */
    for (int r = 0; r < sh->repeat; r++) {
        const int target = (r + 1) * sh->threads;
        pause_ms(sh->pause_ms);
        double t = sdpa__now();
        if (atomic_fetch_add(&sh->arrived, 1) == target - 1) sh->t0 = t;
        while (atomic_load(&sh->arrived) < target) sdpa__cpu_relax();
        w->sink += sh->fn(w->p, w->n);
        t = sdpa__now();
        if (atomic_fetch_add(&sh->finished, 1) == target - 1) sh->ms[r] = 1e3 * (t - sh->t0);
    }
    return NULL;
}

sdpa_status sdpa__cpu_measure_read_time(sdpa_context *ctx, void *state, size_t bytes,
                                        double pause, int repeat, double *ms,
                                        sdpa_read_time_info *info)
{
    (void)state;
    int threads = sdpa__context_threads(ctx);
    if (threads < 1) threads = 1;
    if (threads > 1024) threads = 1024;
    /* whole 8-vector steps of the read loop per thread; peak.c keeps bytes
     * far below SIZE_MAX, so this cannot wrap */
    const size_t step = 8 * sizeof(vec16) * (size_t)threads;
    const size_t per = (bytes + step - 1) / step * 8; /* vectors per thread */
    const size_t total = per * (size_t)threads * sizeof(vec16);
    sdpa_status st = SDPA_OK;
    int started = 0;
    vec16 *buf = sdpa__host_alloc(ctx, total);
    rt_worker *w = sdpa__calloc((size_t)threads, sizeof *w);
    pthread_t *tid = sdpa__calloc((size_t)threads, sizeof *tid);
    rt_shared sh = {.threads = threads, .repeat = repeat, .pause_ms = pause, .ms = ms};
    const char *isa = "";
    sh.fn = pick_reader(&isa);
    atomic_init(&sh.go, 0);
    atomic_init(&sh.arrived, 0);
    atomic_init(&sh.finished, 0);
    if (!buf || !w || !tid) {
        st = SDPA__FAIL(ctx, SDPA_ERR_OUT_OF_MEMORY, "cpu read time: a buffer of %zu bytes",
                        total);
        goto cleanup;
    }
    for (; started < threads; started++) {
        w[started] = (rt_worker){&sh, buf + (size_t)started * per, per, 0};
        if (pthread_create(&tid[started], NULL, rt_main, &w[started]) != 0) break;
    }
    atomic_store(&sh.go, started == threads ? 1 : -1);
    for (int t = 0; t < started; t++) pthread_join(tid[t], NULL);
    if (started < threads) {
        st = SDPA__FAIL(ctx, SDPA_ERR_OUT_OF_MEMORY,
                        "cpu read time: could not start %d threads (started %d)", threads,
                        started);
        goto cleanup;
    }
    info->bytes = total;
    info->threads = threads;
    snprintf(info->method, sizeof info->method, "cpu read %s %d thread%s", isa, threads,
             threads == 1 ? "" : "s");
cleanup:
    sdpa__aligned_free(buf);
    free(w);
    free(tid);
    return st;
}
