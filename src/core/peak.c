/*
 * peak.c — sdpa_context_peak and sdpa_context_bandwidth: the fp32 FMA peak
 * and the read bandwidth of a context's device, from the per-device cache in
 * the profile directory (src/tune/peak_cache.c) or measured by the backend's
 * measure_peak / measure_bandwidth slot and then cached.
 *
 * Invariants: the primary slot's backend is the one measured (never the AUTO
 * CPU fallback); the CPU backends' records are keyed by the context's thread
 * count, device backends' by 0; FMA peaks also by the kernel set the backend
 * runs (peak_kernels slot: the CPU's vector width). Caching is best effort: a failed read is a
 * miss, a failed write a WARN, and neither changes the status or the
 * context's last error. The backend is called through dispatch.c (fault
 * sites "measure_peak", "measure_bandwidth"). Called by applications and
 * sdpa-bench through the experimental API.
 *
 * Also sdpa_context_read_time, the read reference for calls after a pause
 * (sdpa-bench --read-ref): arguments checked here, the reads timed by the
 * backend's measure_read_time slot (fault site "measure_read_time"), the
 * median taken here; never cached (it depends on the pause and the size).
 */
#include "dispatch.h"

#include "../tune/profile_query.h"
#include "platform.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Seconds a measurement aims for (best of a few runs inside it). */
#define PEAK_SECONDS 0.25

/* The context's last error, kept across best-effort cache calls. */
typedef struct saved_error {
    sdpa_status status;
    int64_t native;
    char message[SDPA__MESSAGE_MAX];
} saved_error;

static void error_save(const sdpa_context *ctx, saved_error *e)
{
    e->status = ctx->err_status;
    e->native = ctx->err_native;
    sdpa__strlcpy(e->message, ctx->err_message, sizeof e->message);
}

static void error_restore(sdpa_context *ctx, const saved_error *e)
{
    ctx->err_status = e->status;
    ctx->err_native = e->native;
    sdpa__strlcpy(ctx->err_message, e->message, sizeof ctx->err_message);
}

/* What one cached measurement is: the FMA peak or the read bandwidth. */
typedef struct measure_kind {
    const char *metric, *unit;
    sdpa__measure_what what; /* which backend slot dispatch.c calls */
} measure_kind;

/* The cached value of kind k for ctx's primary device, or a measurement
 * that is then cached: *value, method (sized like sdpa_peak_info's), *cached. */
static sdpa_status measure_cached(sdpa_context *ctx, const measure_kind *k, int refresh,
                                  double *value, char *method, size_t method_len, int *cached)
{
    sdpa__slot *slot = &ctx->primary;
    const sdpa__backend *be = slot->backend;
    SDPA__CHECK(ctx, sdpa__call_can_measure(slot, k->what), SDPA_ERR_UNSUPPORTED,
                "%s: no %s micro-benchmark for this backend", be->name, k->metric);
    const int threads = be->host_memory ? sdpa__context_threads(ctx) : 0;
    const char *kernels = k->what == SDPA__MEASURE_PEAK ? sdpa__call_peak_kernels(ctx, slot) : "";
    double g = 0;

    const sdpa__peak_what what = {k->metric, kernels ? kernels : "", threads};
    saved_error saved;
    error_save(ctx, &saved);
    const char *dir = sdpa__context_profile_dir(ctx);
    sdpa__device_key key;
    bool keyed = sdpa__device_key_of(ctx, be, &key) == SDPA_OK;
    bool hit = !refresh && keyed &&
               sdpa__peak_cache_get(ctx, dir, &key, &what, &g, method, method_len);
    error_restore(ctx, &saved); /* a failed read is only a miss */
    if (hit) {
        *value = g;
        *cached = 1;
        sdpa__log(ctx, SDPA_LOG_DEBUG, "%s: cached %s %.1f %s (%s)", be->name, k->metric, g,
                  k->unit, method);
        return SDPA_OK;
    }

    double t0 = sdpa__now();
    SDPA__TRY(sdpa__call_measure(ctx, slot, k->what, PEAK_SECONDS, &g, method, method_len));
    SDPA__CHECK(ctx, isfinite(g) && g > 0, SDPA_ERR_INTERNAL, "%s: %s micro-benchmark gave %g %s",
                be->name, k->metric, g, k->unit);
    /* 1e-3 resolution: the cached copy (printed with 15 digits) then reads
     * back as exactly the value returned now */
    g = fmax(round(g * 1e3) / 1e3, 1e-3);
    sdpa__log(ctx, SDPA_LOG_INFO, "%s: measured %s %.1f %s (%s) in %.2f s", be->name, k->metric,
              g, k->unit, method, sdpa__now() - t0);
    *value = g;
    *cached = 0;

    /* Best effort: keep the caller's view of the last error unchanged. */
    sdpa_status st = keyed ? sdpa__peak_cache_put(ctx, dir, &key, &what, g, method)
                           : SDPA_ERR_INTERNAL;
    if (st != SDPA_OK)
        sdpa__log(ctx, SDPA_LOG_WARN,
                  "%s: measured %s not cached in '%s' (%s: %s); it will be measured again",
                  be->name, k->metric, sdpa__context_profile_dir(ctx), sdpa_status_name(st),
                  ctx->err_message);
    error_restore(ctx, &saved);
    return SDPA_OK;
}

/* sdpa_peak_info and sdpa_bandwidth_info are one layout (struct_size, value,
 * method, cached), so one entry point serves both. */
