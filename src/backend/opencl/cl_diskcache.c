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
 * out, its size is exact and the identity matches; anything else (truncated,
 * corrupt, another driver version) is ignored and overwritten by a fresh
 * build. Writes go to a temporary file in the same folder and are renamed
 * into place, so readers never see a partial file and concurrent writers
 * are safe. Skipped on PoCL, which keeps its own kernel cache
 * (SDPA_CL_DISK_CACHE=1 forces it on, =0 off). Called by cl_program.c.
 */
#include "cl_internal.h"
#include "cl_cache_entry.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>


bool sdpa__cl_disk_enabled(const sdpa__cl_state *st)
{
    const char *env = getenv("SDPA_CL_DISK_CACHE");
    if (env && env[0] == '0') return false;
    if (env && env[0] == '1') return true;
    return !st->props.is_pocl;
}

/* Identity text and file path for a key; false if no cache dir. */
static bool identity(sdpa_context *ctx, const sdpa__cl_state *st, const char *key,
                     char **ident, char *path, size_t path_size)
{
    const char *dir = sdpa__context_cache_dir(ctx);
    if (!dir || !dir[0]) return false;
    size_t n = strlen(st->props.platform_name) + strlen(st->props.device_name) +
               strlen(st->props.driver) + strlen(key) + 8;
    *ident = malloc(n);
    if (!*ident) return false;
    snprintf(*ident, n, "%s\n%s\n%s\n%s", st->props.platform_name, st->props.device_name,
             st->props.driver, key);
    uint64_t h = sdpa__cl_hash(SDPA__CL_HASH_INIT, *ident, strlen(*ident));
    snprintf(path, path_size, "%s/cl-%016" PRIx64 ".bin", dir, h);
    return true;
}

static void mkdirs(const char *dir)
{
    char tmp[4096];
    sdpa__strlcpy(tmp, dir, sizeof tmp);
    for (char *p = tmp + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            mkdir(tmp, 0755);
            *p = '/';
        }
    }
    mkdir(tmp, 0755);
}

/* Reads the whole file at `path` if it is at most `max` bytes; NULL with
 * *why set otherwise (*why NULL: no file). */
static unsigned char *read_file(const char *path, size_t max, size_t *len, const char **why)
{
    *why = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return NULL; /* no entry yet */
    unsigned char *data = NULL;
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) *why = "not a regular file";
    else if ((uint64_t)sb.st_size > max) *why = "implausible size";
    else if (!(data = malloc(sb.st_size > 0 ? (size_t)sb.st_size : 1))) *why = "out of memory";
    else *len = fread(data, 1, (size_t)sb.st_size, f);
    fclose(f);
    return data;
}

bool sdpa__cl_disk_load(sdpa_context *ctx, sdpa__cl_state *st, const char *key,
                        const char *options, cl_program *out)
{
    char path[4096], *ident = NULL;
    if (!identity(ctx, st, key, &ident, path, sizeof path)) return false;
    size_t len = 0;
    const char *why = NULL;
    unsigned char *data = read_file(
        path, SDPA__CL_ENTRY_HEADER + strlen(ident) + SDPA__CL_ENTRY_MAX_BINARY, &len, &why);
    bool ok = false;
    if (!data) goto done;
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
    free(data);
    free(ident);
    return ok;
}

void sdpa__cl_disk_store(sdpa_context *ctx, sdpa__cl_state *st, const char *key,
                         cl_program program)
{
    char path[4096], tmp[4200], *ident = NULL;
    if (!identity(ctx, st, key, &ident, path, sizeof path)) return;
    size_t blen = 0;
    unsigned char *bin = NULL;
    FILE *f = NULL;
    if (strlen(ident) > SDPA__CL_ENTRY_MAX_IDENT) goto done; /* the reader would refuse it */
    if (clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof blen, &blen, NULL) !=
            CL_SUCCESS || blen == 0 || blen > SDPA__CL_ENTRY_MAX_BINARY || !(bin = malloc(blen)))
        goto done;
    unsigned char *bins[1] = {bin};
    if (clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof bins, bins, NULL) != CL_SUCCESS)
        goto done;
    mkdirs(sdpa__context_cache_dir(ctx));
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    f = fopen(tmp, "wb");
    if (!f) goto done;
    size_t klen = strlen(ident);
    unsigned char hdr[SDPA__CL_ENTRY_HEADER];
    sdpa__cl_entry_header(hdr, ident, klen, bin, blen);
    bool ok = fwrite(hdr, 1, sizeof hdr, f) == sizeof hdr &&
              fwrite(ident, 1, klen, f) == klen && fwrite(bin, 1, blen, f) == blen;
    ok = (fclose(f) == 0) && ok;
    f = NULL;
    if (!ok || rename(tmp, path) != 0) {
        sdpa__log(ctx, SDPA_LOG_INFO, "opencl: could not write cache entry %s (%s)", path,
                  strerror(errno));
        remove(tmp);
    }
done:
    free(bin);
    free(ident);
}
