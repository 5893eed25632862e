/*
 * test_device_table.c — the vendor defaults table (src/core/device_table.c):
 * real device names of every vendor resolve to the expected vendor,
 * architecture and kernel class; every row below the class rows is the most
 * specific match of some device (no row is dead); a device row overrides its
 * architecture which overrides its vendor, field by field; unknown devices
 * fall back to their class (GPUs with dedicated local memory GPU-style, the
 * rest CPU-style); the Mali persona's answers (ARM, global local memory) give
 * GPU-style kernels. Also the profile families derived from device keys and
 * the family-key syntax the profile store checks.
 *
 * Run time: milliseconds (pure functions, no device).
 */
#include "testutil.h"

#include "device_table.h"

#include <stdio.h>
#include <string.h>

enum { T_UNK = SDPA__DEVTYPE_UNKNOWN, T_CPU = SDPA__DEVTYPE_CPU, T_GPU = SDPA__DEVTYPE_GPU };
enum { C_CPU = SDPA__KCLASS_CPU, C_GPU = SDPA__KCLASS_GPU, C_MOB = SDPA__KCLASS_MOBILE_GPU };

typedef struct dev_case {
    const char *name, *vendor, *platform;
    uint32_t vendor_id;
    int type, local;
    const char *want_vendor, *want_arch;
    int want_class, want_level;
    int want_subgroup; /* -1: not checked */
} dev_case;

