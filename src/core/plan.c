/*
 * plan.c — plans: validated once, compiled once, executed many times.
 *
 * sdpa_plan_create validates the description, asks the backend whether it
 * supports it and compiles it; in AUTO mode a device that cannot support or
 * build a plan hands it to the CPU fallback with one WARN line. Forward and
 * backward re-check the call's tensors against the plan's shape key, stage
 * whatever is not already in the backend's memory (nothing, on the hot path),
 * and enqueue; a call that staged host tensors waits for its results.
 */
#include "dispatch.h"
#include "staging.h"
#include "tile.h"
#include "../tune/profile_query.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

static bool fallback_worthy(sdpa_status st)
{
    return st == SDPA_ERR_UNSUPPORTED || st == SDPA_ERR_BUILD || st == SDPA_ERR_DEVICE ||
           st == SDPA_ERR_OUT_OF_MEMORY || st == SDPA_ERR_DEVICE_LOST;
}

/* Whether a forced tile asks for the materialised-scores path (unfused = 1),
 * which only the OpenCL backend has. */
static bool tile_wants_unfused(const sdpa_tile_config *t)
{
    return sdpa_tile_config_get(t, SDPA_TILE_UNFUSED) == 1;
}

/* Completes `tile` (NULL = nothing chosen) with the backend's default and
 * builds the plan on that complete configuration; `source` says where the
 * tile came from (sdpa_plan_info.source). */
static sdpa_status build(sdpa_context *ctx, sdpa__slot *slot, sdpa_plan *plan,
                         const sdpa_plan_options *options, const sdpa_tile_config *tile,
                         const char *source)
{
    sdpa_tile_config full;
    SDPA__TRY(sdpa__call_default_tile(ctx, slot, &plan->key.problem, plan->flags, tile, &full));
    sdpa_plan_options o = *options;
    o.tile = &full;
    SDPA__TRY(sdpa__call_plan_create(ctx, slot, &plan->key.problem, plan->flags, &o,
                                     &plan->state));
    plan->slot = slot;
    sdpa__strlcpy(plan->tile_source, source, sizeof plan->tile_source);
    return SDPA_OK;
}

/* The tile is resolved here, once: the forced one, else the profile's record
 * for this device and bucket (src/tune, through profile_query.h), else the
 * backend's default. A record the backend refuses falls back to the default
 * with a WARN. */
static sdpa_status compile_on(sdpa_context *ctx, sdpa__slot *slot, sdpa_plan *plan,
                              const sdpa_plan_options *options)
{
    if (slot->backend->kind != SDPA_BACKEND_OPENCL && tile_wants_unfused(options->tile))
        return SDPA__FAIL(ctx, SDPA_ERR_UNSUPPORTED,
                          "%s: tile.unfused 1: the materialised-scores (CLBlast) path exists "
                          "on the OpenCL backend only",
                          slot->backend->name);
    if (options->tile) return build(ctx, slot, plan, options, options->tile, "forced");
    /* the user's profile folder, then the shipped one */
    static const char *const labels[2] = {"profile", "shipped profile"};
    const char *dirs[2] = {sdpa__context_profile_dir(ctx), sdpa__shipped_profile_dir(NULL)};
    sdpa__device_key key;
    sdpa__bucket bucket;
    sdpa__bucket_of(&plan->key.problem, plan->flags, &bucket);
    sdpa_tile_config tile;
    sdpa__profile_origin from;
    if (sdpa__device_key_of(ctx, slot->backend, &key) == SDPA_OK &&
        sdpa__profile_lookup(ctx, &key, &bucket, dirs, 2, &tile, &from)) {
        /* a record of another device of the family says so (its name: INFO log) */
        char source[sizeof plan->tile_source];
        snprintf(source, sizeof source, from.family ? "%s (family %s)" : "%s",
                 labels[from.dir], from.family_key);
        if (build(ctx, slot, plan, options, &tile, source) == SDPA_OK) return SDPA_OK;
        char why[SDPA__MESSAGE_MAX];
        sdpa__strlcpy(why, ctx->err_message, sizeof why);
        SDPA__TRY(build(ctx, slot, plan, options, NULL, "default"));
        sdpa__log(ctx, SDPA_LOG_WARN, "%s: the %s configuration failed (%s); using defaults",
                  slot->backend->name, source, why);
        return SDPA_OK;
    }
    return build(ctx, slot, plan, options, NULL, "default");
}

