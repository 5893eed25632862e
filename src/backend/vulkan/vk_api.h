/*
 * vk_api.h — the Vulkan commands the backend calls, as a table of function
 * pointers (sdpa__vk_api) filled at run time from the Vulkan loader,
 * libvulkan.so.1, by vk_api.c. libsdpa does not link libvulkan: a program
 * using libsdpa starts on a machine without it, and the Vulkan backend
 * reports itself unavailable (sdpa__vk_api_load's message).
 *
 * SDPA__VK_API lists every vk* command the backend calls (one X per
 * command; add a new call here). All are core Vulkan 1.0/1.1 commands,
 * which the loader exports as dispatching trampolines, so each is taken
 * from the loader by name; extension commands (debug utils) still go
 * through vkGetInstanceProcAddr, itself a slot here. After the table each
 * name is #defined to its slot, so call sites keep the plain Vulkan names;
 * the toolchain keeps the lists in step as in cl_api.h. Included by
 * vk_internal.h after <vulkan/vulkan.h>; vk_api.c defines
 * SDPA__VK_API_NO_REDIRECT to see the fields.
 */
#ifndef SDPA_VK_API_H
#define SDPA_VK_API_H

#include <vulkan/vulkan.h>

#define SDPA__VK_API(X) \
    X(vkAllocateCommandBuffers) \
    X(vkAllocateDescriptorSets) \
    X(vkAllocateMemory) \
    X(vkBeginCommandBuffer) \
    X(vkBindBufferMemory) \
    X(vkCmdBindDescriptorSets) \
    X(vkCmdBindPipeline) \
    X(vkCmdCopyBuffer) \
    X(vkCmdDispatch) \
    X(vkCmdDispatchBase) \
    X(vkCmdPipelineBarrier) \
    X(vkCmdPushConstants) \
    X(vkCmdResetQueryPool) \
    X(vkCmdWriteTimestamp) \
    X(vkCreateBuffer) \
    X(vkCreateCommandPool) \
    X(vkCreateComputePipelines) \
    X(vkCreateDescriptorPool) \
    X(vkCreateDescriptorSetLayout) \
    X(vkCreateDevice) \
    X(vkCreateFence) \
    X(vkCreateInstance) \
    X(vkCreatePipelineCache) \
    X(vkCreatePipelineLayout) \
    X(vkCreateQueryPool) \
    X(vkCreateShaderModule) \
    X(vkDestroyBuffer) \
    X(vkDestroyCommandPool) \
    X(vkDestroyDescriptorPool) \
    X(vkDestroyDescriptorSetLayout) \
    X(vkDestroyDevice) \
    X(vkDestroyFence) \
    X(vkDestroyInstance) \
    X(vkDestroyPipeline) \
    X(vkDestroyPipelineCache) \
    X(vkDestroyPipelineLayout) \
    X(vkDestroyQueryPool) \
    X(vkDestroyShaderModule) \
    X(vkDeviceWaitIdle) \
    X(vkEndCommandBuffer) \
    X(vkEnumerateDeviceExtensionProperties) \
    X(vkEnumerateInstanceExtensionProperties) \
    X(vkEnumerateInstanceLayerProperties) \
    X(vkEnumeratePhysicalDevices) \
    X(vkFreeCommandBuffers) \
    X(vkFreeMemory) \
    X(vkGetBufferMemoryRequirements) \
    X(vkGetDeviceQueue) \
    X(vkGetInstanceProcAddr) \
    X(vkGetPhysicalDeviceFeatures2) \
    X(vkGetPhysicalDeviceMemoryProperties) \
    X(vkGetPhysicalDeviceProperties) \
    X(vkGetPhysicalDeviceProperties2) \
    X(vkGetPhysicalDeviceQueueFamilyProperties) \
    X(vkGetPipelineCacheData) \
    X(vkGetQueryPoolResults) \
    X(vkMapMemory) \
    X(vkQueueSubmit) \
    X(vkQueueWaitIdle) \
    X(vkResetCommandBuffer) \
    X(vkResetFences) \
    X(vkUnmapMemory) \
    X(vkUpdateDescriptorSets) \
    X(vkWaitForFences)

typedef struct sdpa__vk_api_table {
#define SDPA__VK_API_FIELD(name) PFN_##name name;
    SDPA__VK_API(SDPA__VK_API_FIELD)
#undef SDPA__VK_API_FIELD
} sdpa__vk_api_table;

extern sdpa__vk_api_table sdpa__vk_api;

/* Loads libvulkan.so.1 and fills sdpa__vk_api, once per process (thread
 * safe); later calls return the first outcome. NULL when the table is
 * ready, else a message naming the library and why it could not be used. */
const char *sdpa__vk_api_load(void);

