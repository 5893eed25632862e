/*
 * oneshot.c — sdpa_attention_forward: the one-call path for simple users. It
 * keeps up to SDPA__PLAN_CACHE_SIZE plans per context, keyed by the validated
 * shape key, so repeated calls with the same shapes compile nothing.
 */
#include "validate.h"

void sdpa__plan_cache_clear(sdpa_context *ctx)
{
    for (int i = 0; i < SDPA__PLAN_CACHE_SIZE; i++) {
        sdpa_plan_destroy(ctx->plan_cache[i]);
        ctx->plan_cache[i] = NULL;
    }
}

sdpa_status sdpa_attention_forward(sdpa_context *ctx, const sdpa_attention_desc *desc)
{
    if (!ctx) return SDPA_ERR_NULL;
    SDPA__CHECK_ARG(ctx, desc, "sdpa_attention_forward", "desc");
    sdpa__shape_key key;
    SDPA__TRY(sdpa__validate_desc(ctx, desc, &key));
    sdpa_plan *plan = NULL;
    for (int i = 0; i < SDPA__PLAN_CACHE_SIZE && !plan; i++)
        if (ctx->plan_cache[i] && memcmp(&ctx->plan_cache[i]->key, &key, sizeof key) == 0)
            plan = ctx->plan_cache[i];
    if (!plan) {
        SDPA__TRY(sdpa_plan_create(ctx, desc, NULL, &plan));
        int slot = ctx->plan_cache_next;
        ctx->plan_cache_next = (slot + 1) % SDPA__PLAN_CACHE_SIZE;
        sdpa_plan_destroy(ctx->plan_cache[slot]);
        ctx->plan_cache[slot] = plan;
    }
    SDPA__TRY(sdpa_plan_forward(plan, &desc->tensors));
    return sdpa_context_finish(ctx);
}
