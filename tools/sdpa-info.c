/*
 * sdpa-info — what this libsdpa build and machine offer: version, backends
 * compiled in, the devices each backend sees with their capabilities, which
 * backend and device AUTO picks and why, the profile and kernel-cache
 * folders (docs/tuning.md) with what they hold, the shipped-profile
 * folder with how many of its records match this machine's devices, and the
 * host's fp32 FMA peak (of the cpu backend's kernel set) and read bandwidth
 * (sdpa_context_peak / sdpa_context_bandwidth: cached in the profile dir, or
 * measured once, about a second). --tiles lists instead each compiled-in
 * backend's tile parameters (range, default, meaning: tools/common/tiles.c).
 *
 *   sdpa-info [--json] [--tiles] [--no-measure] [--help]
 *
 * Exit status: 0 on success, 1 when no context can be created with AUTO,
 * 2 on usage errors. Thin program over sdpa.h (SDPA_EXPERIMENTAL) and cJSON.
 */
#include <cJSON.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "args.h"
#include "sdpa.h"
#include "tiles.h"
#include "util.h"

/* every backend kind, REFERENCE..VULKAN: kind of entry k */
#define NKINDS (SDPA_BACKEND_COUNT - SDPA_BACKEND_REFERENCE)
#define KIND(k) ((sdpa_backend_kind)(SDPA_BACKEND_REFERENCE + (k)))
#define MAX_DEVICES 16
#define MAX_LOG 32

/* The library's environment variables, reported when set. */
static const char *const env_vars[] = {"SDPA_BACKEND",     "SDPA_DEVICE",
                                       "SDPA_LOG",         "SDPA_PROFILE_DIR",
                                       "SDPA_CACHE_DIR",   "SDPA_SHIPPED_PROFILE_DIR",
                                       "SDPA_CPU_KERNELS", "SDPA_CPU_SPIN_US",
                                       "SDPA_CPU_HUGE_PAGES"};

typedef struct backend_report {
    sdpa_backend_kind kind;
    int compiled;
    sdpa_status count_status;
    int ndev;
    sdpa_device_info dev[MAX_DEVICES];
    sdpa_status dev_status[MAX_DEVICES];
} backend_report;

typedef struct dir_report {
    char path[4096];
    const char *source; /* which variable decided */
    int exists;
    long files;
    long long bytes;
} dir_report;

typedef struct auto_report {
    sdpa_status status;
    char backend[32];
    char device[256];
    char why[1024];
    int nlog;
    char log[MAX_LOG][256];
} auto_report;

/* The host's peak and read bandwidth, through a cpu (else reference) context. */
typedef struct host_report {
    int asked;
    char backend[32];
    sdpa_status peak_status, bw_status;
    sdpa_peak_info peak;
    sdpa_bandwidth_info bw;
} host_report;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: sdpa-info [--json] [--tiles] [--no-measure] [--help]\n"
            "\n"
            "Prints the libsdpa version, the backends compiled in, every device each\n"
            "backend sees (name, vendor, driver, GPU/CPU, compute units, memory, local\n"
            "memory, work-group size, fp16 and 16-bit storage, details; for cpu the\n"
            "kernel set it runs (avx512, avx2, neon or generic), why, and the sets this\n"
            "build has), what AUTO picks and why, the profile and kernel-cache folders,\n"
            "the shipped-profile folder with how many of its records match this\n"
            "machine's devices, and the host's fp32 FMA peak (at the width of the cpu\n"
            "backend's kernels) and read bandwidth: cached in the profile folder, else\n"
            "measured once (~1 s) and cached.\n"
            "\n"
            "  --json        one JSON object instead of text\n"
            "  --tiles       list each compiled-in backend's tile parameters (name, values,\n"
            "                default, meaning on that backend) instead; with --json an array\n"
            "  --no-measure  leave out the peak and bandwidth (nothing measured or cached)\n"
            "  -h, --help  this text\n"
            "\n"
            "Exit status: 0 ok, 1 no context could be created with AUTO, 2 usage error.\n");
}

