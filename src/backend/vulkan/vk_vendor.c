/*
 * vk_vendor.c — a Vulkan device's entry in the vendor defaults table
 * (src/core/device_table.h): vendorID, driverID (VK_KHR_driver_properties,
 * core in 1.2), device type and name as a table probe. sdpa__vk_probe
 * stores the result in the capabilities (caps.dev) so that plan code reads
 * the kernel class and the vendor's defaults from there; the static GPU
 * gate (tools/internal/sdpa-gpu-config.c) fills its described devices'
 * caps through sdpa__vk_device_defaults as well.
 */
#include "vk_internal.h"

void sdpa__vk_device_defaults(const VkPhysicalDeviceProperties *pr, uint32_t driver_id,
                              sdpa__device_defaults *out)
{
    int type = SDPA__DEVTYPE_OTHER;
    switch (pr->deviceType) {
    case VK_PHYSICAL_DEVICE_TYPE_CPU: type = SDPA__DEVTYPE_CPU; break;
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: type = SDPA__DEVTYPE_GPU; break;
    default: break;
    }
    sdpa__device_probe p = {
        .vendor_id = pr->vendorID,
        .driver_id = driver_id,
        .name = pr->deviceName,
        .type = type,
        .local_mem = -1, /* shared memory is on-chip on every Vulkan GPU */
    };
    sdpa__device_defaults_of(&p, out);
}

/* The driver id of phys (0 when the device cannot say). */
static uint32_t driver_id_of(VkPhysicalDevice phys, const VkPhysicalDeviceProperties *pr)
{
    if (pr->apiVersion < VK_API_VERSION_1_2) return 0;
    VkPhysicalDeviceDriverProperties dp = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
    VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                                      .pNext = &dp};
    vkGetPhysicalDeviceProperties2(phys, &p2);
    return (uint32_t)dp.driverID;
}

void sdpa__vk_classify(VkPhysicalDevice phys, const VkPhysicalDeviceProperties *pr,
                       sdpa__vk_caps *caps)
{
    caps->driver_id = driver_id_of(phys, pr);
    sdpa__vk_device_defaults(pr, caps->driver_id, &caps->dev);
}
