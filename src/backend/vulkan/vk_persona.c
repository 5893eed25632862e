/*
 * vk_persona.c — test-only GPU personas for the Vulkan backend. With the
 * environment variable SDPA_TEST_PERSONA=vk-<name>, the device queries in
 * the loader table (vk_api.h) are wrapped so that the driver (lavapipe in
 * CI) reports the limits or memory layout of a GPU, and the library's own
 * limit checks choose what that GPU would get; that configuration then runs
 * here. Every persona also reports a discrete GPU, so the GPU-class
 * shaders run (vk_plan.c). Nothing else changes. Names not starting with "vk-" are left to
 * other backends (the OpenCL personas are "cl-..."); an unknown "vk-" name
 * is ignored. Never set it in production: docs/vulkan.md "Test personas".
 *
 *   vk-sb4, vk-sb8  maxPerStageDescriptorStorageBuffers (and
 *                   maxDescriptorSetStorageBuffers) 4 or 8; a descriptor-set
 *                   layout with more storage buffers is refused, as the
 *                   validation layer would flag it and a real driver
 *                   would misbehave.
 *   vk-small        16 KiB shared memory, 128 invocations per work-group.
 *   vk-nobar        no memory type both host-visible and device-local: each
 *                   real type appears as a device-local type and a
 *                   host-visible one on a separate host heap; mapping memory
 *                   of a device-local-only type fails.
 *   vk-bar256       a device-local heap, a 256 MiB host-visible device-local
 *                   heap (BAR) and a host heap; allocations from the BAR type
 *                   are counted and fail with OUT_OF_DEVICE_MEMORY past
 *                   256 MiB, so the fallback path really runs.
 *   vk-denorm16     shaderDenormPreserveFloat16 (as RADV, NVIDIA and ANV
 *                   report; lavapipe does not promise it), so fwd_fa2h (q
 *                   in f16 registers) is chosen and its modules request
 *                   DenormPreserve 16. Not enforced: lavapipe does keep f16
 *                   subnormals (tests/test_vulkan.c fa2_f16 checks the
 *                   results), but the validation layer, which sees the real
 *                   properties, flags the request: run it without
 *                   SDPA_VK_VALIDATION.
 * Pretend memory types are honest: an allocation goes to the real type it
 * stands for. Subgroup size is not a persona: lavapipe's is fixed by
 * LP_NATIVE_VECTOR_WIDTH (256: 8, 128: 4), which CI sets instead.
 *
 * sdpa__vk_persona_apply() runs at every instance creation (vk_device.c) and
 * only writes the table when the persona changes.
 */
#define SDPA__VK_API_NO_REDIRECT
#include "vk_internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MEM_REAL, MEM_NOBAR, MEM_BAR256 };

typedef struct persona {
    const char *name;
    uint32_t storage_buffers; /* 0: real */
    uint32_t shared_bytes;
    uint32_t invocations;
    int memory;
    bool denorm16; /* reports shaderDenormPreserveFloat16 */
} persona;

static const persona personas[] = {
    {"vk-sb4", 4, 0, 0, MEM_REAL, false},
    {"vk-sb8", 8, 0, 0, MEM_REAL, false},
    {"vk-small", 0, 16384, 128, MEM_REAL, false},
    {"vk-nobar", 0, 0, 0, MEM_NOBAR, false},
    {"vk-bar256", 0, 0, 0, MEM_BAR256, false},
    {"vk-denorm16", 0, 0, 0, MEM_REAL, true},
};

#define BAR_BYTES ((VkDeviceSize)256 << 20)
#define MAX_ALLOCS 4096

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static sdpa__vk_api_table real;
static bool real_saved;
static const persona *active;

/* Pretend memory type -> real type, and what it pretends to be. */
enum { KIND_DL, KIND_BAR, KIND_HOST };
static struct { uint32_t real; int kind; } types[VK_MAX_MEMORY_TYPES];
static uint32_t ntypes;
/* Live allocations (for the BAR count and map refusal). */
static struct { VkDeviceMemory m; VkDeviceSize size; int kind; } allocs[MAX_ALLOCS];
static VkDeviceSize bar_used;

static const VkMemoryPropertyFlags HOST_FLAGS = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                                VK_MEMORY_PROPERTY_HOST_COHERENT_BIT |
                                                VK_MEMORY_PROPERTY_HOST_CACHED_BIT;

static void limits(VkPhysicalDeviceLimits *l)
{
    const persona *p = active;
    if (!p) return;
    if (p->storage_buffers) {
        l->maxPerStageDescriptorStorageBuffers = p->storage_buffers;
        l->maxDescriptorSetStorageBuffers = p->storage_buffers;
    }
    if (p->shared_bytes) l->maxComputeSharedMemorySize = p->shared_bytes;
    if (p->invocations) {
        l->maxComputeWorkGroupInvocations = p->invocations;
        for (int i = 0; i < 3; i++)
            if (l->maxComputeWorkGroupSize[i] > p->invocations)
                l->maxComputeWorkGroupSize[i] = p->invocations;
    }
}

