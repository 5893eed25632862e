/*
 * test_shipped.c — the shipped profiles (data/profiles/) as the library finds
 * them when it runs from its build tree, and sdpa_shipped_profiles_get_info.
 *
 * Unlike the other suites this one links the shared libsdpa from the build
 * directory (tests/meson.build), as the tools and examples do, because where
 * that file lies is what decides the folder (src/tune/shipped_dir.c). Checks:
 * with SDPA_SHIPPED_PROFILE_DIR unset the folder is the source tree's
 * data/profiles ("build tree") with every file and line of it counted, and a
 * plan on each backend whose device has a shipped file takes its tile from
 * that file's first record ("shipped profile"); with the variable set, the
 * counts of records, matching and stale records follow a folder made here
 * (one record tuned on the cpu backend, a copy for another device, a copy
 * from another driver); a shipped record made on another device of this
 * machine's OpenCL device's architecture family is used, and says so
 * (issue 17). The installed, moved case is scripts/install-check.sh.
 * Runs in well under a minute (a tiny cpu tune; one plan per device backend).
 */
#include "testutil.h"

#include <cJSON.h>
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef TEST_SOURCE_PROFILES
#error "tests/meson.build passes TEST_SOURCE_PROFILES (the source tree's data/profiles)"
#endif

static sdpa_shipped_profiles_info shipped_info(void)
{
    sdpa_shipped_profiles_info s = {.struct_size = sizeof s};
    ck_assert_int_eq(sdpa_shipped_profiles_get_info(&s), SDPA_OK);
    ck_assert_uint_eq(s.struct_size, sizeof s);
    return s;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    ck_assert_ptr_nonnull(b);
    b[fread(b, 1, (size_t)n, f)] = '\0';
    fclose(f);
    return b;
}

static int count_lines(const char *text)
{
    int n = 0;
    for (const char *p = text; *p; p++) n += *p == '\n';
    return n;
}

/* ---- the build tree ----------------------------------------------------------- */

START_TEST(build_tree_finds_source_profiles)
{
    unsetenv("SDPA_SHIPPED_PROFILE_DIR");
    sdpa_shipped_profiles_info s = shipped_info();
    char got[PATH_MAX], want[PATH_MAX];
    ck_assert_ptr_nonnull(realpath(TEST_SOURCE_PROFILES, want));
    ck_assert_msg(realpath(s.dir, got) != NULL, "shipped dir '%s' (%s) does not exist", s.dir,
                  s.found_by);
    ck_assert_str_eq(got, want);
    ck_assert_str_eq(s.found_by, "build tree");
    ck_assert_int_eq(s.exists, 1);

    /* Every *.jsonl file and every line of them is a valid record. */
    DIR *d = opendir(want);
    ck_assert_ptr_nonnull(d);
    int files = 0, lines = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if (n <= 6 || strcmp(e->d_name + n - 6, ".jsonl") != 0) continue;
        char path[PATH_MAX + 300];
        snprintf(path, sizeof path, "%s/%s", want, e->d_name);
        char *text = slurp(path);
        ck_assert_ptr_nonnull(text);
        lines += count_lines(text);
        free(text);
        files++;
    }
    closedir(d);
    ck_assert_int_ge(files, 1);
    ck_assert_int_eq(s.files, files);
    ck_assert_int_eq(s.records, lines);
    ck_assert_int_le(s.matching, s.records);
    ck_assert_int_le(s.stale, s.matching);
}
END_TEST

/* Whether record r is for device 0 of kind (the device of ctx): the same
 * file name can hold another device's records (other compute units). */
static bool record_is_for(const cJSON *r, sdpa_backend_kind kind)
{
    sdpa_device_info d;
    memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
    if (sdpa_device_get_info(kind, 0, &d) != SDPA_OK) return false;
    return strcmp(cJSON_GetObjectItem(r, "device")->valuestring, d.name) == 0 &&
           strcmp(cJSON_GetObjectItem(r, "vendor")->valuestring, d.vendor) == 0 &&
           cJSON_GetObjectItem(r, "compute_units")->valueint == d.compute_units;
}

/* A plan on ctx for the bucket of record r; returns its sdpa_plan_info.source
 * in source (and its config in config when not NULL). */
