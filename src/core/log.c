/*
 * log.c — error recording and logging for the whole library.
 *
 * sdpa__fail() is the single place where a failing status gets its message:
 * it stores status, native code and message on the context (for
 * sdpa_context_last_error) and logs file:line at DEBUG. Logging goes to the
 * user's callback or, by default, to stderr — the library's only output, and
 * only through the sink the user can replace.
 */
#include "context_impl.h"

#include <stdio.h>
#include <stdlib.h>

bool sdpa__log_enabled(const sdpa_context *ctx, sdpa_log_level level)
{
    return ctx && (int)level <= ctx->log_level;
}

static void log_emit(const sdpa_context *ctx, sdpa_log_level level,
                     const char *msg)
{
    static const char *const names[] = {"error", "warn", "info", "debug"};
    if (ctx->log_fn) {
        ctx->log_fn(ctx->log_user, level, msg);
    } else {
        fprintf(stderr, "sdpa: %s: %s\n", names[level], msg);
    }
}

static void log_v(const sdpa_context *ctx, sdpa_log_level level,
                  const char *fmt, va_list ap)
{
    char msg[SDPA__MESSAGE_MAX];
    vsnprintf(msg, sizeof msg, fmt, ap);
    log_emit(ctx, level, msg);
}

void sdpa__log(const sdpa_context *ctx, sdpa_log_level level, const char *fmt, ...)
{
    if (!sdpa__log_enabled(ctx, level)) return;
    va_list ap;
    va_start(ap, fmt);
    log_v(ctx, level, fmt, ap);
    va_end(ap);
}

static sdpa_status fail_v(sdpa_context *ctx, sdpa_status status, int64_t native,
                          const char *file, int line, const char *fmt, va_list ap)
{
    if (!ctx) return status;
    ctx->err_status = status;
    ctx->err_native = native;
    vsnprintf(ctx->err_message, sizeof ctx->err_message, fmt, ap);
    if (sdpa__log_enabled(ctx, SDPA_LOG_DEBUG))
        sdpa__log(ctx, SDPA_LOG_DEBUG, "%s:%d: %s: %s", file, line,
                  sdpa_status_name(status), ctx->err_message);
    return status;
}

sdpa_status sdpa__fail(sdpa_context *ctx, sdpa_status status, const char *file,
                       int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fail_v(ctx, status, 0, file, line, fmt, ap);
    va_end(ap);
    return status;
}

sdpa_status sdpa__fail_native(sdpa_context *ctx, sdpa_status status,
                              int64_t native, const char *file, int line,
                              const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fail_v(ctx, status, native, file, line, fmt, ap);
    va_end(ap);
    return status;
}

void sdpa__set_build_log(sdpa_context *ctx, const char *log)
{
    if (!ctx) return;
    free(ctx->build_log);
    ctx->build_log = NULL;
    if (!log) return;
    size_t n = strlen(log);
    if (n > 65536) n = 65536;
    ctx->build_log = malloc(n + 1);
    if (!ctx->build_log) return;
    memcpy(ctx->build_log, log, n);
    ctx->build_log[n] = '\0';
}

sdpa_status sdpa_context_last_error(const sdpa_context *ctx, sdpa_error_info *info)
{
    if (!ctx) return SDPA_ERR_NULL;
    /* the error state is not part of the context's logical constness */
    SDPA__CHECK_ARG((sdpa_context *)ctx, info, "sdpa_context_last_error", "info");
    info->status = ctx->err_status;
    info->native_code = ctx->err_native;
    info->message = ctx->err_message;
    info->build_log = ctx->build_log ? ctx->build_log : "";
    return SDPA_OK;
}
