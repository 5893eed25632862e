/*
 * context.c — context options, environment variables, backend and device
 * selection (with AUTO's fallback order), and the context lifecycle.
 *
 * AUTO order: an OpenCL GPU, then a Vulkan GPU, then the CPU backend. When a
 * device selector is given (options or SDPA_DEVICE) AUTO takes the first
 * OpenCL or Vulkan device that matches it, GPU or not; when none matches, one
 * WARN line says so before the CPU backend is used. A device that fails to
 * start gets one WARN line and the next backend is tried; a backend without a
 * GPU, or whose run-time library (libOpenCL.so.1, libvulkan.so.1) cannot be
 * loaded, is skipped at INFO. An explicit backend whose library cannot be
 * loaded fails with SDPA_ERR_UNSUPPORTED and the loader's message. Options
 * set in code win over the environment.
 */
#include "dispatch.h"
#include "platform.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <unistd.h>

void sdpa_context_options_init(sdpa_context_options *o)
{
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->struct_size = sizeof *o;
    o->backend = SDPA_BACKEND_DEFAULT;
    o->threads = SDPA_AUTO;
    o->log_level = SDPA_AUTO;
}

void *sdpa__context_primary_state(const sdpa_context *ctx, const sdpa__backend *be)
{
    return ctx && ctx->primary.backend == be ? ctx->primary.state : NULL;
}
int sdpa__context_threads(const sdpa_context *ctx) { return ctx->threads; }
int sdpa__context_device_index(const sdpa_context *ctx) { return ctx->device_index; }
const char *sdpa__context_profile_dir(const sdpa_context *ctx)
{
    return ctx->profile_dir ? ctx->profile_dir : "";
}
const char *sdpa__context_cache_dir(const sdpa_context *ctx)
{
    return ctx->cache_dir ? ctx->cache_dir : "";
}

static int parse_log_level(const char *s)
{
    static const char *const names[] = {"error", "warn", "info", "debug"};
    if (!s || !*s) return -1;
    for (int i = 0; i < 4; i++)
        if (strcasecmp(s, names[i]) == 0) return i;
    if (strcasecmp(s, "warning") == 0) return SDPA_LOG_WARN;
    if (strcasecmp(s, "none") == 0 || strcasecmp(s, "off") == 0) return -2;
    return -1;
}

