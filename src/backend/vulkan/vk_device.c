/*
 * vk_device.c — Vulkan instance and device handling: listing the usable
 * physical devices (Vulkan >= 1.1 with a compute queue, in loader order),
 * probing their capabilities into sdpa_device_info, and creating / freeing
 * the per-context state (instance, optional validation messenger, logical
 * device, compute queue).
 *
 * Environment knobs (tests and debugging):
 *   SDPA_VK_VALIDATION=1  enable VK_LAYER_KHRONOS_validation with a
 *                         debug-utils messenger that logs through the
 *                         context and counts errors (see the test hook).
 *   SDPA_VK_MASK_FEATURES=storage16,fp16,float_controls,denorm16  pretend
 *                         the probe did not find these features (a weaker
 *                         device; denorm16: shaderDenormPreserveFloat16).
 *   SDPA_TEST_PERSONA=vk-...  test-only GPU personas (vk_persona.c).
 * Called by the core through the table in vk_backend.c.
 */
#include "vk_internal.h"

#include <stdio.h>
#include <stdlib.h>

#define MAX_DEVICES 16

const char *sdpa__vk_result_name(VkResult r)
{
    switch (r) {
    case VK_SUCCESS: return "VK_SUCCESS";
    case VK_NOT_READY: return "VK_NOT_READY";
    case VK_TIMEOUT: return "VK_TIMEOUT";
    case VK_INCOMPLETE: return "VK_INCOMPLETE";
    case VK_ERROR_OUT_OF_HOST_MEMORY: return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED: return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST: return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_MEMORY_MAP_FAILED: return "VK_ERROR_MEMORY_MAP_FAILED";
    case VK_ERROR_LAYER_NOT_PRESENT: return "VK_ERROR_LAYER_NOT_PRESENT";
    case VK_ERROR_EXTENSION_NOT_PRESENT: return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_FEATURE_NOT_PRESENT: return "VK_ERROR_FEATURE_NOT_PRESENT";
    case VK_ERROR_INCOMPATIBLE_DRIVER: return "VK_ERROR_INCOMPATIBLE_DRIVER";
    case VK_ERROR_TOO_MANY_OBJECTS: return "VK_ERROR_TOO_MANY_OBJECTS";
    case VK_ERROR_OUT_OF_POOL_MEMORY: return "VK_ERROR_OUT_OF_POOL_MEMORY";
    case VK_ERROR_INVALID_SHADER_NV: return "VK_ERROR_INVALID_SHADER_NV";
    default: return "VkResult(other)";
    }
}

sdpa_status sdpa__vk_status(VkResult r, sdpa_status otherwise)
{
    switch (r) {
    case VK_SUCCESS: return SDPA_OK;
    case VK_ERROR_OUT_OF_HOST_MEMORY:
    case VK_ERROR_OUT_OF_DEVICE_MEMORY:
    case VK_ERROR_OUT_OF_POOL_MEMORY:
    case VK_ERROR_TOO_MANY_OBJECTS: return SDPA_ERR_OUT_OF_MEMORY;
    case VK_ERROR_DEVICE_LOST: return SDPA_ERR_DEVICE_LOST;
    default: return otherwise;
    }
}

static bool env_flag(const char *name)
{
    const char *v = getenv(name);
    return v && *v && strcmp(v, "0") != 0;
}

static bool masked(const char *feature)
{
    const char *v = getenv("SDPA_VK_MASK_FEATURES");
    return v && strstr(v, feature) != NULL;
}

/* The has_* queries allocate with plain calloc, outside fault injection: a
 * failed allocation reads as "not available" and the device still works
 * without it, a failure absorbed by design, which the fault walk
 * (tests/test_faults.c) does not allow. */
