/*
 * cl_diskcache.c — on-disk cache of OpenCL program binaries.
 *
 * One file per program under sdpa__context_cache_dir(ctx), named by a hash of
 * its identity (platform, device, driver version, source hash and build
 * options). Format: magic "SDPACLB1", u32 format version, u32 identity
 * length, u64 binary length, u64 checksum (FNV-1a over identity + binary),
 * the identity text, the binary. A file is trusted only when every field
 * checks out and the identity matches exactly; anything else (truncated,
 * corrupt, another driver version) is ignored and overwritten by a fresh
 * build. Writes go to a temporary file in the same folder and are renamed
 * into place, so readers never see a partial file and concurrent writers
 * are safe. Skipped on PoCL, which keeps its own kernel cache
 * (SDPA_CL_DISK_CACHE=1 forces it on, =0 off). Called by cl_program.c.
 */
#include "cl_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAGIC "SDPACLB1"
#define FORMAT 1u
#define MAX_BINARY (256u << 20)

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

bool sdpa__cl_disk_load(sdpa_context *ctx, sdpa__cl_state *st, const char *key,
                        const char *options, cl_program *out)
{
    char path[4096], *ident = NULL;
    if (!identity(ctx, st, key, &ident, path, sizeof path)) return false;
    FILE *f = fopen(path, "rb");
    unsigned char *bin = NULL;
    char *got = NULL;
    bool ok = false;
    if (!f) goto done;
    char magic[8];
    uint32_t fmt, klen;
    uint64_t blen, sum;
    if (fread(magic, 1, 8, f) != 8 || memcmp(magic, MAGIC, 8) != 0 ||
        fread(&fmt, 4, 1, f) != 1 || fmt != FORMAT || fread(&klen, 4, 1, f) != 1 ||
        fread(&blen, 8, 1, f) != 1 || fread(&sum, 8, 1, f) != 1 ||
        klen != strlen(ident) || blen == 0 || blen > MAX_BINARY)
        goto bad;
    got = malloc(klen + 1);
    bin = malloc(blen);
    if (!got || !bin || fread(got, 1, klen, f) != klen || fread(bin, 1, blen, f) != blen)
        goto bad;
    got[klen] = '\0';
    if (strcmp(got, ident) != 0) goto bad; /* hash collision or stale: rebuild */
    uint64_t h = sdpa__cl_hash(SDPA__CL_HASH_INIT, got, klen);
    if (sdpa__cl_hash(h, bin, blen) != sum) goto bad;
    cl_int err, bst;
    size_t len = (size_t)blen;
    const unsigned char *bp = bin;
    cl_program prog = clCreateProgramWithBinary(st->context, 1, &st->device, &len, &bp,
                                                &bst, &err);
    if (err != CL_SUCCESS || bst != CL_SUCCESS) goto bad;
    if (clBuildProgram(prog, 1, &st->device, options, NULL, NULL) != CL_SUCCESS) {
        clReleaseProgram(prog);
        goto bad;
    }
    *out = prog;
    ok = true;
    goto done;
bad:
    sdpa__log(ctx, SDPA_LOG_INFO, "opencl: ignoring unusable cache entry %s; rebuilding", path);
done:
    if (f) fclose(f);
    free(bin);
    free(got);
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
    if (clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof blen, &blen, NULL) !=
            CL_SUCCESS || blen == 0 || blen > MAX_BINARY || !(bin = malloc(blen)))
        goto done;
    unsigned char *bins[1] = {bin};
    if (clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof bins, bins, NULL) != CL_SUCCESS)
        goto done;
    mkdirs(sdpa__context_cache_dir(ctx));
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    f = fopen(tmp, "wb");
    if (!f) goto done;
    uint32_t fmt = FORMAT, klen = (uint32_t)strlen(ident);
    uint64_t b64 = blen;
    uint64_t sum = sdpa__cl_hash(sdpa__cl_hash(SDPA__CL_HASH_INIT, ident, klen), bin, blen);
    bool ok = fwrite(MAGIC, 1, 8, f) == 8 && fwrite(&fmt, 4, 1, f) == 1 &&
              fwrite(&klen, 4, 1, f) == 1 && fwrite(&b64, 8, 1, f) == 1 &&
              fwrite(&sum, 8, 1, f) == 1 && fwrite(ident, 1, klen, f) == klen &&
              fwrite(bin, 1, blen, f) == blen;
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
