/*
 * device_table.c — the vendor defaults table (device_table.h): one list of
 * rows at four levels, class -> vendor -> architecture -> device, each
 * matching probed properties and setting some defaults. A device resolves
 * to the first matching row of each level; every default comes from the
 * most specific of those rows that sets it (CLBlast's device database works
 * the same way). Rows match by device type, local-memory kind, PCI vendor
 * id, and patterns over the vendor string, device name and platform name.
 *
 * Patterns: alternatives separated by '|', compared without case; each must
 * appear as a whole word (neighbours not letters or digits), '^' anchors it
 * at the start, a trailing '*' lets it run into the next word ("RTX 40*"
 * matches "RTX 4090"). Within a level the first matching row wins, so more
 * specific patterns come first (sm_80's "A100" before sm_86's "A10").
 *
 * Also the architecture families of the profile store (sdpa__device_family):
 * derived from the vendor string and device name only, so that a record
 * written by an older library (which kept no family) resolves to the family
 * the tuner would write today. Pure functions of their inputs; no state.
 */
#include "device_table.h"

#include <ctype.h>
#include <strings.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEEP (-1)
#define ANY (-1)

typedef struct row {
    int level;
    const char *vendor;     /* vendor key: set by VENDOR rows, required by ARCH/DEVICE rows */
    uint32_t vendor_id;     /* VENDOR rows: the PCI vendor id that identifies it (0: none) */
    const char *vendor_str; /* VENDOR rows: patterns over the vendor string */
    const char *names;      /* patterns over the device name (NULL: any) */
    const char *platform;   /* patterns over the platform name (NULL: none) */
    int type;               /* device type required (ANY) */
    int local;              /* local-memory kind required (ANY; 0 emulated, 1 dedicated) */
    const char *arch;       /* architecture key set (NULL: keep) */
    int kclass, wg, subgroup, stage; /* KEEP: the less specific row's */
    const char *why;
} row;

#define CLASS(type, local, kc, wg, sg, st, why) \
    {SDPA__LEVEL_CLASS, NULL, 0, NULL, NULL, NULL, type, local, "", kc, wg, sg, st, why}
#define VENDOR(key, id, vstr, names, type, kc, wg, sg, st, why) \
    {SDPA__LEVEL_VENDOR, key, id, vstr, names, NULL, type, ANY, NULL, kc, wg, sg, st, why}
#define ARCH(key, names, platform, arch, kc, wg, sg, st, why) \
    {SDPA__LEVEL_ARCH, key, 0, NULL, names, platform, ANY, ANY, arch, kc, wg, sg, st, why}
#define DEVICE(key, names, kc, wg, sg, st, why) \
    {SDPA__LEVEL_DEVICE, key, 0, NULL, names, NULL, ANY, ANY, NULL, kc, wg, sg, st, why}

enum { CPU = SDPA__KCLASS_CPU, GPU = SDPA__KCLASS_GPU, MOBILE = SDPA__KCLASS_MOBILE_GPU };