#define SAME_FIELD(a, b) (offsetof(sdpa_peak_info, a) == offsetof(sdpa_bandwidth_info, b))
_Static_assert(SAME_FIELD(gflops, gbps) && SAME_FIELD(method, method) &&
                   SAME_FIELD(cached, cached) &&
                   sizeof(sdpa_peak_info) == sizeof(sdpa_bandwidth_info),
               "peak and bandwidth infos share one layout");
#undef SAME_FIELD

/* The public call for kind k: checks, fills a whole struct, writes up to the
 * caller's struct_size. `fn` and `what` name the call and its struct; `hint`
 * ends the message for a struct_size below v1. */
static sdpa_status measure_entry(sdpa_context *ctx, const measure_kind *k, int refresh,
                                 void *info, size_t v1, const char *fn, const char *what,
                                 const char *hint)
{
    if (!ctx) return SDPA_ERR_NULL;
    SDPA__CHECK_ARG(ctx, info, fn, "info");
    SDPA__CHECK_STRUCT(ctx, info, v1, what, hint);
    sdpa_peak_info full;
    memset(&full, 0, sizeof full);
    full.struct_size = sizeof full;
    sdpa_status st = measure_cached(ctx, k, refresh, &full.gflops, full.method,
                                    sizeof full.method, &full.cached);
    sdpa__struct_out(info, &full, sizeof full);
    return st;
}

sdpa_status sdpa_context_peak(sdpa_context *ctx, int refresh, sdpa_peak_info *info)
{
    static const measure_kind k = {"fma", "GFLOP/s", SDPA__MEASURE_PEAK};
    return measure_entry(ctx, &k, refresh, info, SDPA_PEAK_INFO_SIZE_V1, "sdpa_context_peak",
                         "peak info", "set it to sizeof(sdpa_peak_info) before the call");
}

sdpa_status sdpa_context_bandwidth(sdpa_context *ctx, int refresh, sdpa_bandwidth_info *info)
{
    static const measure_kind k = {"read", "GB/s", SDPA__MEASURE_BANDWIDTH};
    return measure_entry(ctx, &k, refresh, info, SDPA_BANDWIDTH_INFO_SIZE_V1,
                         "sdpa_context_bandwidth", "bandwidth info",
                         "set it to sizeof(sdpa_bandwidth_info) before the call");
}

/* Largest pause (ms) and repeat count sdpa_context_read_time takes. */
#define READ_TIME_MAX_PAUSE_MS 60000.0
#define READ_TIME_MAX_REPEAT 1000000

sdpa_status sdpa_context_read_time(sdpa_context *ctx, size_t bytes, double pause_ms, int repeat,
                                   sdpa_read_time_info *info)
{
    static const char fn[] = "sdpa_context_read_time";
    if (!ctx) return SDPA_ERR_NULL;
    SDPA__CHECK_ARG(ctx, info, fn, "info");
    SDPA__CHECK_STRUCT(ctx, info, SDPA_READ_TIME_INFO_SIZE_V1, "read time info",
                       "set it to sizeof(sdpa_read_time_info) before the call");
    /* a quarter of the address space: rounding up to whole slices cannot wrap */
    SDPA__CHECK(ctx, bytes >= 1 && bytes <= SIZE_MAX / 4, SDPA_ERR_INVALID_ARG,
                "%s: bytes is %zu, expected 1 to %zu", fn, bytes, SIZE_MAX / 4);
    SDPA__CHECK(ctx, pause_ms >= 0 && pause_ms <= READ_TIME_MAX_PAUSE_MS, SDPA_ERR_INVALID_ARG,
                "%s: pause_ms is %g, expected 0 to %g ms", fn, pause_ms, READ_TIME_MAX_PAUSE_MS);
    SDPA__CHECK(ctx, repeat >= 1 && repeat <= READ_TIME_MAX_REPEAT, SDPA_ERR_INVALID_ARG,
                "%s: repeat is %d, expected 1 to %d", fn, repeat, READ_TIME_MAX_REPEAT);
    sdpa__slot *slot = &ctx->primary;
    /* above half the memory the buffer would push out the caller's (or
     * overcommit would kill the process when it is touched) */
    const int64_t mem = sdpa__os_phys_mem();
    SDPA__CHECK(ctx, mem <= 0 || (uint64_t)bytes <= (uint64_t)mem / 2, SDPA_ERR_OUT_OF_MEMORY,
                "%s: bytes is %zu, more than half the machine's %lld MiB", fn, bytes,
                (long long)(mem >> 20));

    sdpa_read_time_info full;
    memset(&full, 0, sizeof full);
    full.struct_size = sizeof full;
    double *ms = sdpa__calloc((size_t)repeat, sizeof *ms);
    SDPA__CHECK(ctx, ms, SDPA_ERR_OUT_OF_MEMORY, "%s: %d samples", fn, repeat);
    sdpa_status st = sdpa__call_read_time(ctx, slot, bytes, pause_ms, repeat, ms, &full);
    if (st == SDPA_OK) {
        full.repeat = repeat;
        full.median_ms = sdpa__median(ms, repeat); /* sorts ms */
        full.min_ms = ms[0];
        full.max_ms = ms[repeat - 1];
        full.method[sizeof full.method - 1] = '\0';
        sdpa__log(ctx, SDPA_LOG_DEBUG, "%s: read %zu bytes after %g ms pauses: median %.3f ms "
                  "of %d (%s)", slot->backend->name, full.bytes, pause_ms, full.median_ms,
                  repeat, full.method);
    }
    free(ms);
    if (st != SDPA_OK) return st;
    sdpa__struct_out(info, &full, sizeof full);
    return SDPA_OK;
}