/* ---- gathering ------------------------------------------------------------------- */

static void gather_backend(backend_report *r, sdpa_backend_kind kind)
{
    memset(r, 0, sizeof *r);
    r->kind = kind;
    r->compiled = sdpa_backend_compiled(kind);
    if (!r->compiled)
        return;
    int n = 0;
    r->count_status = sdpa_device_count(kind, &n);
    if (r->count_status != SDPA_OK || n < 0)
        n = 0;
    if (n > MAX_DEVICES)
        n = MAX_DEVICES;
    r->ndev = n;
    for (int i = 0; i < n; i++) {
        sdpa_device_info *d = &r->dev[i];
        memset(d, 0, sizeof *d);
        d->struct_size = sizeof *d;
        r->dev_status[i] = sdpa_device_get_info(kind, i, d);
        d->name[sizeof d->name - 1] = d->vendor[sizeof d->vendor - 1] = '\0';
        d->driver[sizeof d->driver - 1] = d->details[sizeof d->details - 1] = '\0';
    }
}

static void collect_log(void *user, sdpa_log_level level, const char *message)
{
    auto_report *a = user;
    (void)level;
    if (a->nlog < MAX_LOG)
        snprintf(a->log[a->nlog++], sizeof a->log[0], "%s", message);
}

/* Why AUTO lands where it does, from what the device listing shows. */
static void explain_auto(const backend_report *br, auto_report *a)
{
    size_t n = 0;
    const sdpa_backend_kind order[2] = {SDPA_BACKEND_OPENCL, SDPA_BACKEND_VULKAN};
    for (int o = 0; o < 2; o++) {
        const backend_report *r = NULL;
        for (int k = 0; k < NKINDS; k++)
            if (br[k].kind == order[o])
                r = &br[k];
        const char *name = sdpa_backend_name(order[o]);
        int gpus = 0;
        for (int i = 0; r && i < r->ndev; i++)
            gpus += r->dev_status[i] == SDPA_OK && r->dev[i].is_gpu;
        const char *what = !r || !r->compiled ? "not compiled in"
                           : r->ndev == 0     ? "no device found"
                           : gpus == 0        ? "devices found, but no GPU"
                                              : "has a GPU";
        n += (size_t)snprintf(a->why + n, sizeof a->why - n, "%s: %s; ", name, what);
        if (n >= sizeof a->why)
            return;
    }
    int cpu = sdpa_backend_compiled(SDPA_BACKEND_CPU);
    snprintf(a->why + n, sizeof a->why - n,
             "cpu: %s; order is OpenCL GPU, then Vulkan GPU, then the cpu backend%s", 
             cpu ? "compiled in" : "not compiled in",
             cpu ? "" : " (the reference backend when cpu is not compiled in)");
}

static void gather_auto(const backend_report *br, auto_report *a)
{
    memset(a, 0, sizeof *a);
    sdpa_context_options opt;
    sdpa_context_options_init(&opt);
    opt.backend = SDPA_BACKEND_AUTO;
    opt.log_level = SDPA_LOG_INFO;
    opt.log_fn = collect_log;
    opt.log_user = a;
    sdpa_context *ctx = NULL;
    a->status = sdpa_context_create(&opt, &ctx);
    if (a->status == SDPA_OK) {
        snprintf(a->backend, sizeof a->backend, "%s", sdpa_backend_name(sdpa_context_backend(ctx)));
        const char *dn = sdpa_context_device_name(ctx);
        snprintf(a->device, sizeof a->device, "%s", dn ? dn : "");
    }
    sdpa_context_destroy(ctx);
    explain_auto(br, a);
}

