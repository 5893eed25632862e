/*
 * peak.c — sdpa_context_peak: the fp32 FMA peak of a context's device, from
 * the per-device cache in the profile directory (src/tune/peak_cache.c) or
 * measured by the backend's measure_peak slot and then cached.
 *
 * Invariants: the primary slot's backend is the one measured (never the AUTO
 * CPU fallback); the CPU backends' records are keyed by the context's thread
 * count, device backends' by 0. Caching is best effort: a failed read is a
 * miss, a failed write a WARN, and neither changes the status or the
 * context's last error. The backend call passes a fault-injection site
 * ("measure_peak") like the wrappers in dispatch.c. Called by applications
 * and sdpa-bench through the experimental API.
 */
#include "context_impl.h"

#include "../tune/tune.h"

#include <math.h>
#include <stdio.h>

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

/* Fills *info (a whole struct) for sdpa_context_peak. */
static sdpa_status peak_fill(sdpa_context *ctx, int refresh, sdpa_peak_info *info)
{
    memset(info, 0, sizeof *info);
    info->struct_size = sizeof *info;
    sdpa__slot *slot = &ctx->primary;
    const sdpa__backend *be = sdpa__use(ctx, slot);
    SDPA__CHECK(ctx, be->measure_peak, SDPA_ERR_UNSUPPORTED,
                "%s: no peak micro-benchmark for this backend", be->name);
    int threads = be->host_memory ? sdpa__context_threads(ctx) : 0;
    double g = 0;
    char method[sizeof info->method] = "";

    saved_error saved;
    error_save(ctx, &saved);
    bool hit = !refresh && sdpa__peak_cache_get(ctx, be, threads, &g, method, sizeof method);
    error_restore(ctx, &saved); /* a failed read is only a miss */
    if (hit) {
        info->gflops = g;
        sdpa__strlcpy(info->method, method, sizeof info->method);
        info->cached = 1;
        sdpa__log(ctx, SDPA_LOG_DEBUG, "%s: cached peak %.1f GFLOP/s (%s)", be->name, g, method);
        return SDPA_OK;
    }

    if (SDPA__FAULT("measure_peak"))
        return SDPA__FAIL(ctx, SDPA_ERR_DEVICE, "injected fault at measure_peak");
    double t0 = sdpa__now();
    SDPA__TRY(be->measure_peak(ctx, PEAK_SECONDS, &g, method, sizeof method));
    sdpa__use(ctx, slot);
    SDPA__CHECK(ctx, isfinite(g) && g > 0, SDPA_ERR_INTERNAL,
                "%s: peak micro-benchmark gave %g GFLOP/s", be->name, g);
    /* 1 MFLOP/s resolution: the cached copy (printed with 15 digits) then
     * reads back as exactly the value returned now */
    g = fmax(round(g * 1e3) / 1e3, 1e-3);
    sdpa__log(ctx, SDPA_LOG_INFO, "%s: measured peak %.1f GFLOP/s (%s) in %.2f s", be->name, g,
              method, sdpa__now() - t0);
    info->gflops = g;
    sdpa__strlcpy(info->method, method, sizeof info->method);
    info->cached = 0;

    /* Best effort: keep the caller's view of the last error unchanged. */
    sdpa_status st = sdpa__peak_cache_put(ctx, be, threads, g, method);
    if (st != SDPA_OK)
        sdpa__log(ctx, SDPA_LOG_WARN,
                  "%s: measured peak not cached in '%s' (%s: %s); it will be measured again",
                  be->name, sdpa__context_profile_dir(ctx), sdpa_status_name(st),
                  ctx->err_message);
    error_restore(ctx, &saved);
    return SDPA_OK;
}

sdpa_status sdpa_context_peak(sdpa_context *ctx, int refresh, sdpa_peak_info *info)
{
    if (!ctx) return SDPA_ERR_NULL;
    SDPA__CHECK_ARG(ctx, info, "sdpa_context_peak", "info");
    SDPA__CHECK_STRUCT(ctx, info, SDPA_PEAK_INFO_SIZE_V1, "peak info",
                       "set it to sizeof(sdpa_peak_info) before the call");
    sdpa_peak_info full;
    sdpa_status st = peak_fill(ctx, refresh, &full);
    sdpa__struct_out(info, &full, sizeof full);
    return st;
}