static bool has_layer(const char *name)
{
    uint32_t n = 0;
    if (vkEnumerateInstanceLayerProperties(&n, NULL) != VK_SUCCESS || n == 0) return false;
    VkLayerProperties *l = calloc(n, sizeof *l);
    bool found = false;
    if (l && vkEnumerateInstanceLayerProperties(&n, l) == VK_SUCCESS)
        for (uint32_t i = 0; i < n && !found; i++)
            found = strcmp(l[i].layerName, name) == 0;
    free(l);
    return found;
}

static bool has_instance_ext(const char *layer, const char *name)
{
    uint32_t n = 0;
    if (vkEnumerateInstanceExtensionProperties(layer, &n, NULL) != VK_SUCCESS || n == 0)
        return false;
    VkExtensionProperties *e = calloc(n, sizeof *e);
    bool found = false;
    if (e && vkEnumerateInstanceExtensionProperties(layer, &n, e) == VK_SUCCESS)
        for (uint32_t i = 0; i < n && !found; i++)
            found = strcmp(e[i].extensionName, name) == 0;
    free(e);
    return found;
}

static bool has_device_ext(VkPhysicalDevice phys, const char *name)
{
    uint32_t n = 0;
    if (vkEnumerateDeviceExtensionProperties(phys, NULL, &n, NULL) != VK_SUCCESS || n == 0)
        return false;
    VkExtensionProperties *e = calloc(n, sizeof *e);
    bool found = false;
    if (e && vkEnumerateDeviceExtensionProperties(phys, NULL, &n, e) == VK_SUCCESS)
        for (uint32_t i = 0; i < n && !found; i++)
            found = strcmp(e[i].extensionName, name) == 0;
    free(e);
    return found;
}

/* Creates an instance (Vulkan 1.1); with `validation`, also the Khronos layer
 * and debug utils when installed (*debug says whether debug utils is on). */
static VkResult create_instance(bool validation, VkInstance *out, bool *debug)
{
    const char *layers[1];
    const char *exts[2];
    uint32_t nl = 0, ne = 0;
    VkInstanceCreateFlags flags = 0;
    *debug = false;
    if (sdpa__vk_api_load()) return VK_ERROR_INITIALIZATION_FAILED; /* no libvulkan.so.1 */
    sdpa__vk_persona_apply(); /* test-only (SDPA_TEST_PERSONA=vk-...) */
    if (validation && has_layer("VK_LAYER_KHRONOS_validation")) {
        layers[nl++] = "VK_LAYER_KHRONOS_validation";
        if (has_instance_ext(NULL, VK_EXT_DEBUG_UTILS_EXTENSION_NAME) ||
            has_instance_ext("VK_LAYER_KHRONOS_validation", VK_EXT_DEBUG_UTILS_EXTENSION_NAME)) {
            exts[ne++] = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
            *debug = true;
        }
    }
#ifdef VK_KHR_portability_enumeration
    /* MoltenVK lists its devices only with portability enumeration. */
    if (has_instance_ext(NULL, VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME)) {
        exts[ne++] = VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME;
        flags |= VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR;
    }
#endif
    VkApplicationInfo app = {
        .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
        .pApplicationName = "libsdpa",
        .pEngineName = "libsdpa",
        .engineVersion = SDPA_VERSION_NUMBER,
        .apiVersion = VK_API_VERSION_1_1,
    };
    VkInstanceCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
        .flags = flags,
        .pApplicationInfo = &app,
        .enabledLayerCount = nl,
        .ppEnabledLayerNames = layers,
        .enabledExtensionCount = ne,
        .ppEnabledExtensionNames = exts,
    };
    return vkCreateInstance(&ci, NULL, out);
}

static int compute_family(VkPhysicalDevice phys)
{
    uint32_t n = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(phys, &n, NULL);
    if (n == 0 || n > 64) return -1;
    VkQueueFamilyProperties q[64];
    vkGetPhysicalDeviceQueueFamilyProperties(phys, &n, q);
    for (uint32_t i = 0; i < n; i++)
        if ((q[i].queueFlags & VK_QUEUE_COMPUTE_BIT) && q[i].queueCount > 0) return (int)i;
    return -1;
}

