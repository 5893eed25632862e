/*
 * cl_diskcache.c — on-disk cache of OpenCL program binaries.
 *
 * One file per program under sdpa__context_cache_dir(ctx), named by a hash of
 * its identity (platform, device, driver version, source hash and build
 * options). Format (cl_cache_entry.h): magic "SDPACLB1", u32 format
 * version, u32 identity length, u64 binary length, u64 checksum (FNV-1a over
 * identity + binary), the identity text, the binary. The whole file is read
 * (only if its size is within the format's limits) and validated by the pure
 * parser sdpa__cl_entry_parse (cl_cache_entry.c, fuzzed by
 * tests/fuzz/fuzz_clcache.c); a file is trusted only when every field checks
 * out, its size is exact, the identity matches and, for PoCL, the binary's
 * own structure fits its length; anything else (truncated, corrupt, another
 * driver version) is ignored and overwritten by a fresh build. Files are
 * read and written through src/core/fileio.c: the folder is created 0700 and
 * used only when it is ours and not group/other-writable, entries (0600) are
 * opened without following symlinks and without blocking, and refused when
 * another user owns them or others can write them (WARN, then a rebuild from
 * source); writes are atomic (temp + fsync + rename). The trust model is in
 * docs/reliability.md. Skipped on PoCL, which keeps its own kernel cache
 * (SDPA_CL_DISK_CACHE=1 forces it on, =0 off). Called by cl_program.c.
 */
#include "cl_internal.h"
#include "cl_cache_entry.h"
#include "../../core/bytes.h"
#include "../../core/fileio.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>


bool sdpa__cl_disk_enabled(const sdpa__cl_props *p)
{
    const char *env = getenv("SDPA_CL_DISK_CACHE");
    if (env && env[0] == '0') return false;
    if (env && env[0] == '1') return true;
    return !p->is_pocl;
}

const char *sdpa__cl_disk_describe(const sdpa__cl_props *p)
{
    const char *env = getenv("SDPA_CL_DISK_CACHE");
    bool forced = env && (env[0] == '0' || env[0] == '1');
    if (sdpa__cl_disk_enabled(p))
        return forced ? "on disk (SDPA_CACHE_DIR; forced on by SDPA_CL_DISK_CACHE=1)"
                      : "on disk (SDPA_CACHE_DIR)";
    return forced ? "off (SDPA_CL_DISK_CACHE=0)"
                  : "skipped (PoCL caches compiled kernels itself)";
}

/* The cache folder: created private (0700) when missing, and used only when
 * it is ours and not writable by group or others (an entry is handed to the
 * driver, so whoever can write the folder can crash or worse the process:
 * docs/reliability.md, trust model). NULL when there is none or it is
 * refused; a refusal is logged once per context. */
static const char *cache_dir(sdpa_context *ctx, sdpa__cl_state *st)
{
    const char *dir = sdpa__context_cache_dir(ctx);
    if (!dir || !dir[0] || st->disk_refused) return NULL;
    sdpa__file_why why;
    if (sdpa__dir_make(dir, 0700, &why) == SDPA__FILE_OK &&
        sdpa__dir_check_private(dir, &why) == SDPA__FILE_OK)
        return dir;
    st->disk_refused = true; /* untrusted: WARN; cannot be made (read-only...): INFO */
    sdpa__log(ctx, why.err ? SDPA_LOG_INFO : SDPA_LOG_WARN,
              "opencl: binary cache folder %s not used (%s); building from source", dir,
              why.text);
    return NULL;
}

/* Identity text and file path for a key; false if no cache dir. */
static bool identity(sdpa_context *ctx, sdpa__cl_state *st, const char *key,
                     char **ident, char *path, size_t path_size)
{
    const char *dir = cache_dir(ctx, st);
    if (!dir) return false;
    size_t n = strlen(st->props.platform_name) + strlen(st->props.device_name) +
               strlen(st->props.driver) + strlen(key) + 8;
    *ident = sdpa__malloc(n);
    if (!*ident) return false;
    snprintf(*ident, n, "%s\n%s\n%s\n%s", st->props.platform_name, st->props.device_name,
             st->props.driver, key);
    uint64_t h = sdpa__cl_hash(SDPA__HASH_SEED, *ident, strlen(*ident));
    snprintf(path, path_size, "%s/cl-%016" PRIx64 ".bin", dir, h);
    return true;
}