static const row rows[] = {
    /* ---- classes: what any device of a type gets ---- */
    CLASS(SDPA__DEVTYPE_CPU, ANY, CPU, 8, 0, 0,
          "CPU device: rows per work-item in wide vector registers, caches instead of staging"),
    CLASS(SDPA__DEVTYPE_GPU, 0, CPU, 8, 0, 0,
          "GPU of unknown vendor whose local memory is emulated in global memory: "
          "staging buys nothing, CPU-style rows"),
    CLASS(SDPA__DEVTYPE_GPU, ANY, GPU, 64, 0, 1,
          "GPU with dedicated local memory: work-groups share staged K/V tiles"),
    CLASS(ANY, ANY, CPU, 8, 0, 0, "unknown device type: the kernels that run anywhere"),

    /* ---- vendors ---- */
    VENDOR("cpu", 0, NULL, NULL, SDPA__DEVTYPE_CPU, CPU, KEEP, KEEP, KEEP,
           "a CPU driver (PoCL, Intel's CPU runtime, lavapipe)"),
    VENDOR("cpu", 0x10005, NULL, "^pthread-*|^cpu-*|^basic-*|^llvmpipe*|^softpipe*|^SwiftShader*",
           ANY, CPU, KEEP, KEEP, KEEP, "a CPU driver, known by its device name"),
    VENDOR("nvidia", 0x10de, "^NVIDIA*", NULL, ANY, GPU, 64, 32, 1,
           "NVIDIA: 32-wide warps, dedicated shared memory"),
    VENDOR("amd", 0x1002, "^Advanced Micro Devices*|^AMD*", NULL, ANY, GPU, 64, 64, 1,
           "AMD: 64-wide wavefronts (GCN, CDNA), dedicated LDS"),
    VENDOR("intel", 0x8086, "^Intel*", NULL, ANY, GPU, 64, 16, 1,
           "Intel GPUs: SIMD16 preferred, shared local memory"),
    VENDOR("qualcomm", 0x5143, "^QUALCOMM*", NULL, ANY, MOBILE, 64, 64, 1,
           "Qualcomm Adreno: mobile GPU with on-chip local memory, 64-wide waves"),
    VENDOR("arm", 0x13b5, "^ARM*", NULL, ANY, MOBILE, 64, 16, 0,
           "ARM Mali: reports its local memory as global (it is system memory) yet wants "
           "GPU-style kernels; staging only adds a copy, the caches serve the reuse"),
    VENDOR("apple", 0x106b, "^Apple*", NULL, ANY, GPU, 64, 32, 1,
           "Apple GPUs (MoltenVK): 32-wide SIMD groups, 32 KiB threadgroup memory"),

    /* ---- architectures ---- */
    ARCH("cpu", "^pthread-*|^cpu-*|^basic-*", "Portable Computing Language*", "pocl", KEEP, 8,
         KEEP, KEEP, "PoCL: work-groups of 8 rows keep the vector units busy"),
    ARCH("cpu", "^llvmpipe*", NULL, "llvmpipe", KEEP, 64, KEEP, KEEP,
         "lavapipe: llvmpipe runs 64 invocations as SIMD vectors"),
    ARCH("nvidia", "H100|H200|H800|GH200|sm_90", NULL, "sm_90", KEEP, KEEP, KEEP, KEEP,
         "Hopper"),
    ARCH("nvidia", "A100|A800|A30|sm_80", NULL, "sm_80", KEEP, KEEP, KEEP, KEEP,
         "Ampere GA100"),
    ARCH("nvidia", "RTX 40*|L4|L40*|Ada|sm_89", NULL, "sm_89", KEEP, KEEP, KEEP, KEEP,
         "Ada Lovelace"),
    ARCH("nvidia", "RTX 30*|RTX A*|A10|A16|A40|A2|sm_86", NULL, "sm_86", KEEP, KEEP, KEEP,
         KEEP, "Ampere GA10x"),
    ARCH("nvidia", "RTX 20*|T4|TITAN RTX|Quadro RTX*|GTX 16*|sm_75", NULL, "sm_75", KEEP,
         KEEP, KEEP, KEEP, "Turing"),
    ARCH("nvidia", "V100|TITAN V|sm_70", NULL, "sm_70", KEEP, KEEP, KEEP, KEEP, "Volta"),
    ARCH("amd", "gfx908|gfx90a|gfx94*|gfx950|MI100|MI2*|MI3*|Instinct*|CDNA*", NULL, "cdna",
         KEEP, KEEP, 64, KEEP, "CDNA (Instinct): wave64, matrix cores"),
    ARCH("amd", "gfx10*|gfx11*|gfx12*|RX 5500*|RX 5600*|RX 5700*|RX 6*|RX 7*|RX 9*|NAVI*|RDNA*",
         NULL, "rdna", KEEP, KEEP, 32, KEEP, "RDNA: wave32 preferred by the compiler"),
    ARCH("amd", "gfx8*|gfx9*|Vega*|RX 4*|RX 5*|Polaris*|Ellesmere|Fiji|Hawaii|Tahiti|GCN*",
         NULL, "gcn", KEEP, KEEP, 64, KEEP, "GCN: wave64"),
    ARCH("intel", "Max 1*|Data Center GPU Max*|Ponte Vecchio|PVC|Xe-HPC", NULL, "xe-hpc",
         KEEP, KEEP, 16, KEEP, "Xe-HPC (Ponte Vecchio)"),
    ARCH("intel", "Arc*|DG2|ACM*|A770|A750|A580|A380|Battlemage|Xe-HPG", NULL, "xe-hpg", KEEP,
         KEEP, 16, KEEP, "Xe-HPG (Arc, DG2)"),
    ARCH("intel", "Iris Xe*|Iris(R) Xe*|Xe Graphics|UHD Graphics 7*|Tiger Lake|TGL*|Xe-LP",
         NULL, "xe-lp", KEEP, KEEP, 16, KEEP, "Xe-LP (Tiger Lake and later integrated)"),
    ARCH("intel", "HD Graphics*|UHD Graphics*|Iris Plus*|Iris(R) Plus*|Iris Pro*", NULL,
         "gen9", KEEP, KEEP, 16, KEEP, "Gen9-Gen11 integrated"),
    ARCH("qualcomm", "Adreno*", NULL, "adreno", KEEP, KEEP, KEEP, KEEP, "Adreno 6xx/7xx"),
    ARCH("arm", "Mali-G57*|Mali-G68*|Mali-G77*|Mali-G78*|Mali-G310*|Mali-G510*|Mali-G610*|"
         "Mali-G615*|Mali-G620*|Mali-G710*|Mali-G715*|Mali-G720*|Mali-G725*|Immortalis*|Valhall",
         NULL, "mali-valhall", KEEP, KEEP, 16, KEEP, "Valhall: 16-wide warps"),
    ARCH("arm", "Mali-G31*|Mali-G51*|Mali-G52*|Mali-G71*|Mali-G72*|Mali-G76*|Bifrost", NULL,
         "mali-bifrost", KEEP, KEEP, 4, KEEP, "Bifrost: 4-wide warps on G71/G72"),
    ARCH("arm", "Mali-T*|Midgard", NULL, "mali-midgard", KEEP, KEEP, 0, KEEP,
         "Midgard: vector ISA, no subgroups"),
    ARCH("apple", "M1*|A14*", NULL, "apple7", KEEP, KEEP, KEEP, KEEP, "Apple GPU family 7"),
    ARCH("apple", "M2*|A15*|A16*", NULL, "apple8", KEEP, KEEP, KEEP, KEEP,
         "Apple GPU family 8"),
    ARCH("apple", "M3*|M4*|A17*|A18*", NULL, "apple9", KEEP, KEEP, KEEP, KEEP,
         "Apple GPU family 9"),

    /* ---- devices ---- */
    DEVICE("arm", "Mali-G31*|Mali-G52*|Mali-G76*", KEEP, KEEP, 8, KEEP,
           "Bifrost models with 8-wide warps"),
    DEVICE("qualcomm", "Adreno (TM) 5*|Adreno 5*", KEEP, 32, KEEP, KEEP,
           "Adreno 5xx: smaller register file, work-groups of 32"),
};
#define NROWS (int)(sizeof rows / sizeof rows[0])

