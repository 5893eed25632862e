/*
 * vk_peak.c — the Vulkan device's fp32 FMA peak: dispatches
 * shaders/vulkan/peak.comp (8 independent vec4 FMA chains per invocation)
 * and times it with timestamp queries around the dispatch, or with the host
 * clock around submit + fence wait when the queue family has no timestamps
 * (`method` says which).
 *
 * The shader has its own one-binding descriptor layout and a push-constant
 * block (iterations, output length, a, b); it is embedded from its own table
 * (vk_peak_spv.c), outside the attention shaders' source hash, so profiles
 * stay fresh. Work-group size 64 on CPU devices (llvmpipe), 256 on GPUs
 * (capped by the device); 4 work-groups per host CPU on CPU devices, 1024 on
 * GPUs. The common loop sdpa__peak_rounds (src/core/peak_rounds.c) sizes
 * the runs and counts the best; a size is a loop count, kept under
 * llvmpipe's per-invocation loop budget where it applies, beyond which the
 * dispatch grows instead. Waits for the queue first so earlier work is not
 * timed.
 * Every object is destroyed on every path. Called through the backend table
 * by src/core/peak.c.
 */
#include "vk_internal.h"
#include "vk_peak_spv.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define PEAK_FLOPS_PER_ITER (4.0 * 8.0 * 4.0 * 2.0) /* steps x chains x lanes x 2 */
#define PEAK_MAX_ITERS (1u << 24)

typedef struct peak_push {
    uint32_t iters, out_len;
    float a, b;
} peak_push;

typedef struct peak_vk {
    sdpa_context *ctx;
    sdpa__vk_state *s;
    VkDescriptorSetLayout set_layout;
    VkPipelineLayout layout;
    VkPipeline pipe;
    VkDescriptorPool pool;
    VkDescriptorSet set;
    sdpa__vk_buffer *out;
    VkCommandBuffer cmd;
    VkFence fence;
    VkQueryPool queries;   /* VK_NULL_HANDLE: host clock */
    uint64_t ts_mask;
    double ts_period_ns;
    uint32_t out_len;
    uint32_t wg, base_groups, max_iters, max_groups; /* run sizes (measure) */
    uint32_t iters, groups;                           /* the last run's */
} peak_vk;

static sdpa_status vkfail(sdpa_context *ctx, VkResult r, const char *what, sdpa_status otherwise)
{
    return SDPA__FAIL_NATIVE(ctx, sdpa__vk_status(r, otherwise), r, "vulkan: %s failed (%s)",
                             what, sdpa__vk_result_name(r));
}
#define VK_TRY(ctx, call, what, otherwise)                                   \
    do {                                                                     \
        VkResult r_ = (call);                                                \
        if (r_ != VK_SUCCESS) return vkfail((ctx), r_, (what), (otherwise)); \
    } while (0)
/* Creates into `field`, leaving it VK_NULL_HANDLE on failure (the output of a
 * failed vkCreate* is not to be trusted), so destroy_objects stays safe. */
#define VK_CREATE(ctx, call, field, what, otherwise)                         \
    do {                                                                     \
        VkResult r_ = (call);                                                \
        if (r_ != VK_SUCCESS) {                                              \
            (field) = VK_NULL_HANDLE;                                        \
            return vkfail((ctx), r_, (what), (otherwise));                   \
        }                                                                    \
    } while (0)