static const char *plan_source_for_record(sdpa_context *ctx, const cJSON *r, const char *what,
                                          char *source, size_t size, char *config,
                                          size_t config_size)
{
    const char *kind = cJSON_GetObjectItem(r, "kind")->valuestring;
    const char *mask = cJSON_GetObjectItem(r, "mask")->valuestring;
    const char *dtname = cJSON_GetObjectItem(r, "dtype")->valuestring;
    int64_t D = cJSON_GetObjectItem(r, "d")->valueint;
    int64_t Dv = cJSON_GetObjectItem(r, "dv")->valueint;
    int64_t Sq = 1ll << cJSON_GetObjectItem(r, "sq_log2")->valueint;
    int64_t Skv = 1ll << cJSON_GetObjectItem(r, "skv_log2")->valueint;
    int64_t H = 1ll << cJSON_GetObjectItem(r, "bh_log2")->valueint;
    sdpa_dtype dt = strcmp(dtname, "f16") == 0    ? SDPA_DTYPE_F16
                    : strcmp(dtname, "bf16") == 0 ? SDPA_DTYPE_BF16
                                                  : SDPA_DTYPE_F32;
    sdpa_attention_desc desc;
    sdpa_attention_desc_init(&desc);
    if (strcmp(mask, "causal") == 0) {
        sdpa_attention_desc_set_causal(&desc, SDPA_DIAGONAL_BOTTOM_RIGHT);
    } else if (strcmp(mask, "band") == 0) {
        desc.window_left = 16;
        desc.window_right = 16;
    }
    desc.tensors.q = sdpa_tensor_host(NULL, dt, 1, H, Sq, D);
    desc.tensors.k = sdpa_tensor_host(NULL, dt, 1, H, Skv, D);
    desc.tensors.v = sdpa_tensor_host(NULL, dt, 1, H, Skv, Dv);
    desc.tensors.out = sdpa_tensor_host(NULL, dt, 1, H, Sq, Dv);
    if (strcmp(kind, "backward") == 0)
        desc.tensors.lse = sdpa_tensor_host(NULL, SDPA_DTYPE_F32, 1, H, Sq, 1);
    sdpa_plan_options po;
    sdpa_plan_options_init(&po);
    po.flags = strcmp(kind, "backward") == 0 ? SDPA_PLAN_BACKWARD : 0;
    sdpa_plan *plan = NULL;
    sdpa_status st = sdpa_plan_create(ctx, &desc, &po, &plan);
    ck_assert_msg(st == SDPA_OK, "plan for the record (%s): %s", what, sdpa_status_name(st));
    sdpa_plan_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    ck_assert_int_eq(sdpa_plan_get_info(plan, &info), SDPA_OK);
    sdpa_plan_destroy(plan);
    snprintf(source, size, "%s", info.source);
    if (config) snprintf(config, config_size, "%s", info.config);
    return source;
}

/* The first record of the shipped file of ctx's device (device 0 of kind)
 * as JSON (the caller deletes it), or NULL when the source tree ships no
 * such file; *mine says whether the record is this device's own. */
static cJSON *first_shipped_record(sdpa_context *ctx, sdpa_backend_kind backend, bool *mine,
                                   char *path, size_t size)
{
    const char *prof = sdpa_context_profile_path(ctx);
    const char *base = strrchr(prof, '/');
    snprintf(path, size, "%s/%s", TEST_SOURCE_PROFILES, base ? base + 1 : prof);
    char *text = slurp(path);
    if (!text) return NULL;
    char *nl = strchr(text, '\n');
    if (nl) *nl = '\0';
    cJSON *r = cJSON_Parse(text);
    free(text);
    ck_assert_ptr_nonnull(r);
    *mine = record_is_for(r, backend);
    return r;
}

/* A plan for the shape of the first record of the shipped file of ctx's
 * device (device 0 of kind); returns its sdpa_plan_info.source, or NULL when
 * the source tree ships no record for this device. */