static const dev_case cases[] = {
    /* CPU drivers */
    {"Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz", "Intel(R) Corporation", "Intel(R) OpenCL", 0,
     T_CPU, 1, "cpu", "", C_CPU, SDPA__LEVEL_VENDOR, -1},
    {"SwiftShader Device (Subzero)", NULL, NULL, 0x1ae0, T_UNK, -1, "cpu", "", C_CPU,
     SDPA__LEVEL_VENDOR, -1},
    {"pthread-skylake-avx512-Intel(R) Xeon(R) Processor", "GenuineIntel",
     "Portable Computing Language", 0, T_CPU, 0, "cpu", "pocl", C_CPU, SDPA__LEVEL_ARCH, -1},
    {"llvmpipe (LLVM 15.0.6, 256 bits)", NULL, NULL, 0x10005, T_CPU, -1, "cpu", "llvmpipe",
     C_CPU, SDPA__LEVEL_ARCH, -1},
    /* NVIDIA */
    {"NVIDIA Graphics Device", "NVIDIA Corporation", "NVIDIA CUDA", 0, T_GPU, 1, "nvidia", "",
     C_GPU, SDPA__LEVEL_VENDOR, 32},
    {"NVIDIA H100 80GB HBM3", "NVIDIA Corporation", NULL, 0, T_GPU, 1, "nvidia", "sm_90", C_GPU,
     SDPA__LEVEL_ARCH, 32},
    {"NVIDIA A100-SXM4-80GB", NULL, NULL, 0x10de, T_GPU, -1, "nvidia", "sm_80", C_GPU,
     SDPA__LEVEL_ARCH, 32},
    {"NVIDIA GeForce RTX 4090", "NVIDIA Corporation", NULL, 0, T_GPU, 1, "nvidia", "sm_89",
     C_GPU, SDPA__LEVEL_ARCH, 32},
    {"NVIDIA A10", "NVIDIA Corporation", NULL, 0, T_GPU, 1, "nvidia", "sm_86", C_GPU,
     SDPA__LEVEL_ARCH, 32},
    {"Tesla T4", "NVIDIA Corporation", NULL, 0, T_GPU, 1, "nvidia", "sm_75", C_GPU,
     SDPA__LEVEL_ARCH, 32},
    {"Tesla V100-PCIE-16GB", "NVIDIA Corporation", NULL, 0, T_GPU, 1, "nvidia", "sm_70", C_GPU,
     SDPA__LEVEL_ARCH, 32},
    /* AMD */
    {"AMD Custom GPU 0405", NULL, NULL, 0x1002, T_GPU, -1, "amd", "", C_GPU, SDPA__LEVEL_VENDOR,
     64},
    {"gfx90a:sramecc+:xnack-", "Advanced Micro Devices, Inc.", "AMD Accelerated Parallel "
     "Processing", 0, T_GPU, 1, "amd", "cdna", C_GPU, SDPA__LEVEL_ARCH, 64},
    {"gfx1030", "Advanced Micro Devices, Inc.", NULL, 0, T_GPU, 1, "amd", "rdna", C_GPU,
     SDPA__LEVEL_ARCH, 32},
    {"AMD Radeon RX 7900 XTX (RADV NAVI31)", NULL, NULL, 0x1002, T_GPU, -1, "amd", "rdna",
     C_GPU, SDPA__LEVEL_ARCH, 32},
    {"Radeon RX 580 Series", "AMD", NULL, 0, T_GPU, 1, "amd", "gcn", C_GPU, SDPA__LEVEL_ARCH,
     64},
    /* Intel */
    {"Intel(R) Graphics [0x56c0]", "Intel(R) Corporation", NULL, 0, T_GPU, 1, "intel", "",
     C_GPU, SDPA__LEVEL_VENDOR, 16},
    {"Intel(R) Data Center GPU Max 1550", "Intel(R) Corporation", NULL, 0, T_GPU, 1, "intel",
     "xe-hpc", C_GPU, SDPA__LEVEL_ARCH, 16},
    {"Intel(R) Arc(TM) A770 Graphics", NULL, NULL, 0x8086, T_GPU, -1, "intel", "xe-hpg", C_GPU,
     SDPA__LEVEL_ARCH, 16},
    {"Intel(R) Iris(R) Xe Graphics", "Intel(R) Corporation", NULL, 0, T_GPU, 1, "intel",
     "xe-lp", C_GPU, SDPA__LEVEL_ARCH, 16},
    {"Intel(R) UHD Graphics 620", "Intel(R) Corporation", NULL, 0, T_GPU, 1, "intel", "gen9",
     C_GPU, SDPA__LEVEL_ARCH, 16},
    /* Qualcomm */
    {"QUALCOMM Unknown", "QUALCOMM", NULL, 0, T_GPU, 1, "qualcomm", "", C_MOB,
     SDPA__LEVEL_VENDOR, 64},
    {"QUALCOMM Adreno(TM) 740", "QUALCOMM", NULL, 0, T_GPU, 1, "qualcomm", "adreno", C_MOB,
     SDPA__LEVEL_ARCH, 64},
    {"Adreno (TM) 540", NULL, NULL, 0x5143, T_GPU, -1, "qualcomm", "adreno", C_MOB,
     SDPA__LEVEL_DEVICE, 64},
    /* ARM: the Mali persona's answers (cl_persona.c: vendor ARM, CL_GLOBAL local
     * memory) and real names */
    {"cl-mali", "ARM", "ARM Platform", 0, T_GPU, 0, "arm", "", C_MOB, SDPA__LEVEL_VENDOR, 16},
    {"Mali-G710", "ARM", NULL, 0, T_GPU, 0, "arm", "mali-valhall", C_MOB, SDPA__LEVEL_ARCH, 16},
    {"Mali-G72 MP12", NULL, NULL, 0x13b5, T_GPU, -1, "arm", "mali-bifrost", C_MOB,
     SDPA__LEVEL_ARCH, 4},
    {"Mali-G52 MC2", "ARM", NULL, 0, T_GPU, 0, "arm", "mali-bifrost", C_MOB,
     SDPA__LEVEL_DEVICE, 8},
    {"Mali-T860", "ARM", NULL, 0, T_GPU, 0, "arm", "mali-midgard", C_MOB, SDPA__LEVEL_ARCH, 0},
    /* Apple through MoltenVK */
    {"Apple Paravirtual device", NULL, NULL, 0x106b, T_GPU, -1, "apple", "", C_GPU,
     SDPA__LEVEL_VENDOR, 32},
    {"Apple M1 Max", NULL, NULL, 0x106b, T_GPU, -1, "apple", "apple7", C_GPU, SDPA__LEVEL_ARCH,
     32},
    {"Apple M2", "Apple", NULL, 0, T_GPU, -1, "apple", "apple8", C_GPU, SDPA__LEVEL_ARCH, 32},
    {"Apple M3 Pro", NULL, NULL, 0x106b, T_GPU, -1, "apple", "apple9", C_GPU, SDPA__LEVEL_ARCH,
     32},
    /* unknown vendors: the class rows */
    {"cl-discrete-like", "libsdpa test persona", NULL, 0, T_GPU, 1, "unknown", "", C_GPU,
     SDPA__LEVEL_CLASS, 0},
    {"some GPU", "Nobody Inc.", NULL, 0, T_GPU, 0, "unknown", "", C_CPU, SDPA__LEVEL_CLASS, 0},
    {"an accelerator", "Nobody Inc.", NULL, 0, SDPA__DEVTYPE_OTHER, 1, "unknown", "", C_CPU,
     SDPA__LEVEL_CLASS, 0},
};
#define NCASES (int)(sizeof cases / sizeof cases[0])