static void gather_host(host_report *h)
{
    memset(h, 0, sizeof *h);
    h->asked = 1;
    sdpa_context_options opt;
    sdpa_context_options_init(&opt);
    opt.backend = sdpa_backend_compiled(SDPA_BACKEND_CPU) ? SDPA_BACKEND_CPU
                                                          : SDPA_BACKEND_REFERENCE;
    snprintf(h->backend, sizeof h->backend, "%s", sdpa_backend_name(opt.backend));
    sdpa_context *ctx = NULL;
    h->peak_status = h->bw_status = sdpa_context_create(&opt, &ctx);
    if (h->peak_status != SDPA_OK)
        return;
    h->peak.struct_size = sizeof h->peak;
    h->bw.struct_size = sizeof h->bw;
    h->peak_status = sdpa_context_peak(ctx, 0, &h->peak);
    h->bw_status = sdpa_context_bandwidth(ctx, 0, &h->bw);
    sdpa_context_destroy(ctx);
}

static void gather_dir(dir_report *d, const char *env, const char *xdg, const char *sub,
                       const char *home_sub)
{
    memset(d, 0, sizeof *d);
    const char *v = getenv(env);
    const char *x = getenv(xdg);
    const char *h = getenv("HOME");
    if (v && *v) {
        snprintf(d->path, sizeof d->path, "%s", v);
        d->source = env;
    } else if (x && *x) {
        snprintf(d->path, sizeof d->path, "%s/%s", x, sub);
        d->source = xdg;
    } else if (h && *h) {
        snprintf(d->path, sizeof d->path, "%s/%s", h, home_sub);
        d->source = "HOME";
    } else {
        d->source = "none";
        return;
    }
    DIR *dir = opendir(d->path);
    if (!dir)
        return;
    d->exists = 1;
    struct dirent *e;
    while ((e = readdir(dir)) != NULL) {
        char p[4352];
        struct stat st;
        if (e->d_name[0] == '.' || !tu_path_join(p, sizeof p, d->path, e->d_name))
            continue;
        if (stat(p, &st) == 0 && S_ISREG(st.st_mode)) {
            d->files++;
            d->bytes += (long long)st.st_size;
        }
    }
    closedir(dir);
}

/* ---- text output --------------------------------------------------------------------- */

static void human_bytes(long long b, char *buf, size_t cap)
{
    const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)b;
    int i = 0;
    while (v >= 1024 && i < 4) {
        v /= 1024;
        i++;
    }
    snprintf(buf, cap, i ? "%.1f %s" : "%.0f %s", v, u[i]);
}

static void print_dir(const char *label, const dir_report *d)
{
    if (!d->path[0]) {
        printf("%s: (no location: set $%s or $HOME)\n", label,
               strcmp(label, "profiles") == 0 ? "SDPA_PROFILE_DIR" : "SDPA_CACHE_DIR");
        return;
    }
    printf("%s: %s (from $%s)", label, d->path, d->source);
    if (d->exists) {
        char b[32];
        human_bytes(d->bytes, b, sizeof b);
        printf(", %ld file%s, %s\n", d->files, d->files == 1 ? "" : "s", b);
    } else {
        printf(", does not exist yet\n");
    }
}

static void print_shipped(const sdpa_shipped_profiles_info *s)
{
    printf("shipped profiles: %s (%s)", s->dir, s->found_by);
    if (!s->exists) {
        printf(", does not exist\n");
        return;
    }
    printf(", %d file%s, %d record%s, %d matching this machine's devices", s->files,
           s->files == 1 ? "" : "s", s->records, s->records == 1 ? "" : "s", s->matching);
    if (s->stale)
        printf(" (%d stale)", s->stale);
    printf("\n");
}