/* ---- patterns ---- */

static bool word_char(char c) { return isalnum((unsigned char)c) != 0; }

/* Whether the alternative alt[0..n) matches s (see the file comment). */
static bool alt_match(const char *s, const char *alt, size_t n)
{
    bool anchored = n && alt[0] == '^', open = n && alt[n - 1] == '*';
    if (anchored) alt++, n--;
    if (open) n--;
    if (n == 0) return false;
    size_t len = strlen(s);
    for (size_t at = 0; at + n <= len; at++) {
        if (anchored && at > 0) break;
        if (strncasecmp(s + at, alt, n) != 0) continue;
        if (at > 0 && word_char(s[at - 1]) && word_char(alt[0])) continue;
        if (!open && at + n < len && word_char(s[at + n]) && word_char(alt[n - 1])) continue;
        return true;
    }
    return false;
}

static bool pattern_match(const char *s, const char *pattern)
{
    if (!s || !*s || !pattern) return false;
    for (const char *p = pattern;;) {
        const char *bar = strchr(p, '|');
        size_t n = bar ? (size_t)(bar - p) : strlen(p);
        if (alt_match(s, p, n)) return true;
        if (!bar) return false;
        p = bar + 1;
    }
}

/* ---- resolution ---- */

static uint32_t vendor_id_of(const sdpa__device_probe *p)
{
    if (p->vendor_id) return p->vendor_id;
    if (p->vendor && p->vendor[0] == '0' && (p->vendor[1] == 'x' || p->vendor[1] == 'X')) {
        char *end;
        unsigned long v = strtoul(p->vendor + 2, &end, 16);
        if (end != p->vendor + 2 && *end == '\0' && v <= UINT32_MAX) return (uint32_t)v;
    }
    return 0;
}

static bool names_match(const row *r, const sdpa__device_probe *p)
{
    if (!r->names && !r->platform) return true;
    return pattern_match(p->name, r->names) || pattern_match(p->platform, r->platform);
}