static const char *plan_source_for_shipped_record(sdpa_context *ctx, sdpa_backend_kind backend,
                                                  char *source, size_t size)
{
    char path[PATH_MAX + 300];
    bool mine = false;
    cJSON *r = first_shipped_record(ctx, backend, &mine, path, sizeof path);
    if (!r) return NULL;
    const char *got = mine ? plan_source_for_record(ctx, r, path, source, size, NULL, 0) : NULL;
    cJSON_Delete(r);
    return got;
}

START_TEST(build_tree_plans_use_shipped_records)
{
    unsetenv("SDPA_SHIPPED_PROFILE_DIR");
    unsetenv("SDPA_DEVICE"); /* device 0 of each backend */
    char *empty = tmkdtemp("sdpa-test-shipped");
    static const sdpa_backend_kind kinds[] = {SDPA_BACKEND_CPU, SDPA_BACKEND_OPENCL,
                                              SDPA_BACKEND_VULKAN};
    int planned = 0;
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        sdpa_context_options o;
        sdpa_context_options_init(&o);
        o.backend = kinds[k];
        o.profile_dir = empty; /* no user record: only the shipped one can match */
        o.log_level = SDPA_LOG_ERROR;
        sdpa_context *ctx = NULL;
        if (sdpa_context_create(&o, &ctx) != SDPA_OK) continue;
        char source[64];
        if (plan_source_for_shipped_record(ctx, kinds[k], source, sizeof source)) {
            ck_assert_msg(strcmp(source, "shipped profile") == 0, "%s on %s: source '%s'",
                          sdpa_backend_name(kinds[k]), sdpa_context_device_name(ctx), source);
            planned++;
        }
        sdpa_context_destroy(ctx);
    }
    sdpa_shipped_profiles_info s = shipped_info();
    /* Each device planned here has at least one matching record. */
    ck_assert_int_ge(s.matching, planned);
    fprintf(stderr, "shipped: %d backend(s) here have a shipped record, %d matching record(s)\n",
            planned, s.matching);
    rmdir(empty);
    free(empty);
}
END_TEST

/* ---- SDPA_SHIPPED_PROFILE_DIR and the counts ------------------------------------- */

/* Replaces the value of "key":"..." in line (in place, bounded by cap). */
static void set_field(char *line, size_t cap, const char *key, const char *value)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":\"", key);
    char *v = strstr(line, pat);
    ck_assert_ptr_nonnull(v);
    v += strlen(pat);
    char *end = strchr(v, '"');
    ck_assert_ptr_nonnull(end);
    char rest[8192];
    snprintf(rest, sizeof rest, "%s", end);
    ck_assert_uint_lt((size_t)(v - line) + strlen(value) + strlen(rest), cap);
    sprintf(v, "%s%s", value, rest);
}