bool sdpa__cl_disk_load(sdpa_context *ctx, sdpa__cl_state *st, const char *key,
                        const char *options, cl_program *out)
{
    char path[4096], *ident = NULL;
    if (!identity(ctx, st, key, &ident, path, sizeof path)) return false;
    /* Not followed through a symlink, ours and private, within the format's
     * size, a regular file (a FIFO cannot block us): else WARN and rebuild. */
    size_t len = 0;
    const char *why = NULL;
    char *raw = NULL;
    sdpa__file_why fw;
    sdpa__file_result fr =
        sdpa__file_read(path, SDPA__CL_ENTRY_HEADER + strlen(ident) + SDPA__CL_ENTRY_MAX_BINARY,
                        SDPA__FILE_NOFOLLOW | SDPA__FILE_PRIVATE, &raw, &len, &fw);
    const unsigned char *data = (const unsigned char *)raw;
    bool ok = false;
    if (fr != SDPA__FILE_OK) {
        if (fr != SDPA__FILE_MISSING)
            sdpa__log(ctx, SDPA_LOG_WARN,
                      "opencl: ignoring cache entry %s (%s); rebuilding from source", path,
                      fw.text);
        goto done;
    }
    sdpa__cl_entry e;
    sdpa__cl_entry_status es = sdpa__cl_entry_parse(data, len, ident, strlen(ident), &e);
    if (es != SDPA__CL_ENTRY_OK) {
        why = sdpa__cl_entry_reason(es); /* stale, truncated, corrupt: rebuild */
        goto done;
    }
    cl_int err, bst;
    size_t blen = e.binary_len;
    const unsigned char *bp = e.binary;
    cl_program prog = clCreateProgramWithBinary(st->context, 1, &st->device, &blen, &bp,
                                                &bst, &err);
    if (err != CL_SUCCESS || bst != CL_SUCCESS) {
        if (prog && err == CL_SUCCESS) clReleaseProgram(prog);
        why = "driver rejected the binary";
        goto done;
    }
    if (clBuildProgram(prog, 1, &st->device, options, NULL, NULL) != CL_SUCCESS) {
        clReleaseProgram(prog);
        why = "driver could not build the binary";
        goto done;
    }
    *out = prog;
    ok = true;
done:
    if (why)
        sdpa__log(ctx, SDPA_LOG_INFO, "opencl: ignoring unusable cache entry %s (%s); rebuilding",
                  path, why);
    free(raw);
    free(ident);
    return ok;
}

void sdpa__cl_disk_store(sdpa_context *ctx, sdpa__cl_state *st, const char *key,
                         cl_program program)
{
    char path[4096], *ident = NULL;
    if (!identity(ctx, st, key, &ident, path, sizeof path)) return;
    size_t blen = 0;
    unsigned char *bin = NULL, *file = NULL;
    if (strlen(ident) > SDPA__CL_ENTRY_MAX_IDENT) goto done; /* the reader would refuse it */
    if (clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof blen, &blen, NULL) !=
            CL_SUCCESS || blen == 0 || blen > SDPA__CL_ENTRY_MAX_BINARY || !(bin = sdpa__malloc(blen)))
        goto done;
    unsigned char *bins[1] = {bin};
    if (clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof bins, bins, NULL) != CL_SUCCESS)
        goto done;
    size_t klen = strlen(ident), n = sdpa__cl_entry_encode(NULL, 0, ident, klen, bin, blen);
    if (!(file = sdpa__malloc(n))) goto done;
    sdpa__cl_entry_encode(file, n, ident, klen, bin, blen);
    sdpa__file_why why;
    if (sdpa__file_write_atomic(path, file, n, 0600, 0, &why) != SDPA__FILE_OK)
        sdpa__log(ctx, SDPA_LOG_INFO, "opencl: could not write cache entry %s (%s)", path,
                  why.text);
done:
    free(file);
    free(bin);
    free(ident);
}