static bool row_matches(const row *r, const sdpa__device_probe *p, uint32_t vid,
                        const char *vendor)
{
    if (r->type != ANY && r->type != p->type) return false;
    switch (r->level) {
    case SDPA__LEVEL_CLASS: return r->local == ANY || r->local == p->local_mem;
    case SDPA__LEVEL_VENDOR:
        if (!r->vendor_id && !r->vendor_str && !r->names) return true;
        return (r->vendor_id && r->vendor_id == vid) || pattern_match(p->vendor, r->vendor_str) ||
               pattern_match(p->name, r->names);
    default: return strcmp(r->vendor, vendor) == 0 && names_match(r, p);
    }
}

static void overlay(sdpa__device_defaults *d, const row *r, int index)
{
    if (r->arch) d->arch = r->arch;
    if (r->kclass != KEEP) d->kclass = (sdpa__kclass)r->kclass;
    if (r->wg != KEEP) d->wg_size = r->wg;
    if (r->subgroup != KEEP) d->subgroup = r->subgroup;
    if (r->stage != KEEP) d->stage_kv = r->stage;
    if (r->level == SDPA__LEVEL_VENDOR) d->vendor = r->vendor;
    d->row = index;
    d->level = r->level;
    d->why = r->why;
}

void sdpa__device_defaults_of(const sdpa__device_probe *p, sdpa__device_defaults *out)
{
    memset(out, 0, sizeof *out);
    out->vendor = "unknown";
    out->arch = "";
    uint32_t vid = vendor_id_of(p);
    for (int level = SDPA__LEVEL_CLASS; level <= SDPA__LEVEL_DEVICE; level++) {
        if (level > SDPA__LEVEL_VENDOR && strcmp(out->vendor, "unknown") == 0) break;
        for (int i = 0; i < NROWS; i++)
            if (rows[i].level == level && row_matches(&rows[i], p, vid, out->vendor)) {
                overlay(out, &rows[i], i);
                break;
            }
    }
}

const char *sdpa__kclass_name(sdpa__kclass c)
{
    switch (c) {
    case SDPA__KCLASS_GPU: return "gpu-style";
    case SDPA__KCLASS_MOBILE_GPU: return "mobile-gpu";
    default: return "cpu-style";
    }
}

int sdpa__device_table_rows(void) { return NROWS; }

bool sdpa__device_table_row(int i, int *level, const char **vendor, const char **arch)
{
    if (i < 0 || i >= NROWS) return false;
    *level = rows[i].level;
    *vendor = rows[i].vendor;
    *arch = rows[i].arch;
    return true;
}

/* ---- families ---- */

/* PoCL names its CPU device "pthread-<LLVM target CPU>-<model>" ("cpu-..."
 * from PoCL 4): the ISA level of that target, which decides the vector
 * width the kernels are compiled for. Longer names first ("skylake-avx512"
 * before "skylake"). */
static const struct { const char *cpu, *isa; } isa_levels[] = {
    {"skylake-avx512", "x86-64-avx512"}, {"cascadelake", "x86-64-avx512"},
    {"cooperlake", "x86-64-avx512"}, {"cannonlake", "x86-64-avx512"},
    {"icelake-client", "x86-64-avx512"}, {"icelake-server", "x86-64-avx512"},
    {"tigerlake", "x86-64-avx512"}, {"rocketlake", "x86-64-avx512"},
    {"sapphirerapids", "x86-64-avx512"}, {"emeraldrapids", "x86-64-avx512"},
    {"graniterapids", "x86-64-avx512"}, {"znver4", "x86-64-avx512"},
    {"znver5", "x86-64-avx512"},
    {"haswell", "x86-64-avx2"}, {"broadwell", "x86-64-avx2"}, {"skylake", "x86-64-avx2"},
    {"alderlake", "x86-64-avx2"}, {"raptorlake", "x86-64-avx2"}, {"meteorlake", "x86-64-avx2"},
    {"arrowlake", "x86-64-avx2"}, {"lunarlake", "x86-64-avx2"}, {"znver1", "x86-64-avx2"},
    {"znver2", "x86-64-avx2"}, {"znver3", "x86-64-avx2"}, {"bdver4", "x86-64-avx2"},
    {"sandybridge", "x86-64-avx"}, {"ivybridge", "x86-64-avx"}, {"bdver1", "x86-64-avx"},
    {"bdver2", "x86-64-avx"}, {"bdver3", "x86-64-avx"}, {"btver2", "x86-64-avx"},
    {"neoverse-v1", "aarch64-sve"}, {"neoverse-v2", "aarch64-sve"}, {"a64fx", "aarch64-sve"},
    {"neoverse-n1", "aarch64-neon"}, {"neoverse-n2", "aarch64-sve"},
    {"cortex-a*", "aarch64-neon"}, {"apple-*", "aarch64-neon"},
};