START_TEST(override_folder_counts)
{
    char *dir = tmkdtemp("sdpa-test-shipped");
    setenv("SDPA_SHIPPED_PROFILE_DIR", dir, 1);
    sdpa_shipped_profiles_info s = shipped_info();
    ck_assert_str_eq(s.dir, dir);
    ck_assert_str_eq(s.found_by, "SDPA_SHIPPED_PROFILE_DIR");
    ck_assert_int_eq(s.exists, 1);
    ck_assert_int_eq(s.files, 0);
    ck_assert_int_eq(s.records, 0);

    /* One record for this machine's cpu device, tuned into the folder. */
    sdpa_context_options o;
    sdpa_context_options_init(&o);
    o.backend = sdpa_backend_compiled(SDPA_BACKEND_CPU) ? SDPA_BACKEND_CPU
                                                        : SDPA_BACKEND_REFERENCE;
    o.profile_dir = dir;
    o.log_level = SDPA_LOG_ERROR;
    o.threads = 1;
    sdpa_context *ctx = NULL;
    ck_assert_int_eq(sdpa_context_create(&o, &ctx), SDPA_OK);
    sdpa_attention_desc desc;
    sdpa_attention_desc_init(&desc);
    desc.tensors.q = sdpa_tensor_host(NULL, SDPA_DTYPE_F32, 1, 2, 16, 16);
    desc.tensors.k = sdpa_tensor_host(NULL, SDPA_DTYPE_F32, 1, 2, 16, 16);
    desc.tensors.v = sdpa_tensor_host(NULL, SDPA_DTYPE_F32, 1, 2, 16, 16);
    desc.tensors.out = sdpa_tensor_host(NULL, SDPA_DTYPE_F32, 1, 2, 16, 16);
    sdpa_tune_options to;
    sdpa_tune_options_init(&to);
    to.budget_s = 1;
    to.repeats = 1;
    sdpa_tune_result tr;
    memset(&tr, 0, sizeof tr);
    tr.struct_size = sizeof tr;
    ck_assert_int_eq(sdpa_tune(ctx, &desc, &to, &tr), SDPA_OK);
    char path[4200];
    snprintf(path, sizeof path, "%s", sdpa_context_profile_path(ctx));
    sdpa_context_destroy(ctx);
    s = shipped_info();
    ck_assert_int_eq(s.files, 1);
    ck_assert_int_eq(s.records, 1);
    ck_assert_int_eq(s.matching, 1);
    ck_assert_int_eq(s.stale, 0);

    /* A copy for a device this machine does not have, and one made with
     * another driver (still this device: matching, and stale). */
    char *text = slurp(path);
    ck_assert_ptr_nonnull(text);
    ck_assert_int_eq(count_lines(text), 1);
    char other[8192], older[8192];
    snprintf(other, sizeof other, "%s", text);
    snprintf(older, sizeof older, "%s", text);
    free(text);
    set_field(other, sizeof other, "device", "no such device");
    set_field(older, sizeof older, "driver", "an older driver");
    FILE *f = fopen(path, "a");
    ck_assert_ptr_nonnull(f);
    fputs(other, f);
    fclose(f);
    char path2[4300];
    snprintf(path2, sizeof path2, "%s/second.jsonl", dir);
    f = fopen(path2, "w");
    ck_assert_ptr_nonnull(f);
    fputs(older, f);
    fclose(f);
    s = shipped_info();
    ck_assert_int_eq(s.files, 2);
    ck_assert_int_eq(s.records, 3);
    ck_assert_int_eq(s.matching, 2);
    ck_assert_int_eq(s.stale, 1);

    char cmd[4400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
    s = shipped_info();
    ck_assert_int_eq(s.exists, 0);
    ck_assert_int_eq(s.records, 0);
    ck_assert_int_eq(sdpa_shipped_profiles_get_info(NULL), SDPA_ERR_NULL);
    free(dir);
}
END_TEST

/* ---- profiles that travel (issue 17) ------------------------------------------------ */

typedef struct logtext {
    char text[16384];
} logtext;

static void log_text(void *user, sdpa_log_level level, const char *msg)
{
    (void)level;
    logtext *lt = user;
    size_t n = strlen(lt->text);
    snprintf(lt->text + n, sizeof lt->text - n, "%s\n", msg);
}

/* The profile family sdpa_device_info.details names for device 0 of kind
 * ("profile family <key>"); false when it names none. */
static bool device_family(sdpa_backend_kind kind, sdpa_device_info *d, char *out, size_t size)
{
    memset(d, 0, sizeof *d);
    d->struct_size = sizeof *d;
    if (sdpa_device_get_info(kind, 0, d) != SDPA_OK) return false;
    const char *f = strstr(d->details, "profile family ");
    if (!f) return false;
    f += strlen("profile family ");
    size_t n = strcspn(f, "; ");
    ck_assert_uint_lt(n, size);
    memcpy(out, f, n);
    out[n] = '\0';
    return n > 0;
}

/* Writes the record r as the only line of path. */
static void write_record(const char *path, const cJSON *r)
{
    char *line = cJSON_PrintUnformatted(r);
    ck_assert_ptr_nonnull(line);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "%s\n", line);
    fclose(f);
    cJSON_free(line);
}

static void set_str(cJSON *r, const char *key, const char *value)
{
    ck_assert(cJSON_ReplaceItemInObjectCaseSensitive(r, key, cJSON_CreateString(value)));
}

/* The shipped PoCL record, rewritten for another device of this machine's
 * OpenCL device's family (its name with other compute units: not this
 * device, same family), is used by a plan here, which says so in its source
 * and log; rewritten for a CPU of another family, it is not. The record's
 * own "family" (sdpa-tune writes it) is dropped, so the family the lookup
 * uses is the one the library derives from the rewritten strings. */
