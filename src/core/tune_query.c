/*
 * tune_query.c — tune_query.h: what the tuner may ask of a context, answered
 * on the context's primary slot through dispatch.c.
 */
#include "tune_query.h"

#include "dispatch.h"
#include "validate.h"

sdpa_status sdpa__query_problem(sdpa_context *ctx, const sdpa_attention_desc *desc,
                                sdpa__problem *p)
{
    sdpa__shape_key key;
    SDPA__TRY(sdpa__validate_desc(ctx, desc, &key));
    *p = key.problem;
    return SDPA_OK;
}

const sdpa__backend *sdpa__query_backend(const sdpa_context *ctx)
{
    return ctx->primary.backend;
}

sdpa_status sdpa__query_default_tile(sdpa_context *ctx, const sdpa__problem *p, unsigned flags,
                                     sdpa_tile_config *out)
{
    return sdpa__call_default_tile(ctx, &ctx->primary, p, flags, NULL, out);
}

const char *sdpa__query_source_hash(const sdpa__backend *be)
{
    return sdpa__call_source_hash(be);
}

int sdpa__query_tile_candidates(sdpa_context *ctx, const sdpa__problem *p, unsigned flags,
                                sdpa_tile_config *out, int max)
{
    return sdpa__call_tile_candidates(ctx, &ctx->primary, p, flags, out, max);
}