static void print_host(const host_report *h)
{
    if (!h->asked)
        return;
    printf("\nhost (%s backend, default threads):\n", h->backend);
    if (h->peak_status == SDPA_OK)
        printf("  fp32 FMA peak   %.1f GFLOP/s (%s; %s)\n", h->peak.gflops, h->peak.method,
               h->peak.cached ? "cached" : "measured now");
    else
        printf("  fp32 FMA peak   unavailable (%s)\n", sdpa_status_name(h->peak_status));
    if (h->bw_status == SDPA_OK)
        printf("  read bandwidth  %.1f GB/s (%s; %s)\n", h->bw.gbps, h->bw.method,
               h->bw.cached ? "cached" : "measured now");
    else
        printf("  read bandwidth  unavailable (%s)\n", sdpa_status_name(h->bw_status));
}

static void print_text(const backend_report *br, const auto_report *a, const dir_report *prof,
                       const dir_report *cache, const sdpa_shipped_profiles_info *shipped,
                       const host_report *host)
{
    printf("libsdpa %s\n\nbackends:\n", sdpa_version_string());
    for (int k = 0; k < NKINDS; k++) {
        const backend_report *r = &br[k];
        if (!r->compiled) {
            printf("  %-10s not compiled in\n", sdpa_backend_name(r->kind));
            continue;
        }
        printf("  %-10s compiled in, %d device%s", sdpa_backend_name(r->kind), r->ndev,
               r->ndev == 1 ? "" : "s");
        if (r->count_status != SDPA_OK)
            printf(" (listing failed: %s)", sdpa_status_name(r->count_status));
        printf("\n");
        for (int i = 0; i < r->ndev; i++) {
            const sdpa_device_info *d = &r->dev[i];
            if (r->dev_status[i] != SDPA_OK) {
                printf("    [%d] (no information: %s)\n", i, sdpa_status_name(r->dev_status[i]));
                continue;
            }
            char gm[32], lm[32];
            human_bytes(d->global_mem_bytes, gm, sizeof gm);
            human_bytes(d->local_mem_bytes, lm, sizeof lm);
            printf("    [%d] %s\n", i, d->name);
            printf("        vendor %s, driver %s\n", d->vendor, d->driver);
            printf("        %s, %d compute units, %s memory, %s local memory\n",
                   d->is_gpu ? "GPU" : "CPU", d->compute_units, gm, lm);
            printf("        max work-group %d, subgroup %d, fp16 %s, 16-bit storage %s\n",
                   d->max_workgroup_size, d->subgroup_size, d->fp16 ? "yes" : "no",
                   d->storage16 ? "yes" : "no");
            if (d->details[0])
                printf("        %s\n", d->details);
        }
    }
    printf("\nauto: ");
    if (a->status == SDPA_OK)
        printf("%s on %s\n", a->backend, a->device);
    else
        printf("no context (%s: %s)\n", sdpa_status_name(a->status),
               sdpa_status_string(a->status));
    printf("  why: %s\n", a->why);
    for (int i = 0; i < a->nlog; i++)
        printf("  log: %s\n", a->log[i]);
    printf("\n");
    print_dir("profiles", prof);
    print_dir("kernel cache", cache);
    print_shipped(shipped);
    print_host(host);
    printf("\nenvironment:");
    int any = 0;
    for (size_t i = 0; i < sizeof env_vars / sizeof env_vars[0]; i++) {
        const char *v = getenv(env_vars[i]);
        if (v) {
            printf("%s%s=%s", any ? ", " : " ", env_vars[i], v);
            any = 1;
        }
    }
    printf("%s\n", any ? "" : " (no SDPA_* variables set)");
}

/* ---- JSON output ---------------------------------------------------------------------- */

static cJSON *dir_json(const dir_report *d)
{
    cJSON *o = cJSON_CreateObject();
    if (d->path[0])
        cJSON_AddStringToObject(o, "path", d->path);
    else
        cJSON_AddNullToObject(o, "path");
    cJSON_AddStringToObject(o, "source", d->source);
    cJSON_AddBoolToObject(o, "exists", d->exists);
    cJSON_AddNumberToObject(o, "files", (double)d->files);
    cJSON_AddNumberToObject(o, "bytes", (double)d->bytes);
    return o;
}