static sdpa_status create_objects(peak_vk *p, uint32_t wg)
{
    sdpa_context *ctx = p->ctx;
    sdpa__vk_state *s = p->s;
    VkDescriptorSetLayoutBinding bind = {
        .binding = 0,
        .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
        .descriptorCount = 1,
        .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
    };
    VkDescriptorSetLayoutCreateInfo dl = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
        .bindingCount = 1,
        .pBindings = &bind,
    };
    VK_CREATE(ctx, vkCreateDescriptorSetLayout(s->device, &dl, NULL, &p->set_layout),
              p->set_layout, "vkCreateDescriptorSetLayout(peak)", SDPA_ERR_DEVICE);
    VkPushConstantRange range = {VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(peak_push)};
    VkPipelineLayoutCreateInfo pl = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
        .setLayoutCount = 1,
        .pSetLayouts = &p->set_layout,
        .pushConstantRangeCount = 1,
        .pPushConstantRanges = &range,
    };
    VK_CREATE(ctx, vkCreatePipelineLayout(s->device, &pl, NULL, &p->layout), p->layout,
              "vkCreatePipelineLayout(peak)", SDPA_ERR_DEVICE);

    SDPA__TRY(sdpa__vk_compute_pipeline(ctx, s, (const uint32_t *)(const void *)
                                        sdpa__vk_peak_spv_peak_spv,
                                        sdpa__vk_peak_spv_peak_spv_size, p->layout, &wg, 1,
                                        "peak.spv", &p->pipe));

    VkDescriptorPoolSize size = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1};
    VkDescriptorPoolCreateInfo dpi = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
        .maxSets = 1,
        .poolSizeCount = 1,
        .pPoolSizes = &size,
    };
    VK_CREATE(ctx, vkCreateDescriptorPool(s->device, &dpi, NULL, &p->pool), p->pool,
              "vkCreateDescriptorPool(peak)", SDPA_ERR_DEVICE);
    VkDescriptorSetAllocateInfo dsi = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
        .descriptorPool = p->pool,
        .descriptorSetCount = 1,
        .pSetLayouts = &p->set_layout,
    };
    VK_CREATE(ctx, vkAllocateDescriptorSets(s->device, &dsi, &p->set), p->set,
              "vkAllocateDescriptorSets(peak)", SDPA_ERR_DEVICE);
    SDPA__TRY(sdpa__vk_buffer_create(ctx, s, (size_t)p->out_len * sizeof(float),
                                     VK_BUFFER_USAGE_STORAGE_BUFFER_BIT, false, &p->out));
    VkDescriptorBufferInfo bi = {.buffer = p->out->buffer, .offset = 0, .range = VK_WHOLE_SIZE};
    VkWriteDescriptorSet w = {
        .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
        .dstSet = p->set,
        .dstBinding = 0,
        .descriptorCount = 1,
        .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
        .pBufferInfo = &bi,
    };
    vkUpdateDescriptorSets(s->device, 1, &w, 0, NULL);

    VkCommandBufferAllocateInfo cai = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
        .commandPool = s->cmd_pool,
        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
        .commandBufferCount = 1,
    };
    VK_CREATE(ctx, vkAllocateCommandBuffers(s->device, &cai, &p->cmd), p->cmd,
              "vkAllocateCommandBuffers(peak)", SDPA_ERR_DEVICE);
    VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VK_CREATE(ctx, vkCreateFence(s->device, &fci, NULL, &p->fence), p->fence,
              "vkCreateFence(peak)", SDPA_ERR_DEVICE);

    /* Timestamps where the queue family has them. */
    uint32_t nfam = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(s->phys, &nfam, NULL);
    VkQueueFamilyProperties fam[64];
    if (nfam > 64) nfam = 64;
    vkGetPhysicalDeviceQueueFamilyProperties(s->phys, &nfam, fam);
    uint32_t bits = s->queue_family < nfam ? fam[s->queue_family].timestampValidBits : 0;
    double period = s->props.limits.timestampPeriod;
    if (bits > 0 && period > 0) {
        VkQueryPoolCreateInfo qi = {
            .sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
            .queryType = VK_QUERY_TYPE_TIMESTAMP,
            .queryCount = 2,
        };
        if (vkCreateQueryPool(s->device, &qi, NULL, &p->queries) != VK_SUCCESS) {
            p->queries = VK_NULL_HANDLE; /* fall back to the host clock */
        } else {
            p->ts_mask = bits >= 64 ? ~0ull : (1ull << bits) - 1;
            p->ts_period_ns = period;
        }
    }
    return SDPA_OK;
}

static void destroy_objects(peak_vk *p)
{
    sdpa__vk_state *s = p->s;
    if (p->queries) vkDestroyQueryPool(s->device, p->queries, NULL);
    if (p->fence) vkDestroyFence(s->device, p->fence, NULL);
    if (p->cmd) vkFreeCommandBuffers(s->device, s->cmd_pool, 1, &p->cmd);
    if (p->out) sdpa__vk_buffer_destroy(s, p->out);
    if (p->pool) vkDestroyDescriptorPool(s->device, p->pool, NULL);
    if (p->pipe) vkDestroyPipeline(s->device, p->pipe, NULL);
    if (p->layout) vkDestroyPipelineLayout(s->device, p->layout, NULL);
    if (p->set_layout) vkDestroyDescriptorSetLayout(s->device, p->set_layout, NULL);
}

/* One dispatch of `groups` work-groups with `iters` loop iterations; its
 * time in seconds. */