/* Usable devices in loader order. */
static int list_devices(VkInstance inst, VkPhysicalDevice *out)
{
    uint32_t n = 0;
    if (vkEnumeratePhysicalDevices(inst, &n, NULL) != VK_SUCCESS || n == 0) return 0;
    VkPhysicalDevice all[MAX_DEVICES];
    if (n > MAX_DEVICES) n = MAX_DEVICES;
    VkResult r = vkEnumeratePhysicalDevices(inst, &n, all);
    if (r != VK_SUCCESS && r != VK_INCOMPLETE) return 0;
    int k = 0;
    for (uint32_t i = 0; i < n; i++) {
        VkPhysicalDeviceProperties pr;
        vkGetPhysicalDeviceProperties(all[i], &pr);
        if (pr.apiVersion < VK_API_VERSION_1_1) continue;
        if (compute_family(all[i]) < 0) continue;
        out[k++] = all[i];
    }
    return k;
}

/* The widths (SDPA__VK_DENORM_*) a module requests DenormPreserve for so
 * that 16-bit denormals are preserved: 16, plus 64 where the device sets
 * the 16- and 64-bit modes together, plus 32 where it sets all together
 * (denormBehaviorIndependence); 0 unless the device offers each of them. */
static unsigned denorm_widths(const VkPhysicalDeviceFloatControlsPropertiesKHR *fc)
{
    unsigned w = SDPA__VK_DENORM_16;
    bool ok = fc->shaderDenormPreserveFloat16;
    if (fc->denormBehaviorIndependence != VK_SHADER_FLOAT_CONTROLS_INDEPENDENCE_ALL) {
        w |= SDPA__VK_DENORM_64;
        ok = ok && fc->shaderDenormPreserveFloat64;
    }
    if (fc->denormBehaviorIndependence == VK_SHADER_FLOAT_CONTROLS_INDEPENDENCE_NONE) {
        w |= SDPA__VK_DENORM_32;
        ok = ok && fc->shaderDenormPreserveFloat32;
    }
    return ok ? w : 0;
}

void sdpa__vk_probe(VkPhysicalDevice phys, sdpa__vk_caps *caps,
                    VkPhysicalDeviceProperties *props)
{
    VkPhysicalDeviceSubgroupProperties sg = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
    /* Float controls: core in 1.2, VK_KHR_shader_float_controls before. */
    VkPhysicalDeviceFloatControlsPropertiesKHR fc = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FLOAT_CONTROLS_PROPERTIES_KHR};
    bool fc_ext = has_device_ext(phys, VK_KHR_SHADER_FLOAT_CONTROLS_EXTENSION_NAME);
    if (fc_ext) sg.pNext = &fc;
    VkPhysicalDeviceProperties2 p2 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &sg};
    vkGetPhysicalDeviceProperties2(phys, &p2);
    *props = p2.properties;

    VkPhysicalDevice16BitStorageFeatures s16 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
    VkPhysicalDeviceShaderFloat16Int8Features f16 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
    bool f16_known = props->apiVersion >= VK_API_VERSION_1_2 ||
                     has_device_ext(phys, VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME);
    if (f16_known) s16.pNext = &f16;
    VkPhysicalDeviceFeatures2 f2 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &s16};
    vkGetPhysicalDeviceFeatures2(phys, &f2);

    memset(caps, 0, sizeof *caps);
    caps->api_version = props->apiVersion;
    caps->subgroup_size = sg.subgroupSize;
    /* subgroup operations count only where compute shaders have them */
    caps->subgroup_ops = (sg.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) ? sg.supportedOperations
                                                                           : 0;
    caps->max_shared = props->limits.maxComputeSharedMemorySize;
    caps->max_wg = props->limits.maxComputeWorkGroupInvocations;
    if (caps->max_wg > props->limits.maxComputeWorkGroupSize[0])
        caps->max_wg = props->limits.maxComputeWorkGroupSize[0];
    for (int i = 0; i < 3; i++) caps->max_groups[i] = props->limits.maxComputeWorkGroupCount[i];
    caps->max_storage_range = props->limits.maxStorageBufferRange;
    caps->max_storage_buffers = props->limits.maxPerStageDescriptorStorageBuffers;
    if (caps->max_storage_buffers > props->limits.maxDescriptorSetStorageBuffers)
        caps->max_storage_buffers = props->limits.maxDescriptorSetStorageBuffers;
    caps->packed = caps->max_storage_buffers < SDPA__VK_WIDE_STORAGE;
    caps->float_controls = fc_ext && fc.shaderSignedZeroInfNanPreserveFloat32 &&
                           !masked("float_controls");
    caps->denorm_widths = fc_ext && !masked("denorm16") ? denorm_widths(&fc) : 0;
    caps->storage16 = s16.storageBuffer16BitAccess && !masked("storage16");
    /* the instance asks for Vulkan 1.1, so enabling shaderFloat16 takes the
     * extension even on a 1.2 device (sdpa__vk_context_create) */
    caps->fp16 = f16_known && f16.shaderFloat16 &&
                 has_device_ext(phys, VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME) &&
                 !masked("fp16");
    /* Mesa's llvmpipe (lavapipe) ends a shader invocation after 65535 loop
     * iterations; vk_plan.c sizes work per invocation under that budget. */
    caps->loop_limited = strstr(props->deviceName, "llvmpipe") != NULL;
    sdpa__vk_classify(phys, props, caps); /* kernel class and vendor defaults */
    caps->device_type = (uint32_t)props->deviceType;
}