static void resolve(const dev_case *c, sdpa__device_defaults *d)
{
    sdpa__device_probe p = {.vendor_id = c->vendor_id, .vendor = c->vendor, .name = c->name,
                            .platform = c->platform, .type = c->type, .local_mem = c->local};
    sdpa__device_defaults_of(&p, d);
}

START_TEST(devices_resolve_as_expected)
{
    for (int i = 0; i < NCASES; i++) {
        const dev_case *c = &cases[i];
        sdpa__device_defaults d;
        resolve(c, &d);
        ck_assert_msg(strcmp(d.vendor, c->want_vendor) == 0, "%s: vendor %s, want %s", c->name,
                      d.vendor, c->want_vendor);
        ck_assert_msg(strcmp(d.arch, c->want_arch) == 0, "%s: arch '%s', want '%s'", c->name,
                      d.arch, c->want_arch);
        ck_assert_msg((int)d.kclass == c->want_class, "%s: class %s, want %s", c->name,
                      sdpa__kclass_name(d.kclass),
                      sdpa__kclass_name((sdpa__kclass)c->want_class));
        ck_assert_msg(d.level == c->want_level, "%s: level %d, want %d", c->name, d.level,
                      c->want_level);
        if (c->want_subgroup >= 0)
            ck_assert_msg(d.subgroup == c->want_subgroup, "%s: subgroup %d, want %d", c->name,
                          d.subgroup, c->want_subgroup);
        ck_assert_msg(d.why && *d.why, "%s: the row gives its reason", c->name);
        ck_assert_msg(d.kclass == SDPA__KCLASS_CPU || d.wg_size >= 32,
                      "%s: GPU-style defaults have a work-group", c->name);
    }
}
END_TEST

/* Every row is the most specific match of some device above, except the CPU
 * class row, which the "cpu" vendor row always refines. */
START_TEST(every_row_reachable)
{
    int n = sdpa__device_table_rows();
    ck_assert_int_gt(n, 8);
    bool hit[256] = {false};
    ck_assert_int_le(n, 256);
    for (int i = 0; i < NCASES; i++) {
        sdpa__device_defaults d;
        resolve(&cases[i], &d);
        ck_assert_int_ge(d.row, 0);
        ck_assert_int_lt(d.row, n);
        hit[d.row] = true;
    }
    const char *vendors[] = {"cpu", "nvidia", "amd", "intel", "qualcomm", "arm", "apple"};
    for (size_t v = 0; v < sizeof vendors / sizeof vendors[0]; v++) {
        bool seen = false;
        for (int i = 0; i < n; i++) {
            int level;
            const char *vendor, *arch;
            ck_assert(sdpa__device_table_row(i, &level, &vendor, &arch));
            seen |= level == SDPA__LEVEL_VENDOR && strcmp(vendor, vendors[v]) == 0;
        }
        ck_assert_msg(seen, "vendor %s has a row", vendors[v]);
    }
    for (int i = 0; i < n; i++) {
        int level;
        const char *vendor, *arch;
        ck_assert(sdpa__device_table_row(i, &level, &vendor, &arch));
        if (level == SDPA__LEVEL_CLASS && i == 0) continue;
        ck_assert_msg(hit[i], "row %d (level %d, vendor %s, arch %s) is reached by no device",
                      i, level, vendor ? vendor : "-", arch ? arch : "-");
    }
    int level;
    const char *vendor, *arch;
    ck_assert(!sdpa__device_table_row(n, &level, &vendor, &arch));
}
END_TEST

