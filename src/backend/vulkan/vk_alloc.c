/*
 * vk_alloc.c — a simple sub-allocator for the Vulkan backend's buffers.
 * Device memory is allocated in blocks of SDPA__VK_BLOCK_SIZE (64 MiB), or
 * the request size when larger (then the block is released as soon as it is
 * empty). Buffers are carved from a block of the right memory type with a
 * first-fit free list (sorted by offset) that honours the buffer's
 * VkMemoryRequirements alignment and, for host-visible memory, the device's
 * nonCoherentAtomSize. Freeing returns the range and merges it with its
 * neighbours; an empty block is released unless it is the only empty block
 * (one spare is kept until the context is destroyed). Host-visible blocks are
 * mapped once at creation; a buffer's pointer is the block's plus its offset.
 *
 * Thread safety: as the rest of the context (one thread at a time).
 * Called by vk_buffer.c (create/destroy) and vk_device.c (context teardown).
 */
#include "vk_internal.h"

#include <stdlib.h>
#include <string.h>

#define SDPA__VK_BLOCK_SIZE ((VkDeviceSize)64 << 20)

typedef struct vk_range {
    VkDeviceSize offset, size;
} vk_range;

struct sdpa__vk_block {
    struct sdpa__vk_block *next;
    VkDeviceMemory memory;
    uint32_t type;
    VkDeviceSize size;
    VkDeviceSize used;          /* bytes handed out (including alignment pads) */
    void *mapped;               /* whole-block mapping, or NULL */
    vk_range *free;             /* sorted by offset, never adjacent */
    size_t nfree, capfree;
};

static VkDeviceSize align_up(VkDeviceSize v, VkDeviceSize a)
{
    return a > 1 ? (v + a - 1) / a * a : v;
}

/* First fit in `blk`: on success sets *offset and the range taken. */
static bool block_take(struct sdpa__vk_block *blk, VkDeviceSize size, VkDeviceSize align,
                       VkDeviceSize *offset, VkDeviceSize *taken_start,
                       VkDeviceSize *taken_size)
{
    for (size_t i = 0; i < blk->nfree; i++) {
        vk_range *r = &blk->free[i];
        VkDeviceSize start = align_up(r->offset, align);
        if (start < r->offset || start - r->offset > r->size) continue;
        if (r->size - (start - r->offset) < size) continue;
        VkDeviceSize end = start + size;
        /* Keep the pad before `start` inside the allocation so the range
         * returned on free is exactly what was removed. */
        *offset = start;
        *taken_start = r->offset;
        *taken_size = end - r->offset;
        VkDeviceSize rend = r->offset + r->size;
        if (end == rend) {
            memmove(r, r + 1, (blk->nfree - i - 1) * sizeof *r);
            blk->nfree--;
        } else {
            r->size = rend - end;
            r->offset = end;
        }
        blk->used += *taken_size;
        return true;
    }
    return false;
}

/* Returns a range to the free list, merging neighbours; false when the list
 * could not grow (host OOM: the range is then lost until the block dies). */
static bool block_give(struct sdpa__vk_block *blk, VkDeviceSize start, VkDeviceSize size)
{
    blk->used -= size;
    size_t i = 0;
    while (i < blk->nfree && blk->free[i].offset < start) i++;
    bool merge_prev = i > 0 && blk->free[i - 1].offset + blk->free[i - 1].size == start;
    bool merge_next = i < blk->nfree && start + size == blk->free[i].offset;
    if (merge_prev && merge_next) {
        blk->free[i - 1].size += size + blk->free[i].size;
        memmove(&blk->free[i], &blk->free[i + 1], (blk->nfree - i - 1) * sizeof *blk->free);
        blk->nfree--;
    } else if (merge_prev) {
        blk->free[i - 1].size += size;
    } else if (merge_next) {
        blk->free[i].offset = start;
        blk->free[i].size += size;
    } else {
        if (blk->nfree == blk->capfree) {
            size_t cap = blk->capfree ? blk->capfree * 2 : 8;
            /* plain realloc, outside fault injection: freeing cannot fail,
             * so a failure is absorbed by design (the range stays lost until
             * the block dies), which the fault walk does not allow */
            vk_range *nf = realloc(blk->free, cap * sizeof *nf);
            if (!nf) return false;
            blk->free = nf;
            blk->capfree = cap;
        }
        memmove(&blk->free[i + 1], &blk->free[i], (blk->nfree - i) * sizeof *blk->free);
        blk->free[i].offset = start;
        blk->free[i].size = size;
        blk->nfree++;
    }
    return true;
}

static void block_release(sdpa__vk_state *s, struct sdpa__vk_block *blk);

/* After a free: an empty block is kept as the one spare unless it is
 * oversized or another empty block already serves as the spare. */
static void block_maybe_release(sdpa__vk_state *s, struct sdpa__vk_block *blk)
{
    if (blk->used != 0) return;
    bool other_empty = false;
    for (struct sdpa__vk_block *it = s->blocks; it; it = it->next)
        if (it != blk && it->used == 0) other_empty = true;
    if (blk->size > SDPA__VK_BLOCK_SIZE || other_empty) block_release(s, blk);
}

static void block_release(sdpa__vk_state *s, struct sdpa__vk_block *blk)
{
    struct sdpa__vk_block **pp = &s->blocks;
    while (*pp && *pp != blk) pp = &(*pp)->next;
    if (*pp) *pp = blk->next;
    if (blk->mapped) vkUnmapMemory(s->device, blk->memory);
    vkFreeMemory(s->device, blk->memory, NULL);
    free(blk->free);
    free(blk);
    s->block_count--;
}