static cJSON *shipped_json(const sdpa_shipped_profiles_info *s)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "path", s->dir);
    cJSON_AddStringToObject(o, "found_by", s->found_by);
    cJSON_AddBoolToObject(o, "exists", s->exists);
    cJSON_AddNumberToObject(o, "files", s->files);
    cJSON_AddNumberToObject(o, "records", s->records);
    cJSON_AddNumberToObject(o, "matching", s->matching);
    cJSON_AddNumberToObject(o, "stale", s->stale);
    return o;
}

static cJSON *host_json(const host_report *h)
{
    if (!h->asked)
        return cJSON_CreateNull();
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "backend", h->backend);
    cJSON_AddStringToObject(o, "peak_status", sdpa_status_name(h->peak_status));
    if (h->peak_status == SDPA_OK) {
        cJSON_AddNumberToObject(o, "peak_gflops", h->peak.gflops);
        cJSON_AddStringToObject(o, "peak_method", h->peak.method);
        cJSON_AddBoolToObject(o, "peak_cached", h->peak.cached);
    }
    cJSON_AddStringToObject(o, "bandwidth_status", sdpa_status_name(h->bw_status));
    if (h->bw_status == SDPA_OK) {
        cJSON_AddNumberToObject(o, "bandwidth_gbps", h->bw.gbps);
        cJSON_AddStringToObject(o, "bandwidth_method", h->bw.method);
        cJSON_AddBoolToObject(o, "bandwidth_cached", h->bw.cached);
    }
    return o;
}

static int print_json(const backend_report *br, const auto_report *a, const dir_report *prof,
                      const dir_report *cache, const sdpa_shipped_profiles_info *shipped,
                      const host_report *host)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "version", sdpa_version_string());
    cJSON_AddNumberToObject(root, "version_number", sdpa_version());
    cJSON *bs = cJSON_AddArrayToObject(root, "backends");
    for (int k = 0; k < NKINDS; k++) {
        const backend_report *r = &br[k];
        cJSON *b = cJSON_CreateObject();
        cJSON_AddStringToObject(b, "name", sdpa_backend_name(r->kind));
        cJSON_AddBoolToObject(b, "compiled", r->compiled);
        cJSON *ds = cJSON_AddArrayToObject(b, "devices");
        for (int i = 0; i < r->ndev; i++) {
            const sdpa_device_info *d = &r->dev[i];
            cJSON *o = cJSON_CreateObject();
            cJSON_AddNumberToObject(o, "index", i);
            cJSON_AddStringToObject(o, "status", sdpa_status_name(r->dev_status[i]));
            if (r->dev_status[i] == SDPA_OK) {
                cJSON_AddStringToObject(o, "name", d->name);
                cJSON_AddStringToObject(o, "vendor", d->vendor);
                cJSON_AddStringToObject(o, "driver", d->driver);
                cJSON_AddStringToObject(o, "type", d->is_gpu ? "GPU" : "CPU");
                cJSON_AddNumberToObject(o, "compute_units", d->compute_units);
                cJSON_AddNumberToObject(o, "global_mem_bytes", (double)d->global_mem_bytes);
                cJSON_AddNumberToObject(o, "local_mem_bytes", (double)d->local_mem_bytes);
                cJSON_AddNumberToObject(o, "max_workgroup_size", d->max_workgroup_size);
                cJSON_AddNumberToObject(o, "subgroup_size", d->subgroup_size);
                cJSON_AddBoolToObject(o, "fp16", d->fp16);
                cJSON_AddBoolToObject(o, "storage16", d->storage16);
                cJSON_AddStringToObject(o, "details", d->details);
            }
            cJSON_AddItemToArray(ds, o);
        }
        cJSON_AddItemToArray(bs, b);
    }
    cJSON *au = cJSON_AddObjectToObject(root, "auto");
    cJSON_AddStringToObject(au, "status", sdpa_status_name(a->status));
    if (a->status == SDPA_OK) {
        cJSON_AddStringToObject(au, "backend", a->backend);
        cJSON_AddStringToObject(au, "device", a->device);
    }
    cJSON_AddStringToObject(au, "why", a->why);
    cJSON *lg = cJSON_AddArrayToObject(au, "log");
    for (int i = 0; i < a->nlog; i++)
        cJSON_AddItemToArray(lg, cJSON_CreateString(a->log[i]));
    cJSON_AddItemToObject(root, "profile_dir", dir_json(prof));
    cJSON_AddItemToObject(root, "cache_dir", dir_json(cache));
    cJSON_AddItemToObject(root, "shipped_profiles", shipped_json(shipped));
    cJSON_AddItemToObject(root, "host", host_json(host));
    cJSON *env = cJSON_AddObjectToObject(root, "environment");
    for (size_t i = 0; i < sizeof env_vars / sizeof env_vars[0]; i++) {
        const char *v = getenv(env_vars[i]);
        if (v)
            cJSON_AddStringToObject(env, env_vars[i], v);
        else
            cJSON_AddNullToObject(env, env_vars[i]);
    }
    char *s = cJSON_Print(root);
    cJSON_Delete(root);
    if (!s)
        return 0;
    printf("%s\n", s);
    cJSON_free(s);
    return 1;
}