/* device > architecture > vendor > class, field by field. */
START_TEST(most_specific_row_wins)
{
    sdpa__device_defaults d;
    /* Mali-G52: the device row's subgroup 8 over Bifrost's 4; class, stage
     * and work-group from the vendor row */
    sdpa__device_probe p = {.vendor = "ARM", .name = "Mali-G52 MC2", .type = T_GPU,
                            .local_mem = 0};
    sdpa__device_defaults_of(&p, &d);
    ck_assert_int_eq(d.subgroup, 8);
    ck_assert_int_eq(d.level, SDPA__LEVEL_DEVICE);
    ck_assert_int_eq(d.kclass, SDPA__KCLASS_MOBILE_GPU);
    ck_assert_int_eq(d.stage_kv, 0);
    ck_assert_int_eq(d.wg_size, 64);
    ck_assert_str_eq(d.arch, "mali-bifrost");
    /* Adreno 5xx: work-group 32 from the device row, staging from the vendor */
    p = (sdpa__device_probe){.vendor = "QUALCOMM", .name = "Adreno (TM) 540", .type = T_GPU,
                             .local_mem = 1};
    sdpa__device_defaults_of(&p, &d);
    ck_assert_int_eq(d.wg_size, 32);
    ck_assert_int_eq(d.stage_kv, 1);
    /* the vendor row decides the class over the class row: Mali's global
     * local memory would make an unknown GPU CPU-style */
    p = (sdpa__device_probe){.vendor = "ARM", .name = "cl-mali", .type = T_GPU, .local_mem = 0};
    sdpa__device_defaults_of(&p, &d);
    ck_assert_int_eq(d.kclass, SDPA__KCLASS_MOBILE_GPU);
    p.vendor = "Nobody";
    sdpa__device_defaults_of(&p, &d);
    ck_assert_int_eq(d.kclass, SDPA__KCLASS_CPU);
    /* PoCL: work-group 8 from its architecture row, class from the cpu vendor
     * row, never Intel's GPU row although PoCL's vendor string is Intel's */
    p = (sdpa__device_probe){.vendor = "Intel(R) Corporation", .name = "pthread-haswell-x",
                             .platform = "Portable Computing Language", .type = T_CPU};
    sdpa__device_defaults_of(&p, &d);
    ck_assert_str_eq(d.vendor, "cpu");
    ck_assert_str_eq(d.arch, "pocl");
    ck_assert_int_eq(d.wg_size, 8);
    /* whole words: "A10" is not "A100", "RTX 40*" runs into "RTX 4090" */
    p = (sdpa__device_probe){.vendor = "NVIDIA", .name = "NVIDIA A100", .type = T_GPU};
    sdpa__device_defaults_of(&p, &d);
    ck_assert_str_eq(d.arch, "sm_80");
    p.name = "NVIDIA A10";
    sdpa__device_defaults_of(&p, &d);
    ck_assert_str_eq(d.arch, "sm_86");
}
END_TEST

/* Nothing known, or NULL strings: the class rows, never a crash. */
START_TEST(unknown_devices_fall_back)
{
    sdpa__device_defaults d;
    sdpa__device_probe p;
    memset(&p, 0, sizeof p);
    sdpa__device_defaults_of(&p, &d);
    ck_assert_str_eq(d.vendor, "unknown");
    ck_assert_str_eq(d.arch, "");
    ck_assert_int_eq(d.kclass, SDPA__KCLASS_CPU);
    ck_assert_int_eq(d.level, SDPA__LEVEL_CLASS);
    p.type = T_GPU;
    p.local_mem = -1;
    sdpa__device_defaults_of(&p, &d);
    ck_assert_int_eq(d.kclass, SDPA__KCLASS_GPU);
    ck_assert_int_eq(d.stage_kv, 1);
    p.vendor = "0x10de"; /* a Vulkan vendor string of an unnamed vendor id */
    sdpa__device_defaults_of(&p, &d);
    ck_assert_str_eq(d.vendor, "nvidia");
    p.vendor = "0xzz";
    sdpa__device_defaults_of(&p, &d);
    ck_assert_str_eq(d.vendor, "unknown");
    ck_assert_str_eq(sdpa__kclass_name(SDPA__KCLASS_MOBILE_GPU), "mobile-gpu");
}
END_TEST