static sdpa_status block_new(sdpa_context *ctx, sdpa__vk_state *s, uint32_t type,
                             VkDeviceSize need, struct sdpa__vk_block **out)
{
    *out = NULL;
    struct sdpa__vk_block *blk = sdpa__calloc(1, sizeof *blk);
    SDPA__CHECK(ctx, blk, SDPA_ERR_OUT_OF_MEMORY, "vulkan: out of host memory");
    blk->capfree = 8;
    blk->free = sdpa__malloc(blk->capfree * sizeof *blk->free);
    if (!blk->free) {
        free(blk);
        return SDPA__FAIL(ctx, SDPA_ERR_OUT_OF_MEMORY, "vulkan: out of host memory");
    }
    VkDeviceSize size = need > SDPA__VK_BLOCK_SIZE ? need : SDPA__VK_BLOCK_SIZE;
    VkMemoryAllocateInfo mai = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
        .allocationSize = size,
        .memoryTypeIndex = type,
    };
    VkResult r = vkAllocateMemory(s->device, &mai, NULL, &blk->memory);
    if (r != VK_SUCCESS && size > need) {
        /* A full block does not fit (small heap): try the exact size. */
        size = mai.allocationSize = need;
        r = vkAllocateMemory(s->device, &mai, NULL, &blk->memory);
    }
    if (r != VK_SUCCESS) {
        free(blk->free);
        free(blk);
        return SDPA__FAIL_NATIVE(ctx, sdpa__vk_status(r, SDPA_ERR_OUT_OF_MEMORY), r,
                                 "vulkan: vkAllocateMemory(%llu bytes) failed (%s)",
                                 (unsigned long long)size, sdpa__vk_result_name(r));
    }
    blk->type = type;
    blk->size = size;
    blk->free[0].offset = 0;
    blk->free[0].size = size;
    blk->nfree = 1;
    /* Only coherent memory is mapped: writes and reads are plain memcpy. */
    const VkMemoryPropertyFlags hv = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                     VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    if ((s->mem_props.memoryTypes[type].propertyFlags & hv) == hv) {
        r = vkMapMemory(s->device, blk->memory, 0, VK_WHOLE_SIZE, 0, &blk->mapped);
        if (r != VK_SUCCESS) blk->mapped = NULL; /* buffers fall back to staging */
    }
    blk->next = s->blocks;
    s->blocks = blk;
    s->block_count++;
    *out = blk;
    return SDPA_OK;
}

sdpa_status sdpa__vk_alloc_bind(sdpa_context *ctx, sdpa__vk_state *s, sdpa__vk_buffer *b,
                                const VkMemoryRequirements *req, uint32_t type)
{
    VkDeviceSize align = req->alignment ? req->alignment : 1;
    const VkMemoryPropertyFlags flags = s->mem_props.memoryTypes[type].propertyFlags;
    if (flags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) {
        /* Keep mapped ranges atom-aligned so flushes of non-coherent memory
         * never touch a neighbour. */
        VkDeviceSize atom = s->props.limits.nonCoherentAtomSize;
        if (atom > align) align = align_up(atom, align); /* both powers of two */
    }
    VkDeviceSize size = align_up(req->size, align);
    SDPA__CHECK(ctx, size >= req->size, SDPA_ERR_OUT_OF_MEMORY, "vulkan: buffer size overflows");
    VkDeviceSize offset = 0, tstart = 0, tsize = 0;
    struct sdpa__vk_block *blk = NULL;
    for (struct sdpa__vk_block *it = s->blocks; it; it = it->next)
        if (it->type == type && it->size - it->used >= size &&
            block_take(it, size, align, &offset, &tstart, &tsize)) {
            blk = it;
            break;
        }
    if (!blk) {
        SDPA__TRY(block_new(ctx, s, type, size, &blk));
        if (!block_take(blk, size, align, &offset, &tstart, &tsize)) {
            block_release(s, blk);
            return SDPA__FAIL(ctx, SDPA_ERR_DEVICE, "vulkan: sub-allocation failed");
        }
    }
    VkResult r = vkBindBufferMemory(s->device, b->buffer, blk->memory, offset);
    if (r != VK_SUCCESS) {
        block_give(blk, tstart, tsize);
        block_maybe_release(s, blk);
        return SDPA__FAIL_NATIVE(ctx, sdpa__vk_status(r, SDPA_ERR_DEVICE), r,
                                 "vulkan: vkBindBufferMemory failed (%s)",
                                 sdpa__vk_result_name(r));
    }
    b->block = blk;
    b->memory = blk->memory;
    b->offset = offset;
    b->range_start = tstart;
    b->range_size = tsize;
    b->mapped = blk->mapped ? (char *)blk->mapped + offset : NULL;
    return SDPA_OK;
}

void sdpa__vk_alloc_release(sdpa__vk_state *s, sdpa__vk_buffer *b)
{
    struct sdpa__vk_block *blk = b->block;
    if (!blk) return;
    b->block = NULL;
    b->memory = VK_NULL_HANDLE;
    b->mapped = NULL;
    block_give(blk, b->range_start, b->range_size);
    block_maybe_release(s, blk);
}

void sdpa__vk_alloc_destroy_all(sdpa__vk_state *s)
{
    while (s->blocks) block_release(s, s->blocks);
}

int sdpa__vk_memory_block_count(sdpa_context *ctx)
{
    if (!ctx || sdpa_context_backend(ctx) != SDPA_BACKEND_VULKAN) return -1;
    sdpa__vk_state *s = sdpa__context_primary_state(ctx, &sdpa__backend_vulkan);
    return s ? s->block_count : -1;
}
