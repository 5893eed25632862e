/*
 * host_buffers.c — see host_buffers.h. Shared by the reference and cpu
 * backends so that both accept the same sdpa_buffer handles.
 */
#include "host_buffers.h"

#include "platform.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* SDPA_CPU_HUGE_PAGES: 0 turns the advice off, 1 (or unset) keeps it;
 * anything else is ignored with a warning. */
static bool huge_pages_wanted(sdpa_context *ctx)
{
    const char *env = getenv("SDPA_CPU_HUGE_PAGES");
    if (!env || !*env || strcmp(env, "1") == 0) return true;
    if (strcmp(env, "0") == 0) return false;
    if (ctx)
        sdpa__log(ctx, SDPA_LOG_WARN, "cpu: SDPA_CPU_HUGE_PAGES=%.32s is not 0 or 1; using 1", env);
    return true;
}

void *sdpa__host_alloc(sdpa_context *ctx, size_t bytes)
{
    const size_t huge = huge_pages_wanted(ctx) ? sdpa__os_huge_page_size() : 0;
    if (!huge || bytes / 2 < huge) return sdpa__aligned_alloc(64, bytes);
    void *p = sdpa__aligned_alloc(huge, bytes);
    sdpa__os_advise_huge(p, bytes, huge);
    return p;
}

sdpa_status sdpa__host_buffer_alloc(sdpa_context *ctx, void *state, size_t bytes, void **handle)
{
    (void)state;
    void *p = sdpa__host_alloc(ctx, bytes);
    SDPA__CHECK(ctx, p, SDPA_ERR_OUT_OF_MEMORY, "out of host memory (%zu bytes)", bytes);
    *handle = p;
    return SDPA_OK;
}

void sdpa__host_buffer_free(sdpa_context *ctx, void *state, void *handle)
{
    (void)ctx;
    (void)state;
    sdpa__aligned_free(handle);
}

sdpa_status sdpa__host_buffer_write(sdpa_context *ctx, void *state, void *handle, size_t offset,
                                    const void *src, size_t bytes)
{
    (void)ctx;
    (void)state;
    memcpy((char *)handle + offset, src, bytes);
    return SDPA_OK;
}

sdpa_status sdpa__host_buffer_read(sdpa_context *ctx, void *state, void *handle, size_t offset,
                                   void *dst, size_t bytes)
{
    (void)ctx;
    (void)state;
    memcpy(dst, (const char *)handle + offset, bytes);
    return SDPA_OK;
}

sdpa_status sdpa__host_finish(sdpa_context *ctx, void *state)
{
    (void)ctx;
    (void)state;
    return SDPA_OK;
}

sdpa_status sdpa__host_device_count(int *count)
{
    *count = 1;
    return SDPA_OK;
}

static void cpu_model(char *name, size_t size)
{
    sdpa__strlcpy(name, "host CPU", size);
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) != 0) continue;
        const char *colon = strchr(line, ':');
        if (!colon) break;
        colon++;
        while (*colon == ' ') colon++;
        sdpa__strlcpy(name, colon, size);
        name[strcspn(name, "\n")] = '\0';
        break;
    }
    fclose(f);
}

sdpa_status sdpa__host_device_info(int index, sdpa_device_info *info)
{
    if (index != 0) return SDPA_ERR_INVALID_ARG;
    cpu_model(info->name, sizeof info->name);
    sdpa__strlcpy(info->vendor, "host", sizeof info->vendor);
    sdpa__strlcpy(info->driver, sdpa_version_string(), sizeof info->driver);
    info->is_gpu = 0;
    info->compute_units = sdpa__os_cpu_count();
    info->global_mem_bytes = sdpa__os_phys_mem();
    info->fp16 = 0;
    info->storage16 = 1;
    return SDPA_OK;
}
