/*
 * vk_api.c — fills the Vulkan table (vk_api.h) from the Vulkan loader,
 * libvulkan.so.1, once per process (pthread_once), on first use by a device
 * listing or a context. The loading itself is src/core/dynlib.c; the
 * message names the library and what to install.
 */
#define SDPA__VK_API_NO_REDIRECT
#include "vk_internal.h"

#include "dynlib.h"

#include <pthread.h>

sdpa__vk_api_table sdpa__vk_api;

static pthread_once_t vk_once = PTHREAD_ONCE_INIT;
static char vk_why[512];
static bool vk_ready;

static void vk_load(void)
{
    static const char *const names[] = {
#define NAME(name) #name,
        SDPA__VK_API(NAME)
#undef NAME
    };
    sdpa__lib_fn fns[sizeof names / sizeof names[0]];
    if (!sdpa__lib_load("vulkan", "libvulkan.so.1",
                        "install the Vulkan loader (e.g. libvulkan1) and a driver",
                        names, fns, sizeof names / sizeof names[0], vk_why, sizeof vk_why))
        return;
    size_t i = 0;
#define FILL(name) sdpa__vk_api.name = (PFN_##name)fns[i++];
    SDPA__VK_API(FILL)
#undef FILL
    vk_ready = true;
}

const char *sdpa__vk_api_load(void)
{
    pthread_once(&vk_once, vk_load);
    return vk_ready ? NULL : vk_why;
}
