/*
 * buffer.c — sdpa_buffer: a sized handle to memory of the context's primary
 * backend (device memory, or host memory on the CPU backends), plus wrapping
 * of application-owned memory for the interop headers.
 */
#include "dispatch.h"

#include <stdlib.h>

sdpa_status sdpa_buffer_create(sdpa_context *ctx, size_t bytes, sdpa_buffer **out)
{
    if (!ctx) return SDPA_ERR_NULL;
    SDPA__CHECK_ARG(ctx, out, "sdpa_buffer_create", "out");
    *out = NULL;
    SDPA__CHECK(ctx, bytes > 0, SDPA_ERR_EMPTY, "sdpa_buffer_create: size is 0 bytes");
    sdpa_buffer *buf = sdpa__calloc(1, sizeof *buf);
    SDPA__CHECK(ctx, buf, SDPA_ERR_OUT_OF_MEMORY, "sdpa_buffer_create: out of host memory");
    sdpa_status st = sdpa__call_buffer_alloc(ctx, &ctx->primary, bytes, &buf->handle);
    if (st != SDPA_OK) {
        free(buf);
        return st;
    }
    buf->ctx = ctx;
    buf->size = bytes;
    buf->owned = true;
    *out = buf;
    return SDPA_OK;
}

sdpa_status sdpa__buffer_wrap(sdpa_context *ctx, void *handle, size_t bytes,
                              bool owned, sdpa_buffer **out)
{
    if (!ctx || !handle || !out) return SDPA_ERR_NULL;
    *out = NULL;
    SDPA__CHECK(ctx, bytes > 0, SDPA_ERR_EMPTY, "wrapped buffer has size 0");
    sdpa_buffer *buf = sdpa__calloc(1, sizeof *buf);
    SDPA__CHECK(ctx, buf, SDPA_ERR_OUT_OF_MEMORY, "out of host memory");
    buf->ctx = ctx;
    buf->handle = handle;
    buf->size = bytes;
    buf->owned = owned;
    *out = buf;
    return SDPA_OK;
}

void *sdpa__buffer_handle(const sdpa_buffer *buf) { return buf ? buf->handle : NULL; }
sdpa_context *sdpa__buffer_context(const sdpa_buffer *buf) { return buf ? buf->ctx : NULL; }
size_t sdpa_buffer_size(const sdpa_buffer *buf) { return buf ? buf->size : 0; }

static sdpa_status check_range(const sdpa_buffer *buf, size_t offset, size_t bytes,
                               const char *what)
{
    size_t end;
    SDPA__CHECK(buf->ctx, sdpa__add_size(offset, bytes, &end) && end <= buf->size,
                SDPA_ERR_INVALID_ARG,
                "%s: range [%zu, +%zu) lies outside the buffer of %zu bytes", what,
                offset, bytes, buf->size);
    return SDPA_OK;
}

sdpa_status sdpa_buffer_write(sdpa_buffer *buf, size_t offset, const void *src,
                              size_t bytes)
{
    if (!buf) return SDPA_ERR_NULL;
    SDPA__CHECK_ARG(buf->ctx, src || !bytes, "sdpa_buffer_write", "src");
    SDPA__TRY(check_range(buf, offset, bytes, "sdpa_buffer_write"));
    if (!bytes) return SDPA_OK;
    return sdpa__call_buffer_write(buf->ctx, &buf->ctx->primary, buf->handle, offset, src,
                                   bytes);
}

sdpa_status sdpa_buffer_read(sdpa_buffer *buf, size_t offset, void *dst, size_t bytes)
{
    if (!buf) return SDPA_ERR_NULL;
    SDPA__CHECK_ARG(buf->ctx, dst || !bytes, "sdpa_buffer_read", "dst");
    SDPA__TRY(check_range(buf, offset, bytes, "sdpa_buffer_read"));
    if (!bytes) return SDPA_OK;
    return sdpa__call_buffer_read(buf->ctx, &buf->ctx->primary, buf->handle, offset, dst, bytes);
}

void sdpa_buffer_destroy(sdpa_buffer *buf)
{
    if (!buf) return;
    if (buf->owned && buf->handle) sdpa__call_buffer_free(buf->ctx, &buf->ctx->primary, buf->handle);
    free(buf);
}
