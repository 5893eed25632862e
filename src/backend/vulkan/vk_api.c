/*
 * vk_api.c — fills the Vulkan table (vk_api.h) from the Vulkan loader,
 * libvulkan.so.1, once per process, on first use by a device listing or a
 * context (SDPA__LIB_DEFINE_LOADER, src/core/dynlib.h). The message names
 * the library and what to install.
 */
#define SDPA__VK_API_NO_REDIRECT
#include "vk_internal.h"

#include "dynlib.h"

#include <pthread.h>

/* The file name per platform: dynlib.h. */
#define VK_SONAME SDPA__LIB_VULKAN

sdpa__vk_api_table sdpa__vk_api;

SDPA__LIB_DEFINE_LOADER(vk_load, sdpa__vk_api, SDPA__VK_API, "vulkan", VK_SONAME,
                        "install the Vulkan loader (e.g. libvulkan1) and a driver")

const char *sdpa__vk_api_load(void) { return vk_load(); }
