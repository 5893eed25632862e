/*
 * vk_split.h — splitting one logical Vulkan dispatch into several
 * (vk_split.c), so that no single vkCmdDispatch carries more than a bounded
 * amount of work and none risks a driver's watchdog on long rows (issue 16).
 * Used by vk_dispatch.c for every pipeline of a plan.
 */
#ifndef SDPA_VK_SPLIT_H
#define SDPA_VK_SPLIT_H

#include "vk_internal.h"

/* Default bound on one dispatch's work, in multiply-adds (estimated from the
 * shaders' loops, sdpa__vk_split_work): 2^34, about 17 ms at 1 TFLOP/s and
 * under a second on a 50 GFLOP/s mobile GPU. */
#define SDPA__VK_DISPATCH_WORK ((uint64_t)1 << 34)

/* Test-only: SDPA_TEST_VK_DISPATCH_WORK=<multiply-adds> in the environment
 * replaces the bound (1 forces one work-group per dispatch). */
#define SDPA__VK_DISPATCH_WORK_ENV "SDPA_TEST_VK_DISPATCH_WORK"

/* Default bound on the keys one forward invocation walks: longer rows get
 * more key splits (vk_plan.c, at most its MAX_SPLIT), combined by LSE. */
#define SDPA__VK_INVOCATION_KEYS 16384

/* Test-only: SDPA_TEST_VK_DISPATCH_KEYS=<keys> replaces that bound. */
#define SDPA__VK_INVOCATION_KEYS_ENV "SDPA_TEST_VK_DISPATCH_KEYS"

/* The forward's key split count for p given the plan's choice `nsplit`: at
 * least enough splits that none walks more keys than the bound. */
int sdpa__vk_split_keys(const sdpa__problem *p, int nsplit);

/* How one logical dispatch of `groups` work-groups is recorded: a grid of
 * `rows` rows of `gx` groups (the shaders' flat_id() wraps at
 * gl_NumWorkGroups.x, so every piece keeps width gx), cut into pieces of
 * `rows_per` rows, each recorded with vkCmdDispatchBase at its first row. */
typedef struct sdpa__vk_split {
    uint32_t gx;
    uint64_t rows, rows_per, pieces;
} sdpa__vk_split;

/* Estimated multiply-adds of one invocation of pipeline `pipe` of pl. */
uint64_t sdpa__vk_split_work(const sdpa__vk_plan *pl, int pipe);

/* Plans the pieces of `invocations` invocations of pipeline `pipe` within
 * the device's group-count limits and the work bound; SDPA_ERR_UNSUPPORTED
 * (message set) when the grid cannot fit the device's limits. */
sdpa_status sdpa__vk_split_plan(sdpa_context *ctx, const sdpa__vk_state *s,
                                const sdpa__vk_plan *pl, int pipe, uint64_t invocations,
                                sdpa__vk_split *out);

/* Records the pieces into cb (the pipeline and descriptor set bound). */
void sdpa__vk_split_record(VkCommandBuffer cb, const sdpa__vk_split *sp);

/* Test hook: pieces recorded with a non-zero base so far, all contexts. */
uint64_t sdpa__vk_split_based_pieces(void);

#endif