#ifndef SDPA__VK_API_NO_REDIRECT
#define vkAllocateCommandBuffers                 sdpa__vk_api.vkAllocateCommandBuffers
#define vkAllocateDescriptorSets                 sdpa__vk_api.vkAllocateDescriptorSets
#define vkAllocateMemory                         sdpa__vk_api.vkAllocateMemory
#define vkBeginCommandBuffer                     sdpa__vk_api.vkBeginCommandBuffer
#define vkBindBufferMemory                       sdpa__vk_api.vkBindBufferMemory
#define vkCmdBindDescriptorSets                  sdpa__vk_api.vkCmdBindDescriptorSets
#define vkCmdBindPipeline                        sdpa__vk_api.vkCmdBindPipeline
#define vkCmdCopyBuffer                          sdpa__vk_api.vkCmdCopyBuffer
#define vkCmdDispatch                            sdpa__vk_api.vkCmdDispatch
#define vkCmdDispatchBase                        sdpa__vk_api.vkCmdDispatchBase
#define vkCmdPipelineBarrier                     sdpa__vk_api.vkCmdPipelineBarrier
#define vkCmdPushConstants                       sdpa__vk_api.vkCmdPushConstants
#define vkCmdResetQueryPool                      sdpa__vk_api.vkCmdResetQueryPool
#define vkCmdWriteTimestamp                      sdpa__vk_api.vkCmdWriteTimestamp
#define vkCreateBuffer                           sdpa__vk_api.vkCreateBuffer
#define vkCreateCommandPool                      sdpa__vk_api.vkCreateCommandPool
#define vkCreateComputePipelines                 sdpa__vk_api.vkCreateComputePipelines
#define vkCreateDescriptorPool                   sdpa__vk_api.vkCreateDescriptorPool
#define vkCreateDescriptorSetLayout              sdpa__vk_api.vkCreateDescriptorSetLayout
#define vkCreateDevice                           sdpa__vk_api.vkCreateDevice
#define vkCreateFence                            sdpa__vk_api.vkCreateFence
#define vkCreateInstance                         sdpa__vk_api.vkCreateInstance
#define vkCreatePipelineCache                    sdpa__vk_api.vkCreatePipelineCache
#define vkCreatePipelineLayout                   sdpa__vk_api.vkCreatePipelineLayout
#define vkCreateQueryPool                        sdpa__vk_api.vkCreateQueryPool
#define vkCreateShaderModule                     sdpa__vk_api.vkCreateShaderModule
#define vkDestroyBuffer                          sdpa__vk_api.vkDestroyBuffer
#define vkDestroyCommandPool                     sdpa__vk_api.vkDestroyCommandPool
#define vkDestroyDescriptorPool                  sdpa__vk_api.vkDestroyDescriptorPool
#define vkDestroyDescriptorSetLayout             sdpa__vk_api.vkDestroyDescriptorSetLayout
#define vkDestroyDevice                          sdpa__vk_api.vkDestroyDevice
#define vkDestroyFence                           sdpa__vk_api.vkDestroyFence
#define vkDestroyInstance                        sdpa__vk_api.vkDestroyInstance
#define vkDestroyPipeline                        sdpa__vk_api.vkDestroyPipeline
#define vkDestroyPipelineCache                   sdpa__vk_api.vkDestroyPipelineCache
#define vkDestroyPipelineLayout                  sdpa__vk_api.vkDestroyPipelineLayout
#define vkDestroyQueryPool                       sdpa__vk_api.vkDestroyQueryPool
#define vkDestroyShaderModule                    sdpa__vk_api.vkDestroyShaderModule
#define vkDeviceWaitIdle                         sdpa__vk_api.vkDeviceWaitIdle
#define vkEndCommandBuffer                       sdpa__vk_api.vkEndCommandBuffer
#define vkEnumerateDeviceExtensionProperties     sdpa__vk_api.vkEnumerateDeviceExtensionProperties
#define vkEnumerateInstanceExtensionProperties   sdpa__vk_api.vkEnumerateInstanceExtensionProperties
#define vkEnumerateInstanceLayerProperties       sdpa__vk_api.vkEnumerateInstanceLayerProperties
#define vkEnumeratePhysicalDevices               sdpa__vk_api.vkEnumeratePhysicalDevices
#define vkFreeCommandBuffers                     sdpa__vk_api.vkFreeCommandBuffers
#define vkFreeMemory                             sdpa__vk_api.vkFreeMemory
#define vkGetBufferMemoryRequirements            sdpa__vk_api.vkGetBufferMemoryRequirements
#define vkGetDeviceQueue                         sdpa__vk_api.vkGetDeviceQueue
#define vkGetInstanceProcAddr                    sdpa__vk_api.vkGetInstanceProcAddr
#define vkGetPhysicalDeviceFeatures2             sdpa__vk_api.vkGetPhysicalDeviceFeatures2
#define vkGetPhysicalDeviceMemoryProperties      sdpa__vk_api.vkGetPhysicalDeviceMemoryProperties
#define vkGetPhysicalDeviceProperties            sdpa__vk_api.vkGetPhysicalDeviceProperties
#define vkGetPhysicalDeviceProperties2           sdpa__vk_api.vkGetPhysicalDeviceProperties2
#define vkGetPhysicalDeviceQueueFamilyProperties sdpa__vk_api.vkGetPhysicalDeviceQueueFamilyProperties
#define vkGetPipelineCacheData                   sdpa__vk_api.vkGetPipelineCacheData
#define vkGetQueryPoolResults                    sdpa__vk_api.vkGetQueryPoolResults
#define vkMapMemory                              sdpa__vk_api.vkMapMemory
#define vkQueueSubmit                            sdpa__vk_api.vkQueueSubmit
#define vkQueueWaitIdle                          sdpa__vk_api.vkQueueWaitIdle
#define vkResetCommandBuffer                     sdpa__vk_api.vkResetCommandBuffer
#define vkResetFences                            sdpa__vk_api.vkResetFences
#define vkUnmapMemory                            sdpa__vk_api.vkUnmapMemory
#define vkUpdateDescriptorSets                   sdpa__vk_api.vkUpdateDescriptorSets
#define vkWaitForFences                          sdpa__vk_api.vkWaitForFences
#endif

#endif
