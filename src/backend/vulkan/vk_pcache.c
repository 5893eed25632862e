/*
 * vk_pcache.c — persists the context's VkPipelineCache on disk, one file per
 * device under sdpa__context_cache_dir(ctx):
 *   vk-<vendor>-<device>-<pipelineCacheUUID>.pcache
 * The file is a 32-byte libsdpa header (magic "SDPAVKPC", format version,
 * payload size, FNV-1a 64 of the payload) followed by the driver's cache data.
 * On load the header, size limit (256 MiB), checksum and the driver's own
 * VkPipelineCacheHeaderVersionOne (header version, vendor, device, UUID) are
 * all checked; anything wrong discards the file with an INFO/WARN log line
 * and starts an empty cache, never trusting it. Writes go to a temp file in
 * the same directory and are renamed over the old one (atomic on POSIX), so a
 * crash or a concurrent process never leaves a torn file.
 * Called by vk_device.c (open at context setup, save at context free) and
 * vk_plan.c (save after a plan created new pipelines).
 */
#include "vk_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define PCACHE_MAGIC "SDPAVKPC"
#define PCACHE_VERSION 1u
#define PCACHE_MAX ((size_t)256 << 20)
#define PCACHE_HEADER 32

static uint64_t fnv1a(const unsigned char *p, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    return h;
}

static void put_u32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static void put_u64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static uint32_t get_u32(const unsigned char *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}
static uint64_t get_u64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

/* mkdir -p; true when the directory exists afterwards. */
static bool make_dirs(const char *path)
{
    char buf[1024];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof buf) return false;
    memcpy(buf, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] == '/' || buf[i] == '\0') {
            char c = buf[i];
            buf[i] = '\0';
            if (mkdir(buf, 0755) != 0 && errno != EEXIST) return false;
            buf[i] = c;
        }
    }
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Whether `data` is a cache this device would accept. */
static bool driver_header_ok(const sdpa__vk_state *s, const unsigned char *d, size_t n)
{
    if (n < 16 + VK_UUID_SIZE) return false;
    uint32_t hsize = get_u32(d), hver = get_u32(d + 4);
    if (hsize < 16 + VK_UUID_SIZE || hsize > n) return false;
    if (hver != VK_PIPELINE_CACHE_HEADER_VERSION_ONE) return false;
    if (get_u32(d + 8) != s->props.vendorID || get_u32(d + 12) != s->props.deviceID) return false;
    return memcmp(d + 16, s->props.pipelineCacheUUID, VK_UUID_SIZE) == 0;
}

/* Reads and checks the file; returns malloc'd payload or NULL. */
static unsigned char *load_file(sdpa_context *ctx, const sdpa__vk_state *s, size_t *size)
{
    FILE *f = fopen(s->pcache_path, "rb");
    if (!f) return NULL; /* no cache yet */
    unsigned char hdr[PCACHE_HEADER];
    unsigned char *data = NULL;
    const char *why = NULL;
    if (fread(hdr, 1, sizeof hdr, f) != sizeof hdr) why = "truncated header";
    else if (memcmp(hdr, PCACHE_MAGIC, 8) != 0) why = "bad magic";
    else if (get_u32(hdr + 8) != PCACHE_VERSION) why = "unknown format version";
    else {
        uint64_t n = get_u64(hdr + 16);
        if (n == 0 || n > PCACHE_MAX) why = "implausible size";
        else if (!(data = malloc((size_t)n))) why = "out of memory";
        else if (fread(data, 1, (size_t)n, f) != n || fgetc(f) != EOF) why = "size mismatch";
        else if (fnv1a(data, (size_t)n) != get_u64(hdr + 24)) why = "checksum mismatch";
        else if (!driver_header_ok(s, data, (size_t)n)) why = "driver header does not match this device";
        else *size = (size_t)n;
    }
    fclose(f);
    if (why) {
        sdpa__log(ctx, SDPA_LOG_WARN, "vulkan: pipeline cache '%s' discarded (%s)",
                  s->pcache_path, why);
        free(data);
        return NULL;
    }
    return data;
}