static const char *pocl_isa(const char *name)
{
    const char *dash = strchr(name, '-');
    if (!dash) return NULL;
    const char *cpu = dash + 1;
    for (size_t i = 0; i < sizeof isa_levels / sizeof isa_levels[0]; i++) {
        const char *c = isa_levels[i].cpu;
        size_t n = strlen(c);
        bool prefix = c[n - 1] == '*';
        if (prefix) n--;
        if (strncmp(cpu, c, n) != 0) continue;
        if (prefix || cpu[n] == '-' || cpu[n] == '\0') return isa_levels[i].isa;
    }
    return NULL;
}

/* Copies the word at s (letters, digits) lowercased; false when empty. */
static bool word_at(const char *s, char *out, size_t size)
{
    size_t n = 0;
    while (word_char(s[n]) && n + 1 < size) {
        out[n] = (char)tolower((unsigned char)s[n]);
        n++;
    }
    out[n] = '\0';
    return n > 0;
}

/* The family's architecture part for d (resolved from vendor and name). */
static bool family_arch(const sdpa__device_defaults *d, const char *name, char *out,
                        size_t size)
{
    if (strcmp(d->arch, "pocl") == 0) {
        const char *isa = pocl_isa(name);
        if (!isa) return false;
        snprintf(out, size, "pocl-%s", isa);
        return true;
    }
    if (strcmp(d->arch, "llvmpipe") == 0) {
        /* "llvmpipe (LLVM 15.0.6, 256 bits)": the vector width */
        const char *bits = strstr(name, " bits)");
        const char *start = bits;
        while (start && start > name && isdigit((unsigned char)start[-1])) start--;
        if (bits && start < bits) snprintf(out, size, "llvmpipe-%.*s", (int)(bits - start), start);
        else snprintf(out, size, "llvmpipe");
        return true;
    }
    if (strcmp(d->vendor, "amd") == 0) {
        /* the gfx target (ROCm names the device by it), else RADV's chip */
        const char *g = strstr(name, "gfx");
        if (g && (g == name || !word_char(g[-1])) && word_at(g, out, size)) return true;
        const char *radv = strstr(name, "RADV ");
        if (radv && word_at(radv + 5, out, size)) return true;
    }
    if (!d->arch[0]) return false;
    snprintf(out, size, "%s", d->arch);
    return true;
}

bool sdpa__device_family_valid(const char *s)
{
    if (!s) return false;
    size_t n = strlen(s);
    if (n == 0 || n >= 64) return false;
    int slashes = 0;
    char prev = '/';
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '/') {
            if (prev == '/') return false; /* empty part */
            slashes++;
        } else if (!(islower((unsigned char)c) || isdigit((unsigned char)c) || c == '.' ||
                     c == '_' || c == '+' || c == '-')) {
            return false;
        }
        prev = c;
    }
    return slashes == 2 && prev != '/';
}

bool sdpa__device_family(const char *backend, const char *vendor, const char *name,
                         char *out, size_t size)
{
    if (size) out[0] = '\0';
    if (!backend || !name || size < 2) return false;
    sdpa__device_probe p = {.vendor = vendor, .name = name, .local_mem = -1};
    sdpa__device_defaults d;
    sdpa__device_defaults_of(&p, &d);
    char arch[48], key[96];
    if (strcmp(d.vendor, "unknown") == 0 || !family_arch(&d, name, arch, sizeof arch))
        return false;
    /* vendor and architecture lowercased; the backend part is the backend
     * name as it is, since a record's family must begin with its backend
     * (profile.c): a name that cannot be a family part ("cpZ") gives none */
    const int at = snprintf(key, sizeof key, "%s/", backend);
    if (at < 0 || (size_t)at >= sizeof key) return false;
    snprintf(key + at, sizeof key - (size_t)at, "%s/%s", d.vendor, arch);
    for (char *c = key + at; *c; c++) *c = (char)tolower((unsigned char)*c);
    if (!sdpa__device_family_valid(key) || strlen(key) >= size) return false;
    memcpy(out, key, strlen(key) + 1);
    return true;
}