sdpa_status sdpa__vk_device_count(int *count)
{
    *count = 0;
    VkInstance inst;
    bool dbg;
    VkResult r = create_instance(false, &inst, &dbg);
    if (r != VK_SUCCESS) return SDPA_ERR_NO_DEVICE;
    VkPhysicalDevice devs[MAX_DEVICES];
    *count = list_devices(inst, devs);
    vkDestroyInstance(inst, NULL);
    return SDPA_OK;
}

static const char *type_name(VkPhysicalDeviceType t)
{
    switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated GPU";
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete GPU";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual GPU";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "CPU";
    default: return "other";
    }
}

static const char *vendor_name(uint32_t id)
{
    switch (id) {
    case 0x1002: return "AMD";
    case 0x10de: return "NVIDIA";
    case 0x8086: return "Intel";
    case 0x13b5: return "ARM";
    case 0x5143: return "Qualcomm";
    case 0x106b: return "Apple";
    case 0x10005: return "Mesa";
    default: return NULL;
    }
}

sdpa_status sdpa__vk_device_info(int index, sdpa_device_info *info)
{
    VkInstance inst;
    bool dbg;
    if (create_instance(false, &inst, &dbg) != VK_SUCCESS) return SDPA_ERR_NO_DEVICE;
    VkPhysicalDevice devs[MAX_DEVICES];
    int n = list_devices(inst, devs);
    if (index < 0 || index >= n) {
        vkDestroyInstance(inst, NULL);
        return SDPA_ERR_INVALID_ARG;
    }
    VkPhysicalDeviceProperties pr;
    sdpa__vk_caps c;
    sdpa__vk_probe(devs[index], &c, &pr);
    VkPhysicalDeviceMemoryProperties mp;
    vkGetPhysicalDeviceMemoryProperties(devs[index], &mp);
    int64_t mem = 0;
    for (uint32_t i = 0; i < mp.memoryHeapCount; i++)
        if ((mp.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) &&
            (int64_t)mp.memoryHeaps[i].size > mem)
            mem = (int64_t)mp.memoryHeaps[i].size;

    info->backend = SDPA_BACKEND_VULKAN;
    info->index = index;
    sdpa__strlcpy(info->name, pr.deviceName, sizeof info->name);
    const char *vn = vendor_name(pr.vendorID);
    if (vn) sdpa__strlcpy(info->vendor, vn, sizeof info->vendor);
    else snprintf(info->vendor, sizeof info->vendor, "0x%04x", pr.vendorID);
    snprintf(info->driver, sizeof info->driver, "Vulkan %u.%u.%u, driver 0x%08x",
             VK_API_VERSION_MAJOR(pr.apiVersion), VK_API_VERSION_MINOR(pr.apiVersion),
             VK_API_VERSION_PATCH(pr.apiVersion), pr.driverVersion);
    info->is_gpu = pr.deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU ||
                   pr.deviceType == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU ||
                   pr.deviceType == VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU;
    info->compute_units = 0; /* Vulkan does not report it */
    info->global_mem_bytes = mem;
    info->local_mem_bytes = c.max_shared;
    info->max_workgroup_size = (int)c.max_wg;
    info->subgroup_size = (int)c.subgroup_size;
    info->fp16 = c.fp16;
    info->storage16 = c.storage16;
    static const char *ops[] = {"basic", "vote", "arithmetic", "ballot",
                                "shuffle", "shuffle_relative", "clustered", "quad"};
    char opbuf[160] = "";
    for (int i = 0; i < 8; i++)
        if (c.subgroup_ops & (1u << i)) {
            if (opbuf[0]) strncat(opbuf, ",", sizeof opbuf - strlen(opbuf) - 1);
            strncat(opbuf, ops[i], sizeof opbuf - strlen(opbuf) - 1);
        }
    snprintf(info->details, sizeof info->details,
             "type=%s vendor_id=0x%04x device_id=0x%04x api=%u.%u.%u subgroup=%u "
             "subgroup_ops=%s shared_mem=%u max_wg=%u storageBuffer16BitAccess=%s "
             "shaderFloat16=%s max_storage_range=%llu storage_buffers=%u (%s layout) "
             "float_controls=%s shaderDenormPreserveFloat16=%s",
             type_name(pr.deviceType), pr.vendorID, pr.deviceID,
             VK_API_VERSION_MAJOR(pr.apiVersion), VK_API_VERSION_MINOR(pr.apiVersion),
             VK_API_VERSION_PATCH(pr.apiVersion), c.subgroup_size,
             opbuf[0] ? opbuf : "none", c.max_shared, c.max_wg,
             c.storage16 ? "yes" : "no", c.fp16 ? "yes" : "no",
             (unsigned long long)c.max_storage_range, c.max_storage_buffers,
             c.packed ? "packed" : "wide", c.float_controls ? "yes" : "no",
             c.denorm_widths ? "yes" : "no");
    vkDestroyInstance(inst, NULL);
    return SDPA_OK;
}