/* Every persona is a discrete GPU of no known vendor, named after the
 * persona ("vk-sb4 persona on llvmpipe (...)": the driver's name stays in it,
 * so its loop budget still applies): the vendor defaults table
 * (src/core/device_table.c) then classes it GPU-style, the library chooses
 * its GPU-class shaders (sdpa__vk_gpu_class, vk_plan.c), and they run here. */
static void gpu_type(VkPhysicalDeviceProperties *p)
{
    if (!active) return;
    p->deviceType = VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU;
    p->vendorID = 0;
    char real_name[sizeof p->deviceName];
    memcpy(real_name, p->deviceName, sizeof real_name);
    real_name[sizeof real_name - 1] = '\0';
    snprintf(p->deviceName, sizeof p->deviceName, "%.32s persona on %.200s", active->name, real_name);
}

static VKAPI_ATTR void VKAPI_CALL props(VkPhysicalDevice d, VkPhysicalDeviceProperties *p)
{
    real.vkGetPhysicalDeviceProperties(d, p);
    limits(&p->limits);
    gpu_type(p);
}

static VKAPI_ATTR void VKAPI_CALL props2(VkPhysicalDevice d, VkPhysicalDeviceProperties2 *p)
{
    real.vkGetPhysicalDeviceProperties2(d, p);
    limits(&p->properties.limits);
    gpu_type(&p->properties);
    for (VkBaseOutStructure *e = p->pNext; e && active && active->denorm16; e = e->pNext)
        if (e->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FLOAT_CONTROLS_PROPERTIES)
            ((VkPhysicalDeviceFloatControlsProperties *)(void *)e)->shaderDenormPreserveFloat16 =
                VK_TRUE;
}

static VKAPI_ATTR void VKAPI_CALL mem_props(VkPhysicalDevice d,
                                            VkPhysicalDeviceMemoryProperties *m)
{
    real.vkGetPhysicalDeviceMemoryProperties(d, m);
    if (!active || active->memory == MEM_REAL) return;
    VkPhysicalDeviceMemoryProperties r = *m;
    uint32_t nh = r.memoryHeapCount, host_heap = nh, bar_heap = nh;
    VkDeviceSize biggest = 0;
    for (uint32_t h = 0; h < nh; h++)
        if (r.memoryHeaps[h].size > biggest) biggest = r.memoryHeaps[h].size;
    if (nh + 2 > VK_MAX_MEMORY_HEAPS) return;
    if (active->memory == MEM_BAR256) {
        m->memoryHeaps[nh] = (VkMemoryHeap){BAR_BYTES, VK_MEMORY_HEAP_DEVICE_LOCAL_BIT};
        host_heap = nh + 1;
    }
    m->memoryHeaps[host_heap] = (VkMemoryHeap){biggest, 0};
    m->memoryHeapCount = host_heap + 1;
    uint32_t n = 0;
    for (uint32_t i = 0; i < r.memoryTypeCount && n + 3 <= VK_MAX_MEMORY_TYPES; i++) {
        VkMemoryPropertyFlags f = r.memoryTypes[i].propertyFlags;
        int kinds[3], nk = 0;
        if (f & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) kinds[nk++] = KIND_DL;
        if ((f & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) && active->memory == MEM_BAR256 &&
            (f & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT))
            kinds[nk++] = KIND_BAR;
        if (f & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) kinds[nk++] = KIND_HOST;
        for (int k = 0; k < nk; k++) {
            VkMemoryType t = r.memoryTypes[i];
            if (kinds[k] == KIND_DL) t.propertyFlags &= ~HOST_FLAGS;
            if (kinds[k] == KIND_BAR) t.heapIndex = bar_heap;
            if (kinds[k] == KIND_HOST) {
                t.propertyFlags &= ~(VkMemoryPropertyFlags)VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
                t.heapIndex = host_heap;
            }
            m->memoryTypes[n] = t;
            types[n].real = i;
            types[n].kind = kinds[k];
            n++;
        }
    }
    m->memoryTypeCount = n;
    ntypes = n;
}

static uint32_t pretend_bits(uint32_t real_bits)
{
    if (!active || active->memory == MEM_REAL) return real_bits;
    uint32_t bits = 0;
    for (uint32_t t = 0; t < ntypes; t++)
        if (real_bits & (1u << types[t].real)) bits |= 1u << t;
    return bits;
}

static VKAPI_ATTR void VKAPI_CALL buffer_reqs(VkDevice d, VkBuffer b, VkMemoryRequirements *r)
{
    real.vkGetBufferMemoryRequirements(d, b, r);
    r->memoryTypeBits = pretend_bits(r->memoryTypeBits);
}