START_TEST(families)
{
    static const struct { const char *backend, *vendor, *name, *want; } fams[] = {
        /* PoCL: the ISA level of its target CPU, any CPU vendor and model */
        {"opencl", "GenuineIntel", "pthread-skylake-avx512-Intel(R) Xeon(R) Processor",
         "opencl/cpu/pocl-x86-64-avx512"},
        {"opencl", "AuthenticAMD", "pthread-znver4-AMD EPYC 9654 96-Core Processor",
         "opencl/cpu/pocl-x86-64-avx512"},
        {"opencl", "AuthenticAMD", "cpu-znver3-AMD EPYC 7763", "opencl/cpu/pocl-x86-64-avx2"},
        {"opencl", "GenuineIntel", "pthread-skylake-Intel(R) Core",
         "opencl/cpu/pocl-x86-64-avx2"},
        {"opencl", "GenuineIntel", "pthread-futurecpu-X", NULL},
        /* lavapipe: its vector width */
        {"vulkan", "Mesa", "llvmpipe (LLVM 15.0.6, 256 bits)", "vulkan/cpu/llvmpipe-256"},
        {"vulkan", "Mesa", "llvmpipe (LLVM 17.0.1, 128 bits)", "vulkan/cpu/llvmpipe-128"},
        /* GPUs: compute capability, gfx target or RADV chip, Intel device IP */
        {"vulkan", "NVIDIA", "NVIDIA GeForce RTX 4090", "vulkan/nvidia/sm_89"},
        {"opencl", "Advanced Micro Devices, Inc.", "gfx1030", "opencl/amd/gfx1030"},
        {"vulkan", "AMD", "AMD Radeon RX 6800 XT (RADV NAVI21)", "vulkan/amd/navi21"},
        {"opencl", "Intel(R) Corporation", "Intel(R) Iris(R) Xe Graphics", "opencl/intel/xe-lp"},
        /* unknown vendor or architecture: no family */
        {"opencl", "Nobody", "Thing", NULL},
        {"opencl", "NVIDIA Corporation", "NVIDIA Graphics Device", NULL},
        {"opencl", "NVIDIA", NULL, NULL},
        /* the backend part is the backend name as it is, never lowercased
         * (a record's family must begin with its backend, profile.c): a
         * name that cannot be a family part gives none */
        {"cpZ", "GenuineIntel", "llvmpipe (LLVM 15.0.6, 256 bits)", NULL},
        {"a/b", "Mesa", "llvmpipe (LLVM 15.0.6, 256 bits)", NULL},
        {"cpu", "GenuineIntel", "llvmpipe (LLVM 15.0.6, 256 bits)", "cpu/cpu/llvmpipe-256"},
    };
    for (size_t i = 0; i < sizeof fams / sizeof fams[0]; i++) {
        char f[64] = "junk";
        bool got = sdpa__device_family(fams[i].backend, fams[i].vendor, fams[i].name, f,
                                       sizeof f);
        ck_assert_msg(got == (fams[i].want != NULL), "%s: family %s", fams[i].name, f);
        ck_assert_str_eq(f, fams[i].want ? fams[i].want : "");
    }
    char small[8];
    ck_assert(!sdpa__device_family("opencl", "NVIDIA", "NVIDIA GeForce RTX 4090", small,
                                   sizeof small));
}
END_TEST

START_TEST(family_syntax)
{
    ck_assert(sdpa__device_family_valid("opencl/cpu/pocl-x86-64-avx512"));
    ck_assert(sdpa__device_family_valid("a/b/c"));
    const char *bad[] = {"", "a/b", "a/b/c/d", "a//c", "/a/b", "a/b/", "A/b/c", "a/b c/d",
                         "a/b/\xc3\xa9", "a/b/c\n", NULL};
    for (int i = 0; bad[i]; i++)
        ck_assert_msg(!sdpa__device_family_valid(bad[i]), "'%s' refused", bad[i]);
    ck_assert(!sdpa__device_family_valid(NULL));
    char longkey[80];
    memset(longkey, 'a', sizeof longkey - 1);
    longkey[sizeof longkey - 1] = '\0';
    longkey[1] = longkey[3] = '/';
    ck_assert(!sdpa__device_family_valid(longkey));
}
END_TEST

static Suite *device_table_suite(void)
{
    Suite *s = suite_create("device_table");
    TCase *t = tcase_create("table");
    tcase_add_test(t, devices_resolve_as_expected);
    tcase_add_test(t, every_row_reachable);
    tcase_add_test(t, most_specific_row_wins);
    tcase_add_test(t, unknown_devices_fall_back);
    tcase_add_test(t, families);
    tcase_add_test(t, family_syntax);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return trun_suite(device_table_suite());
}