sdpa_status sdpa_plan_create(sdpa_context *ctx, const sdpa_attention_desc *desc,
                             const sdpa_plan_options *options, sdpa_plan **out)
{
    if (!ctx) return SDPA_ERR_NULL;
    SDPA__CHECK_ARG(ctx, out, "sdpa_plan_create", "out");
    *out = NULL;
    SDPA__CHECK_ARG(ctx, desc, "sdpa_plan_create", "desc");
    sdpa_plan_options full; /* fields past an older caller's size: defaults */
    sdpa_plan_options_init(&full);
    SDPA__TRY(sdpa__struct_take(ctx, &full, sizeof full, options, SDPA_PLAN_OPTIONS_SIZE_V1,
                                "plan options", "call sdpa_plan_options_init first"));
    options = &full;
    SDPA__CHECK(ctx, (options->flags & ~(SDPA_PLAN_BACKWARD | SDPA_PLAN_NONDETERMINISTIC)) == 0,
                SDPA_ERR_INVALID_ARG, "plan options flags 0x%x has unknown bits", options->flags);
    SDPA__CHECK(ctx, options->workspace_limit >= SDPA_AUTO, SDPA_ERR_INVALID_ARG,
                "workspace_limit %lld is negative (SDPA_AUTO = -1 is the default)",
                (long long)options->workspace_limit);
    sdpa_tile_config tile;
    sdpa_tile_config_init(&tile);
    SDPA__TRY(sdpa__struct_take(ctx, &tile, sizeof tile, options->tile, SDPA_TILE_CONFIG_SIZE_V1,
                                "tile config", "call sdpa_tile_config_init first"));
    if (options->tile) full.tile = &tile;

    sdpa_plan *plan = sdpa__calloc(1, sizeof *plan);
    SDPA__CHECK(ctx, plan, SDPA_ERR_OUT_OF_MEMORY, "out of host memory");
    plan->ctx = ctx;
    plan->flags = options->flags;
    sdpa_status st = sdpa__validate_desc(ctx, desc, &plan->key);
    if (st == SDPA_OK) st = sdpa__validate_flags(ctx, &plan->key.problem, plan->flags);
    if (st == SDPA_OK && (plan->flags & SDPA_PLAN_BACKWARD) && !plan->key.problem.has_lse)
        st = SDPA__FAIL(ctx, SDPA_ERR_INVALID_ARG,
                        "SDPA_PLAN_BACKWARD needs tensors.lse: the backward reads the forward's LSE");
    if (st == SDPA_OK) {
        st = compile_on(ctx, &ctx->primary, plan, options);
        if (st != SDPA_OK && ctx->auto_mode && !ctx->primary.backend->host_memory &&
            fallback_worthy(st)) {
            sdpa__log(ctx, SDPA_LOG_WARN, "%s cannot run this plan (%s: %s); falling back to the CPU",
                      ctx->primary.backend->name, sdpa_status_name(st), ctx->err_message);
            sdpa__slot *cpu;
            st = sdpa__context_fallback(ctx, &cpu);
            /* a forced tile describes the primary backend's kernels: the
             * CPU gets its own configuration */
            sdpa_plan_options cpu_options = *options;
            cpu_options.tile = NULL;
            if (st == SDPA_OK) st = compile_on(ctx, cpu, plan, &cpu_options);
            plan->fallback = st == SDPA_OK;
        }
    }
    if (st != SDPA_OK) {
        free(plan);
        return st;
    }
    *out = plan;
    return SDPA_OK;
}

void sdpa_plan_destroy(sdpa_plan *plan)
{
    if (!plan) return;
    if (plan->slot && plan->state) {
        sdpa__call_plan_free(plan->ctx, plan->slot, plan->state);
    }
    free(plan);
}

size_t sdpa_plan_workspace_size(const sdpa_plan *plan)
{
    if (!plan || !plan->slot) return 0;
    return sdpa__call_plan_workspace(plan->slot, plan->state);
}