static VKAPI_ATTR VkResult VKAPI_CALL alloc_memory(VkDevice d, const VkMemoryAllocateInfo *ai,
                                                   const VkAllocationCallbacks *cb,
                                                   VkDeviceMemory *out)
{
    if (!active || active->memory == MEM_REAL) return real.vkAllocateMemory(d, ai, cb, out);
    if (ai->memoryTypeIndex >= ntypes) return VK_ERROR_OUT_OF_DEVICE_MEMORY;
    VkMemoryAllocateInfo r = *ai;
    r.memoryTypeIndex = types[ai->memoryTypeIndex].real;
    int kind = types[ai->memoryTypeIndex].kind;
    pthread_mutex_lock(&lock);
    VkResult res = VK_ERROR_OUT_OF_HOST_MEMORY;
    int slot = -1;
    for (int i = 0; i < MAX_ALLOCS && slot < 0; i++)
        if (allocs[i].m == VK_NULL_HANDLE) slot = i;
    if (slot >= 0 && kind == KIND_BAR && bar_used + ai->allocationSize > BAR_BYTES)
        res = VK_ERROR_OUT_OF_DEVICE_MEMORY; /* the pretend heap is full */
    else if (slot >= 0)
        res = real.vkAllocateMemory(d, &r, cb, out);
    if (res == VK_SUCCESS) {
        allocs[slot].m = *out;
        allocs[slot].size = ai->allocationSize;
        allocs[slot].kind = kind;
        if (kind == KIND_BAR) bar_used += ai->allocationSize;
    }
    pthread_mutex_unlock(&lock);
    return res;
}

/* The live allocation record of m, or -1 (lock held). */
static int find_alloc(VkDeviceMemory m)
{
    for (int i = 0; i < MAX_ALLOCS; i++)
        if (m != VK_NULL_HANDLE && allocs[i].m == m) return i;
    return -1;
}

static VKAPI_ATTR void VKAPI_CALL free_memory(VkDevice d, VkDeviceMemory m,
                                              const VkAllocationCallbacks *cb)
{
    pthread_mutex_lock(&lock);
    int i = find_alloc(m);
    if (i >= 0) {
        if (allocs[i].kind == KIND_BAR) bar_used -= allocs[i].size;
        allocs[i].m = VK_NULL_HANDLE;
    }
    pthread_mutex_unlock(&lock);
    real.vkFreeMemory(d, m, cb);
}

static VKAPI_ATTR VkResult VKAPI_CALL map_memory(VkDevice d, VkDeviceMemory m,
                                                 VkDeviceSize off, VkDeviceSize size,
                                                 VkMemoryMapFlags fl, void **out)
{
    pthread_mutex_lock(&lock);
    int i = find_alloc(m);
    bool device_only = i >= 0 && allocs[i].kind == KIND_DL;
    pthread_mutex_unlock(&lock);
    if (device_only) return VK_ERROR_MEMORY_MAP_FAILED; /* not host-visible */
    return real.vkMapMemory(d, m, off, size, fl, out);
}

static VKAPI_ATTR VkResult VKAPI_CALL set_layout(VkDevice d,
                                                 const VkDescriptorSetLayoutCreateInfo *ci,
                                                 const VkAllocationCallbacks *cb,
                                                 VkDescriptorSetLayout *out)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < ci->bindingCount; i++) {
        VkDescriptorType t = ci->pBindings[i].descriptorType;
        if (t == VK_DESCRIPTOR_TYPE_STORAGE_BUFFER ||
            t == VK_DESCRIPTOR_TYPE_STORAGE_BUFFER_DYNAMIC)
            n += ci->pBindings[i].descriptorCount;
    }
    if (active && active->storage_buffers && n > active->storage_buffers)
        return VK_ERROR_OUT_OF_DEVICE_MEMORY; /* beyond the pretend limit */
    return real.vkCreateDescriptorSetLayout(d, ci, cb, out);
}

void sdpa__vk_persona_apply(void)
{
    const char *v = getenv("SDPA_TEST_PERSONA");
    const persona *want = NULL;
    for (size_t i = 0; v && i < sizeof personas / sizeof personas[0]; i++)
        if (strcmp(v, personas[i].name) == 0) want = &personas[i];
    pthread_mutex_lock(&lock);
    if (!real_saved) {
        real = sdpa__vk_api;
        real_saved = true;
    }
    if (want != active) {
        active = want;
        sdpa__vk_api = real;
        if (want) {
            sdpa__vk_api.vkGetPhysicalDeviceProperties = props;
            sdpa__vk_api.vkGetPhysicalDeviceProperties2 = props2;
            sdpa__vk_api.vkGetPhysicalDeviceMemoryProperties = mem_props;
            sdpa__vk_api.vkGetBufferMemoryRequirements = buffer_reqs;
            sdpa__vk_api.vkAllocateMemory = alloc_memory;
            sdpa__vk_api.vkFreeMemory = free_memory;
            sdpa__vk_api.vkMapMemory = map_memory;
            sdpa__vk_api.vkCreateDescriptorSetLayout = set_layout;
        }
    }
    pthread_mutex_unlock(&lock);
}