sdpa_status sdpa__vk_pcache_open(sdpa_context *ctx, sdpa__vk_state *s)
{
    const char *dir = sdpa__context_cache_dir(ctx);
    s->pcache_path[0] = '\0';
    if (dir && *dir) {
        char uuid[2 * VK_UUID_SIZE + 1];
        for (unsigned i = 0; i < VK_UUID_SIZE; i++)
            snprintf(uuid + 2 * i, 3, "%02x", s->props.pipelineCacheUUID[i]);
        int n = snprintf(s->pcache_path, sizeof s->pcache_path, "%s/vk-%04x-%04x-%s.pcache",
                         dir, s->props.vendorID, s->props.deviceID, uuid);
        if (n < 0 || (size_t)n >= sizeof s->pcache_path) s->pcache_path[0] = '\0';
    }
    size_t size = 0;
    unsigned char *data = s->pcache_path[0] ? load_file(ctx, s, &size) : NULL;
    VkPipelineCacheCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO,
        .initialDataSize = data ? size : 0,
        .pInitialData = data,
    };
    VkResult r = vkCreatePipelineCache(s->device, &ci, NULL, &s->pcache);
    if (r != VK_SUCCESS && data) {
        sdpa__log(ctx, SDPA_LOG_WARN, "vulkan: driver rejected pipeline cache '%s' (%s); starting empty",
                  s->pcache_path, sdpa__vk_result_name(r));
        ci.initialDataSize = 0;
        ci.pInitialData = NULL;
        r = vkCreatePipelineCache(s->device, &ci, NULL, &s->pcache);
    }
    if (data) {
        sdpa__log(ctx, SDPA_LOG_DEBUG, "vulkan: loaded pipeline cache '%s' (%zu bytes)",
                  s->pcache_path, size);
        s->pcache_saved_size = size;
    }
    free(data);
    if (r != VK_SUCCESS)
        return SDPA__FAIL_NATIVE(ctx, sdpa__vk_status(r, SDPA_ERR_DEVICE), r,
                                 "vulkan: vkCreatePipelineCache failed (%s)",
                                 sdpa__vk_result_name(r));
    return SDPA_OK;
}

void sdpa__vk_pcache_save(sdpa_context *ctx, sdpa__vk_state *s)
{
    if (!s->pcache || !s->pcache_path[0]) return;
    size_t n = 0;
    if (vkGetPipelineCacheData(s->device, s->pcache, &n, NULL) != VK_SUCCESS || n == 0 ||
        n > PCACHE_MAX || n == s->pcache_saved_size)
        return;
    unsigned char *buf = malloc(PCACHE_HEADER + n);
    if (!buf) return;
    if (vkGetPipelineCacheData(s->device, s->pcache, &n, buf + PCACHE_HEADER) != VK_SUCCESS) {
        free(buf);
        return;
    }
    memcpy(buf, PCACHE_MAGIC, 8);
    put_u32(buf + 8, PCACHE_VERSION);
    put_u32(buf + 12, 0);
    put_u64(buf + 16, n);
    put_u64(buf + 24, fnv1a(buf + PCACHE_HEADER, n));

    char dir[1024], tmp[1100];
    sdpa__strlcpy(dir, s->pcache_path, sizeof dir);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = '\0';
    bool ok = !slash || make_dirs(dir);
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", s->pcache_path, (long)getpid());
    FILE *f = ok ? fopen(tmp, "wb") : NULL;
    if (f) {
        ok = fwrite(buf, 1, PCACHE_HEADER + n, f) == PCACHE_HEADER + n;
        ok = (fclose(f) == 0) && ok;
        ok = ok && rename(tmp, s->pcache_path) == 0;
        if (!ok) remove(tmp);
    } else {
        ok = false;
    }
    if (ok) {
        s->pcache_saved_size = n;
        sdpa__log(ctx, SDPA_LOG_DEBUG, "vulkan: saved pipeline cache '%s' (%zu bytes)",
                  s->pcache_path, n);
    } else {
        sdpa__log(ctx, SDPA_LOG_INFO, "vulkan: could not write pipeline cache '%s'",
                  s->pcache_path);
    }
    free(buf);
}