sdpa_status sdpa_plan_get_info(const sdpa_plan *plan, sdpa_plan_info *info)
{
    if (!plan) return SDPA_ERR_NULL;
    SDPA__CHECK_ARG(plan->ctx, info, "sdpa_plan_get_info", "info");
    SDPA__CHECK_STRUCT(plan->ctx, info, SDPA_PLAN_INFO_SIZE_V1, "plan info",
                       "set it to sizeof(sdpa_plan_info) before the call");
    sdpa_plan_info *out = info, full;
    info = &full;
    memset(info, 0, sizeof *info);
    info->struct_size = sizeof *info;
    info->backend = plan->slot->backend->kind;
    info->compute_dtype = SDPA_DTYPE_F32;
    info->workspace_bytes = sdpa_plan_workspace_size(plan);
    sdpa__strlcpy(info->kernel, "fused", sizeof info->kernel);
    sdpa__strlcpy(info->source, "default", sizeof info->source);
    sdpa__call_plan_describe(plan->slot, plan->state, info);
    if (plan->tile_source[0]) /* where compile_on's tile came from */
        sdpa__strlcpy(info->source, plan->tile_source, sizeof info->source);
    sdpa__struct_out(out, info, sizeof *info);
    return SDPA_OK;
}

static sdpa_status stage_forward(sdpa__staging *s, const sdpa_forward_tensors *t,
                                 sdpa__fwd_args *a, bool outputs_are_outputs)
{
    for (int i = 0; i < SDPA__T_COUNT; i++) {
        if (!outputs_are_outputs && !sdpa__fwd_read_by_backward(i)) continue; /* stats */
        SDPA__TRY(sdpa__stage(s, sdpa__fwd_slot(t, i), sdpa__fwd_is_output(i, !outputs_are_outputs),
                              sdpa__fwd_ref(a, i)));
    }
    return SDPA_OK;
}

static sdpa_status run(sdpa_plan *plan, sdpa__staging *s, sdpa_status st,
                       const sdpa_forward_tensors *t, const sdpa_backward_tensors *g)
{
    sdpa_context *ctx = plan->ctx;
    sdpa__fwd_args a;
    memset(&a, 0, sizeof a);
    if (st == SDPA_OK) st = stage_forward(s, t, &a, g == NULL);
    if (g) {
        sdpa__bwd_args b;
        memset(&b, 0, sizeof b);
        for (int i = 0; st == SDPA_OK && i < SDPA__G_COUNT; i++)
            st = sdpa__stage(s, sdpa__bwd_slot(g, i), sdpa__bwd_info[i].role == SDPA__ROLE_OUT,
                             sdpa__bwd_ref(&b, i));
        if (st == SDPA_OK)
            st = sdpa__call_backward(ctx, plan->slot, plan->state, &plan->key.problem, &a, &b);
    } else if (st == SDPA_OK) {
        st = sdpa__call_forward(ctx, plan->slot, plan->state, &plan->key.problem, &a);
    }
    if (st == SDPA_OK && sdpa__staging_used(s)) st = sdpa__staging_finish(s);
    sdpa__staging_free(s);
    return st;
}

sdpa_status sdpa_plan_forward(sdpa_plan *plan, const sdpa_forward_tensors *t)
{
    if (!plan) return SDPA_ERR_NULL;
    sdpa_context *ctx = plan->ctx;
    SDPA__CHECK_ARG(ctx, t, "sdpa_plan_forward", "t");
    SDPA__TRY(sdpa__validate_forward_call(ctx, &plan->key, t, false));
    SDPA__TRY(sdpa__validate_aliasing(ctx, t, NULL));
    sdpa__staging s;
    sdpa__staging_init(&s, ctx, plan->slot, plan->slot->backend->host_memory);
    return run(plan, &s, SDPA_OK, t, NULL);
}

sdpa_status sdpa_plan_backward(sdpa_plan *plan, const sdpa_forward_tensors *fwd,
                               const sdpa_backward_tensors *bwd)
{
    if (!plan) return SDPA_ERR_NULL;
    sdpa_context *ctx = plan->ctx;
    SDPA__CHECK_ARG(ctx, fwd, "sdpa_plan_backward", "fwd");
    SDPA__CHECK_ARG(ctx, bwd, "sdpa_plan_backward", "bwd");
    SDPA__CHECK(ctx, plan->flags & SDPA_PLAN_BACKWARD, SDPA_ERR_INVALID_ARG,
                "sdpa_plan_backward: the plan was created without SDPA_PLAN_BACKWARD");
    SDPA__TRY(sdpa__validate_forward_call(ctx, &plan->key, fwd, true));
    SDPA__TRY(sdpa__validate_backward_call(ctx, &plan->key, bwd));
    SDPA__TRY(sdpa__validate_aliasing(ctx, fwd, bwd));
    sdpa__staging s;
    sdpa__staging_init(&s, ctx, plan->slot, plan->slot->backend->host_memory);
    return run(plan, &s, SDPA_OK, fwd, bwd);
}