START_TEST(shipped_record_travels_to_family)
{
    unsetenv("SDPA_DEVICE");
    sdpa_device_info d;
    char fam[64];
    if (!device_family(SDPA_BACKEND_OPENCL, &d, fam, sizeof fam)) {
        fprintf(stderr, "shipped: SKIPPED family fallback: no OpenCL device with a profile "
                        "family here (%s)\n", d.name[0] ? d.name : "no device");
        return;
    }
    char *empty = tmkdtemp("sdpa-test-shipped"), *dir = tmkdtemp("sdpa-test-shipped");
    char src[PATH_MAX + 300], path[PATH_MAX + 300];
    snprintf(src, sizeof src, "%s/%s", TEST_SOURCE_PROFILES,
             "opencl-pthread_skylake_avx512_intel_r_xeon_r_processor.jsonl");
    char *text = slurp(src);
    ck_assert_ptr_nonnull(text);
    char *nl = strchr(text, '\n');
    if (nl) *nl = '\0';
    cJSON *r = cJSON_Parse(text);
    free(text);
    ck_assert_ptr_nonnull(r);
    cJSON_DeleteItemFromObjectCaseSensitive(r, "family"); /* the library derives it */
    set_str(r, "device", d.name);
    set_str(r, "vendor", d.vendor);
    set_str(r, "driver", d.driver);
    cJSON_ReplaceItemInObjectCaseSensitive(r, "compute_units",
                                           cJSON_CreateNumber(d.compute_units + 7));
    int q_tile = cJSON_GetObjectItem(cJSON_GetObjectItem(r, "tile"), "q_tile")->valueint;
    snprintf(path, sizeof path, "%s/opencl-a_sibling_device.jsonl", dir);
    write_record(path, r);
    setenv("SDPA_SHIPPED_PROFILE_DIR", dir, 1);

    logtext lt = {{0}};
    sdpa_context_options o;
    sdpa_context_options_init(&o);
    o.backend = SDPA_BACKEND_OPENCL;
    o.profile_dir = empty; /* no user record */
    o.log_level = SDPA_LOG_INFO;
    o.log_fn = log_text;
    o.log_user = &lt;
    sdpa_context *ctx = NULL;
    ck_assert_int_eq(sdpa_context_create(&o, &ctx), SDPA_OK);
    char source[64], config[256], want[128], q[32];
    plan_source_for_record(ctx, r, path, source, sizeof source, config, sizeof config);
    snprintf(want, sizeof want, "shipped profile (family %s)", fam);
    ck_assert_msg(strcmp(source, want) == 0, "source '%s', want '%s'", source, want);
    snprintf(q, sizeof q, "q_tile=%d ", q_tile);
    ck_assert_msg(strstr(config, q), "config '%s' has the record's %s", config, q);
    char line[600];
    snprintf(line, sizeof line, "using the record of '%s' (same family %s)", d.name, fam);
    ck_assert_msg(strstr(lt.text, line), "log names the record's device: %s", lt.text);

    /* a CPU of another family: not used */
    set_str(r, "device", strstr(fam, "avx512") ? "pthread-haswell-Another CPU"
                                               : "pthread-skylake-avx512-Another CPU");
    write_record(path, r);
    plan_source_for_record(ctx, r, path, source, sizeof source, NULL, 0);
    ck_assert_str_eq(source, "default");
    sdpa_context_destroy(ctx);
    cJSON_Delete(r);
    unsetenv("SDPA_SHIPPED_PROFILE_DIR");
    char cmd[PATH_MAX + 64];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", dir, empty);
    ck_assert_int_eq(system(cmd), 0);
    free(dir);
    free(empty);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("shipped");
    TCase *t = tcase_create("shipped");
    tcase_set_timeout(t, 300);
    tcase_add_test(t, build_tree_finds_source_profiles);
    tcase_add_test(t, build_tree_plans_use_shipped_records);
    tcase_add_test(t, override_folder_counts);
    tcase_add_test(t, shipped_record_travels_to_family);
    suite_add_tcase(s, t);
    return s;
}

int main(void) { return trun_suite(suite()); }