static sdpa_status dispatch_timed(peak_vk *p, uint32_t iters, uint32_t groups, double *seconds)
{
    sdpa_context *ctx = p->ctx;
    sdpa__vk_state *s = p->s;
    VK_TRY(ctx, vkResetCommandBuffer(p->cmd, 0), "vkResetCommandBuffer(peak)", SDPA_ERR_DEVICE);
    VkCommandBufferBeginInfo bi = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
        .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
    };
    VK_TRY(ctx, vkBeginCommandBuffer(p->cmd, &bi), "vkBeginCommandBuffer(peak)", SDPA_ERR_DEVICE);
    if (p->queries) {
        vkCmdResetQueryPool(p->cmd, p->queries, 0, 2);
        vkCmdWriteTimestamp(p->cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, p->queries, 0);
    }
    peak_push push = {iters, p->out_len, 0.999f, 0.001f};
    vkCmdBindPipeline(p->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p->pipe);
    vkCmdBindDescriptorSets(p->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p->layout, 0, 1, &p->set, 0,
                            NULL);
    vkCmdPushConstants(p->cmd, p->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof push, &push);
    vkCmdDispatch(p->cmd, groups, 1, 1);
    if (p->queries)
        vkCmdWriteTimestamp(p->cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, p->queries, 1);
    VK_TRY(ctx, vkEndCommandBuffer(p->cmd), "vkEndCommandBuffer(peak)", SDPA_ERR_DEVICE);
    VkSubmitInfo si = {
        .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
        .commandBufferCount = 1,
        .pCommandBuffers = &p->cmd,
    };
    double t0 = sdpa__now();
    VK_TRY(ctx, vkQueueSubmit(s->queue, 1, &si, p->fence), "vkQueueSubmit(peak)", SDPA_ERR_DEVICE);
    VkResult r = vkWaitForFences(s->device, 1, &p->fence, VK_TRUE, UINT64_MAX);
    double t1 = sdpa__now();
    if (r == VK_SUCCESS) r = vkResetFences(s->device, 1, &p->fence);
    if (r != VK_SUCCESS) return vkfail(ctx, r, "vkWaitForFences(peak)", SDPA_ERR_DEVICE);
    if (!p->queries) {
        *seconds = t1 - t0;
        return SDPA_OK;
    }
    uint64_t ts[2] = {0, 0};
    VK_TRY(ctx, vkGetQueryPoolResults(s->device, p->queries, 0, 2, sizeof ts, ts, sizeof ts[0],
                                      VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
           "vkGetQueryPoolResults(peak)", SDPA_ERR_DEVICE);
    uint64_t a = ts[0] & p->ts_mask, b = ts[1] & p->ts_mask;
    *seconds = b > a ? (double)(b - a) * p->ts_period_ns * 1e-9 : 0.0;
    return SDPA_OK;
}

/* sdpa__peak_run_fn: one dispatch of `size` loop iterations per invocation;
 * past the loop budget the iterations stay there and the groups grow. */
static sdpa_status peak_step(void *user, double size, double *seconds, double *flops, int *full)
{
    peak_vk *p = user;
    p->iters = size >= p->max_iters ? p->max_iters : (uint32_t)size;
    double g = (double)p->base_groups * (size > p->max_iters ? size / p->max_iters : 1.0);
    p->groups = g >= p->max_groups ? p->max_groups : (uint32_t)g;
    *full = p->iters == p->max_iters && p->groups == p->max_groups;
    *flops = (double)p->groups * p->wg * (double)p->iters * PEAK_FLOPS_PER_ITER;
    return dispatch_timed(p, p->iters, p->groups, seconds);
}

static sdpa_status measure(peak_vk *p, double seconds, uint32_t wg, uint32_t base_groups,
                           double *gflops)
{
    sdpa__vk_state *s = p->s;
    p->wg = wg;
    p->max_iters = s->caps.loop_limited ? SDPA__VK_LOOP_BUDGET : PEAK_MAX_ITERS;
    p->max_groups = s->caps.max_groups[0] ? s->caps.max_groups[0] : 65535;
    p->base_groups = base_groups > p->max_groups ? p->max_groups : base_groups;
    double best = 0;
    SDPA__TRY(sdpa__peak_rounds(peak_step, p, 16, seconds, &best));
    SDPA__CHECK(p->ctx, best > 0, SDPA_ERR_DEVICE, "vulkan: peak shader reported no elapsed time");
    sdpa__log(p->ctx, SDPA_LOG_DEBUG,
              "vulkan: peak %.1f GFLOP/s: %u iterations, %u x %u invocations",
              best, p->iters, p->groups, wg);
    *gflops = best;
    return SDPA_OK;
}

sdpa_status sdpa__vk_measure_peak(sdpa_context *ctx, void *state, double seconds, double *gflops,
                                  char *method, size_t method_len)
{
    sdpa__vk_state *s = state;
    SDPA__CHECK(ctx, s, SDPA_ERR_INTERNAL, "vulkan: no context state");
    SDPA__TRY(sdpa__vk_finish(ctx, state));
    if (!(seconds > 0)) seconds = 0.25;
    bool cpu = s->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
    uint32_t wg = cpu ? 64 : 256;
    if (s->caps.max_wg && wg > s->caps.max_wg) wg = s->caps.max_wg;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    uint32_t groups = cpu ? 4u * (uint32_t)(ncpu > 0 && ncpu < 4096 ? ncpu : 1) : 1024u;

    peak_vk p = {.ctx = ctx, .s = s, .out_len = wg * groups};
    sdpa_status st = create_objects(&p, wg);
    if (st == SDPA_OK) st = measure(&p, seconds, wg, groups, gflops);
    if (st == SDPA_OK && method && method_len)
        snprintf(method, method_len, "vulkan fma shader vec4, %s",
                 p.queries ? "timestamp queries" : "host clock (no timestamps)");
    destroy_objects(&p);
    return st;
}