int main(int argc, char **argv)
{
    int json = 0, help = 0, tiles = 0, measure = 1;
    ta_args a;
    ta_init(&a, argc, argv);
    while (ta_next(&a)) {
        if (ta_flag(&a, "--help") || ta_flag(&a, "-h"))
            help = 1;
        else if (ta_flag(&a, "--json"))
            json = 1;
        else if (ta_flag(&a, "--tiles"))
            tiles = 1;
        else if (ta_flag(&a, "--no-measure"))
            measure = 0;
        else if (a.positional)
            ta_fail(&a, "unexpected argument %s", a.arg);
        else
            ta_fail(&a, "unknown option %s", a.arg);
        if (a.error)
            break;
    }
    if (a.error) {
        fprintf(stderr, "sdpa-info: %s\nTry 'sdpa-info --help'.\n", a.message);
        return TA_EXIT_USAGE;
    }

    if (help) {
        usage(stdout);
        return TA_EXIT_OK;
    }
    if (tiles) {
        if (!json) {
            tt_print_params(stdout);
            return TA_EXIT_OK;
        }
        char *s = tt_params_json();
        if (!s) {
            fprintf(stderr, "sdpa-info: out of memory\n");
            return TA_EXIT_FAIL;
        }
        printf("%s\n", s);
        free(s);
        return TA_EXIT_OK;
    }
    static backend_report br[NKINDS];
    static auto_report au;
    dir_report prof, cache;
    for (int k = 0; k < NKINDS; k++)
        gather_backend(&br[k], KIND(k));
    gather_auto(br, &au);
    gather_dir(&prof, "SDPA_PROFILE_DIR", "XDG_DATA_HOME", "sdpa/profiles",
               ".local/share/sdpa/profiles");
    gather_dir(&cache, "SDPA_CACHE_DIR", "XDG_CACHE_HOME", "sdpa/kernels", ".cache/sdpa/kernels");
    sdpa_shipped_profiles_info shipped = {.struct_size = sizeof shipped};
    if (sdpa_shipped_profiles_get_info(&shipped) != SDPA_OK)
        memset(&shipped, 0, sizeof shipped);
    static host_report host;
    if (measure)
        gather_host(&host);
    if (json) {
        if (!print_json(br, &au, &prof, &cache, &shipped, &host)) {
            fprintf(stderr, "sdpa-info: out of memory\n");
            return TA_EXIT_FAIL;
        }
    } else {
        print_text(br, &au, &prof, &cache, &shipped, &host);
    }
    return au.status == SDPA_OK ? TA_EXIT_OK : TA_EXIT_FAIL;
}