static VKAPI_ATTR VkBool32 VKAPI_CALL debug_cb(
    VkDebugUtilsMessageSeverityFlagBitsEXT sev, VkDebugUtilsMessageTypeFlagsEXT type,
    const VkDebugUtilsMessengerCallbackDataEXT *data, void *user)
{
    (void)type;
    sdpa__vk_state *s = user;
    sdpa_log_level lvl = SDPA_LOG_DEBUG;
    if (sev & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) {
        s->validation_errors++;
        lvl = SDPA_LOG_ERROR;
    } else if (sev & VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) {
        s->validation_warnings++;
        lvl = SDPA_LOG_WARN;
    }
    if (s->ctx)
        sdpa__log(s->ctx, lvl, "vulkan validation: %s",
                  data && data->pMessage ? data->pMessage : "(no message)");
    return VK_FALSE;
}

sdpa_status sdpa__vk_context_init(sdpa_context *ctx, int device_index, void **state)
{
    *state = NULL;
    sdpa__vk_state *s = sdpa__calloc(1, sizeof *s);
    SDPA__CHECK(ctx, s, SDPA_ERR_OUT_OF_MEMORY, "vulkan: out of host memory");
    s->ctx = ctx;
    s->owns_device = true;
    sdpa_status st = SDPA_OK;
    bool validation = env_flag("SDPA_VK_VALIDATION"), dbg = false;
    VkResult r = create_instance(validation, &s->instance, &dbg);
    if (r != VK_SUCCESS) {
        st = SDPA__FAIL_NATIVE(ctx, SDPA_ERR_NO_DEVICE, r, "vulkan: vkCreateInstance failed (%s)",
                               sdpa__vk_result_name(r));
        goto fail;
    }
    if (validation && !dbg)
        sdpa__log(ctx, SDPA_LOG_WARN, "vulkan: SDPA_VK_VALIDATION set but VK_LAYER_KHRONOS_validation "
                  "or VK_EXT_debug_utils is not installed");
    if (dbg) {
        PFN_vkCreateDebugUtilsMessengerEXT create =
            (PFN_vkCreateDebugUtilsMessengerEXT)vkGetInstanceProcAddr(
                s->instance, "vkCreateDebugUtilsMessengerEXT");
        VkDebugUtilsMessengerCreateInfoEXT mi = {
            .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
            .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT |
                               VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT,
            .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                           VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                           VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
            .pfnUserCallback = debug_cb,
            .pUserData = s,
        };
        if (create) create(s->instance, &mi, NULL, &s->messenger);
        sdpa__log(ctx, SDPA_LOG_INFO, "vulkan: validation layer enabled");
    }
    VkPhysicalDevice devs[MAX_DEVICES];
    int n = list_devices(s->instance, devs);
    if (device_index < 0 || device_index >= n) {
        st = SDPA__FAIL(ctx, SDPA_ERR_NO_DEVICE, "vulkan: device %d not found (%d usable)",
                        device_index, n);
        goto fail;
    }
    s->phys = devs[device_index];
    int fam = compute_family(s->phys);
    s->queue_family = (uint32_t)fam;
    sdpa__vk_probe(s->phys, &s->caps, &s->props);

    float prio = 1.0f;
    VkDeviceQueueCreateInfo qci = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
        .queueFamilyIndex = s->queue_family,
        .queueCount = 1,
        .pQueuePriorities = &prio,
    };
    /* shaderFloat16: fwd_fa2h keeps q in f16 registers (vk_plan.c) */
    VkPhysicalDeviceShaderFloat16Int8Features f16 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES,
        .shaderFloat16 = VK_TRUE,
    };
    VkPhysicalDevice16BitStorageFeatures s16 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES,
        .pNext = s->caps.fp16 ? &f16 : NULL,
        .storageBuffer16BitAccess = s->caps.storage16 ? VK_TRUE : VK_FALSE,
    };
    VkPhysicalDeviceFeatures2 f2 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &s16};
    const char *dexts[3];
    uint32_t nde = 0;
    if (s->caps.fp16) dexts[nde++] = VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME;
    /* the SPIR-V asks for Inf/NaN and denormal preservation (vk_spirv_patch.c) */
    if (s->caps.float_controls || s->caps.denorm_widths)
        dexts[nde++] = VK_KHR_SHADER_FLOAT_CONTROLS_EXTENSION_NAME;
    /* MoltenVK: a portability-subset device must enable the extension. */
    if (has_device_ext(s->phys, "VK_KHR_portability_subset"))
        dexts[nde++] = "VK_KHR_portability_subset";
    VkDeviceCreateInfo dci = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
        .pNext = &f2,
        .queueCreateInfoCount = 1,
        .pQueueCreateInfos = &qci,
        .enabledExtensionCount = nde,
        .ppEnabledExtensionNames = dexts,
    };
    r = vkCreateDevice(s->phys, &dci, NULL, &s->device);
    if (r != VK_SUCCESS) {
        st = SDPA__FAIL_NATIVE(ctx, sdpa__vk_status(r, SDPA_ERR_DEVICE), r,
                               "vulkan: vkCreateDevice failed (%s)", sdpa__vk_result_name(r));
        goto fail;
    }
    vkGetDeviceQueue(s->device, s->queue_family, 0, &s->queue);
    st = sdpa__vk_state_setup(ctx, s);
    if (st != SDPA_OK) goto fail;
    sdpa__log(ctx, SDPA_LOG_INFO, "vulkan: device '%s', storage16=%d fp16=%d denorm16=%d "
              "subgroup=%u", s->props.deviceName, s->caps.storage16, s->caps.fp16,
              s->caps.denorm_widths != 0, s->caps.subgroup_size);
    *state = s;
    return SDPA_OK;