static char *dup_or_null(const char *s)
{
    if (!s) return NULL;
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

/* explicit_dir, else $env, else the platform's per-user folder for `what`
 * (platform.h: XDG or %LOCALAPPDATA%); NULL if none is known. */
static char *resolve_dir(const char *explicit_dir, const char *env, const char *what)
{
    if (explicit_dir) return dup_or_null(explicit_dir);
    const char *v = getenv(env);
    if (v && *v) return dup_or_null(v);
    char buf[4096];
    return sdpa__os_user_dir(what, buf, sizeof buf) ? dup_or_null(buf) : NULL;
}

sdpa_status sdpa__slot_start(sdpa_context *ctx, sdpa__slot *slot,
                             const sdpa__backend *backend, int device_index)
{
    slot->backend = backend;
    slot->state = NULL;
    slot->started = false;
    sdpa_status st = sdpa__call_context_init(ctx, slot, device_index);
    if (st == SDPA_OK) slot->started = true;
    return st;
}

void sdpa__slot_stop(sdpa_context *ctx, sdpa__slot *slot)
{
    if (!slot->started) return;
    sdpa__call_context_free(ctx, slot);
    slot->started = false;
    slot->state = NULL;
}

static bool contains_nocase(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (; *hay; hay++)
        if (strncasecmp(hay, needle, n) == 0) return true;
    return n == 0;
}

/* Index of the device matching selector (an index, already parsed by
 * sdpa__context_alloc, or a name substring), or -1. */
static int match_device(const sdpa__backend *be, const char *sel, bool gpu_only,
                        char *name, size_t name_size)
{
    int n = 0;
    if (sdpa__call_device_count(be, &n) != SDPA_OK) return -1;
    bool numeric = sdpa__looks_integer(sel);
    int64_t want = -1;
    const char *why;
    if (numeric && !sdpa__parse_int(sel, 0, INT_MAX, &want, &why)) return -1;
    for (int i = 0; i < n; i++) {
        sdpa_device_info info;
        memset(&info, 0, sizeof info);
        info.struct_size = sizeof info;
        info.backend = be->kind;
        info.index = i;
        if (sdpa__call_device_info(be, i, &info) != SDPA_OK) continue;
        bool ok;
        if (!sel || !*sel) ok = !gpu_only || info.is_gpu;
        else if (numeric) ok = want == i;
        else ok = contains_nocase(info.name, sel);
        if (ok) {
            sdpa__strlcpy(name, info.name, name_size);
            return i;
        }
    }
    return -1;
}

static const sdpa__backend *cpu_backend(void)
{
    const sdpa__backend *be = sdpa__backend_get(SDPA_BACKEND_CPU);
    return be ? be : sdpa__backend_get(SDPA_BACKEND_REFERENCE);
}

static sdpa_status start_explicit(sdpa_context *ctx, sdpa_backend_kind kind,
                                  const char *sel)
{
    const sdpa__backend *be = sdpa__backend_get(kind);
    SDPA__CHECK(ctx, be, SDPA_ERR_UNSUPPORTED,
                "backend '%s' is not compiled into this build of libsdpa",
                sdpa_backend_name(kind));
    const char *why = sdpa__backend_unavailable(be);
    SDPA__CHECK(ctx, !why, SDPA_ERR_UNSUPPORTED, "%s", why);
    int n = 0;
    sdpa_status st = sdpa__call_device_count(be, &n);
    SDPA__CHECK(ctx, st == SDPA_OK || st == SDPA_ERR_NO_DEVICE, st,
                "%s: listing devices failed", be->name);
    SDPA__CHECK(ctx, n > 0, SDPA_ERR_NO_DEVICE, "%s: no device found", be->name);
    int idx = match_device(be, sel, false, ctx->device_name, sizeof ctx->device_name);
    SDPA__CHECK(ctx, idx >= 0, SDPA_ERR_NO_DEVICE,
                "%s: no device matches '%s' (%d device(s) present)", be->name,
                sel ? sel : "", n);
    ctx->device_index = idx;
    return sdpa__slot_start(ctx, &ctx->primary, be, idx);
}

static sdpa_status start_auto(sdpa_context *ctx, const char *sel)
{
    static const sdpa_backend_kind order[] = {SDPA_BACKEND_OPENCL, SDPA_BACKEND_VULKAN};
    bool tried = false; /* a device matched and was started (and failed) */
    for (size_t k = 0; k < sizeof order / sizeof order[0]; k++) {
        const sdpa__backend *be = sdpa__backend_get(order[k]);
        if (!be) {
            sdpa__log(ctx, SDPA_LOG_INFO, "auto: %s not compiled in",
                      sdpa_backend_name(order[k]));
            continue;
        }
        const char *why = sdpa__backend_unavailable(be);
        if (why) {
            sdpa__log(ctx, SDPA_LOG_INFO, "auto: %s; trying the next backend", why);
            continue;
        }
        int idx = match_device(be, sel, true, ctx->device_name,
                               sizeof ctx->device_name);
        if (idx < 0) {
            sdpa__log(ctx, SDPA_LOG_INFO, "auto: %s has no %s", be->name,
                      sel && *sel ? "device matching the selector" : "GPU");
            continue;
        }
        tried = true;
        sdpa_status st = sdpa__slot_start(ctx, &ctx->primary, be, idx);
        if (st == SDPA_OK) {
            ctx->device_index = idx;
            sdpa__log(ctx, SDPA_LOG_INFO, "auto: chose %s device %d (%s)", be->name,
                      idx, ctx->device_name);
            return SDPA_OK;
        }
        sdpa__log(ctx, SDPA_LOG_WARN, "auto: %s device '%s' failed to start (%s: %s); trying the next backend",
                  be->name, ctx->device_name, sdpa_status_name(st), ctx->err_message);
    }
    const sdpa__backend *be = cpu_backend();
    if (sel && *sel && !tried)
        sdpa__log(ctx, SDPA_LOG_WARN,
                  "auto: no OpenCL or Vulkan device matches the device selector '%s' "
                  "(SDPA_DEVICE or options.device); using the %s backend",
                  sel, be->name);
    int idx = match_device(be, NULL, false, ctx->device_name, sizeof ctx->device_name);
    ctx->device_index = idx < 0 ? 0 : idx;
    sdpa__log(ctx, SDPA_LOG_INFO, "auto: using the %s backend", be->name);
    return sdpa__slot_start(ctx, &ctx->primary, be, ctx->device_index);
}

/* Allocates a context and applies options + environment (no backend yet). */
sdpa_status sdpa__context_alloc(const sdpa_context_options *options,
                                sdpa_context **out, sdpa_backend_kind *kind,
                                const char **selector)
{
    /* fields past an older caller's struct_size keep their defaults; below
     * v1 is refused (there is no context yet to hold a message) */
    sdpa_context_options full;
    sdpa_context_options_init(&full);
    SDPA__TRY(sdpa__struct_take(NULL, &full, sizeof full, options, SDPA_CONTEXT_OPTIONS_SIZE_V1,
                                "context options", "call sdpa_context_options_init first"));
    options = &full;
    if (options->backend < SDPA_BACKEND_DEFAULT || options->backend > SDPA_BACKEND_VULKAN)
        return SDPA_ERR_INVALID_ARG;
    if (options->threads != SDPA_AUTO && (options->threads < 1 || options->threads > 1024))
        return SDPA_ERR_INVALID_ARG;
    if (options->log_level != SDPA_AUTO &&
        (options->log_level < -2 || options->log_level > SDPA_LOG_DEBUG))
        return SDPA_ERR_INVALID_ARG;

    sdpa_context *ctx = sdpa__calloc(1, sizeof *ctx);
    if (!ctx) return SDPA_ERR_OUT_OF_MEMORY;
    ctx->log_fn = options->log_fn;
    ctx->log_user = options->log_user;
    ctx->log_level = SDPA_LOG_WARN;
    if (options->log_level != SDPA_AUTO) {
        ctx->log_level = options->log_level;
    } else {
        const char *env = getenv("SDPA_LOG");
        int lvl = parse_log_level(env);
        if (env && *env && lvl == -1)
            sdpa__log(ctx, SDPA_LOG_WARN, "SDPA_LOG='%s' is not error|warn|info|debug|none; using warn", env);
        else if (lvl != -1)
            ctx->log_level = lvl;
    }
    ctx->threads = options->threads != SDPA_AUTO ? options->threads : sdpa__os_cpu_count();
    ctx->profile_dir = resolve_dir(options->profile_dir, "SDPA_PROFILE_DIR", "profiles");
    ctx->cache_dir = resolve_dir(options->cache_dir, "SDPA_CACHE_DIR", "kernels");

    *kind = options->backend;
    if (*kind == SDPA_BACKEND_DEFAULT) {
        *kind = SDPA_BACKEND_AUTO;
        const char *env = getenv("SDPA_BACKEND");
        if (env && *env) {
            sdpa_backend_kind k;
            if (sdpa_backend_parse(env, &k) != SDPA_OK || k == SDPA_BACKEND_DEFAULT) {
                sdpa__log(ctx, SDPA_LOG_ERROR,
                          "SDPA_BACKEND='%s' is not auto|reference|cpu|opencl|vulkan", env);
                sdpa_context_destroy(ctx);
                return SDPA_ERR_INVALID_ARG;
            }
            *kind = k;
        }
    }
    *selector = options->device;
    const char *source = "options.device";
    if (!*selector) {
        const char *env = getenv("SDPA_DEVICE");
        if (env && *env) *selector = env;
        source = "SDPA_DEVICE";
    }
    /* an index must be a whole number in int range: "4294967296" must not
     * wrap to device 0 */
    int64_t index;
    const char *why;
    if (sdpa__looks_integer(*selector) &&
        !sdpa__parse_int(*selector, 0, INT_MAX, &index, &why)) {
        sdpa__log(ctx, SDPA_LOG_ERROR, "%s='%s' is not a device index: %s (0..%d)", source,
                  *selector, why, INT_MAX);
        sdpa_context_destroy(ctx);
        return SDPA_ERR_INVALID_ARG;
    }
    *out = ctx;
    return SDPA_OK;
}

sdpa_status sdpa_context_create(const sdpa_context_options *options, sdpa_context **out)
{
    if (!out) return SDPA_ERR_NULL;
    *out = NULL;
    sdpa_context *ctx;
    sdpa_backend_kind kind;
    const char *sel;
    SDPA__TRY(sdpa__context_alloc(options, &ctx, &kind, &sel));
    sdpa_status st;
    if (kind == SDPA_BACKEND_AUTO) {
        ctx->auto_mode = true;
        st = start_auto(ctx, sel);
    } else {
        st = start_explicit(ctx, kind, sel);
    }
    if (st != SDPA_OK) {
        sdpa__log(ctx, SDPA_LOG_ERROR, "context creation failed: %s", ctx->err_message);
        sdpa_context_destroy(ctx);
        return st;
    }
    *out = ctx;
    return SDPA_OK;
}

sdpa_status sdpa__context_create_with_state(const sdpa_context_options *options,
                                            const sdpa__backend *backend, void *state,
                                            const char *device_name, sdpa_context **out)
{
    if (!out || !backend) return SDPA_ERR_NULL;
    *out = NULL;
    sdpa_context *ctx;
    sdpa_backend_kind kind;
    const char *sel;
    SDPA__TRY(sdpa__context_alloc(options, &ctx, &kind, &sel));
    ctx->primary.backend = backend;
    ctx->primary.state = state;
    ctx->primary.started = true;
    sdpa__strlcpy(ctx->device_name, device_name ? device_name : backend->name,
                  sizeof ctx->device_name);
    *out = ctx;
    return SDPA_OK;
}

void sdpa_context_destroy(sdpa_context *ctx)
{
    if (!ctx) return;
    sdpa__plan_cache_clear(ctx);
    sdpa__slot_stop(ctx, &ctx->fallback);
    sdpa__slot_stop(ctx, &ctx->primary);
    free(ctx->profile_dir);
    free(ctx->cache_dir);
    free(ctx->build_log);
    free(ctx);
}

sdpa_status sdpa_context_finish(sdpa_context *ctx)
{
    if (!ctx) return SDPA_ERR_NULL;
    sdpa__slot *slots[2] = {&ctx->primary, &ctx->fallback};
    for (int i = 0; i < 2; i++) {
        if (slots[i]->started) SDPA__TRY(sdpa__call_finish(ctx, slots[i]));
    }
    return SDPA_OK;
}

sdpa_backend_kind sdpa_context_backend(const sdpa_context *ctx)
{
    return ctx && ctx->primary.backend ? ctx->primary.backend->kind : SDPA_BACKEND_AUTO;
}

const char *sdpa_context_device_name(const sdpa_context *ctx)
{
    return ctx ? ctx->device_name : "";
}

/* The CPU slot AUTO contexts fall back to, started on first use. */
sdpa_status sdpa__context_fallback(sdpa_context *ctx, sdpa__slot **slot)
{
    if (!ctx->fallback.started)
        SDPA__TRY(sdpa__slot_start(ctx, &ctx->fallback, cpu_backend(), 0));
    *slot = &ctx->fallback;
    return SDPA_OK;
}