fail:
    sdpa__vk_context_free(ctx, s);
    return st;
}

sdpa_status sdpa__vk_state_setup(sdpa_context *ctx, sdpa__vk_state *s)
{
    vkGetPhysicalDeviceMemoryProperties(s->phys, &s->mem_props);
    VkCommandPoolCreateInfo pci = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
        .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
        .queueFamilyIndex = s->queue_family,
    };
    VkResult r = vkCreateCommandPool(s->device, &pci, NULL, &s->cmd_pool);
    if (r != VK_SUCCESS)
        return SDPA__FAIL_NATIVE(ctx, sdpa__vk_status(r, SDPA_ERR_DEVICE), r,
                                 "vulkan: vkCreateCommandPool failed (%s)",
                                 sdpa__vk_result_name(r));
    SDPA__TRY(sdpa__vk_layouts_create(ctx, s));
    SDPA__TRY(sdpa__vk_pcache_open(ctx, s));
    sdpa__vk_buffer *dummy = NULL;
    SDPA__TRY(sdpa__vk_buffer_create(ctx, s, 256,
                                     VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
                                     VK_BUFFER_USAGE_TRANSFER_DST_BIT, true, &dummy));
    s->dummy = dummy;
    return SDPA_OK;
}

void sdpa__vk_context_free(sdpa_context *ctx, void *state)
{
    sdpa__vk_state *s = state;
    if (!s) return;
    if (s->device) {
        vkDeviceWaitIdle(s->device);
        sdpa__vk_pcache_save(ctx, s);
        if (s->dummy) sdpa__vk_buffer_destroy(s, s->dummy);
        sdpa__vk_alloc_destroy_all(s);
        if (s->pcache) vkDestroyPipelineCache(s->device, s->pcache, NULL);
        sdpa__vk_layouts_destroy(s);
        if (s->cmd_pool) vkDestroyCommandPool(s->device, s->cmd_pool, NULL);
        if (s->owns_device) vkDestroyDevice(s->device, NULL);
    }
    if (s->instance && s->owns_device) {
        if (s->messenger) {
            PFN_vkDestroyDebugUtilsMessengerEXT destroy =
                (PFN_vkDestroyDebugUtilsMessengerEXT)vkGetInstanceProcAddr(
                    s->instance, "vkDestroyDebugUtilsMessengerEXT");
            if (destroy) destroy(s->instance, s->messenger, NULL);
        }
        vkDestroyInstance(s->instance, NULL);
    }
    free(s);
}

int sdpa__vk_validation_error_count(sdpa_context *ctx)
{
    if (!ctx || sdpa_context_backend(ctx) != SDPA_BACKEND_VULKAN) return -1;
    sdpa__vk_state *s = sdpa__context_primary_state(ctx, &sdpa__backend_vulkan);
    return s ? s->validation_errors : -1;
}

int sdpa__vk_validation_active(sdpa_context *ctx)
{
    if (!ctx || sdpa_context_backend(ctx) != SDPA_BACKEND_VULKAN) return -1;
    sdpa__vk_state *s = sdpa__context_primary_state(ctx, &sdpa__backend_vulkan);
    return s && s->messenger != VK_NULL_HANDLE;
}
