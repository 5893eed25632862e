/*
 * shipped_info.c — sdpa_shipped_profiles_get_info: the shipped-profile folder
 * (shipped_dir.c) and what it holds for this machine: its profile files, their
 * valid records, and how many of those belong to a device the compiled-in
 * backends list now (and of those, how many are stale). sdpa-info prints it.
 *
 * Reads files through sdpa__profile_read with no context, so a damaged file
 * is counted as far as it parses and warned about later by the plans that
 * read it, not here. Never fails except on a NULL argument.
 */
#include "tune.h"

#include <dirent.h>
#include <stdio.h>
#include <sys/stat.h>

#define MAX_KEYS 64

/* Device keys of every device every compiled-in backend lists now. */
static int machine_keys(sdpa__device_key *keys, int max)
{
    int n = 0;
    for (int kind = SDPA_BACKEND_REFERENCE; kind <= SDPA_BACKEND_VULKAN; kind++) {
        const sdpa__backend *be = sdpa__backend_get((sdpa_backend_kind)kind);
        int count = 0;
        if (!be || sdpa_device_count(be->kind, &count) != SDPA_OK) continue;
        for (int i = 0; i < count && n < max; i++) {
            sdpa_device_info info;
            memset(&info, 0, sizeof info);
            info.struct_size = sizeof info;
            if (sdpa_device_get_info(be->kind, i, &info) == SDPA_OK)
                sdpa__device_key_from_info(be, &info, &keys[n++]);
        }
    }
    return n;
}

/* A profile file: *.jsonl, not hidden, not the peak cache. */
static bool is_profile_file(const char *name)
{
    size_t n = strlen(name);
    return name[0] != '.' && n > 6 && strcmp(name + n - 6, ".jsonl") == 0 &&
           strcmp(name, SDPA__PEAK_FILE) != 0;
}

/* Adds one file's records to info. */
static void count_file(const char *path, const sdpa__device_key *keys, int nkeys,
                       sdpa_shipped_profiles_info *info)
{
    sdpa__profile_file f;
    if (sdpa__profile_read(NULL, path, &f) != SDPA_OK) return;
    info->files++;
    for (size_t r = 0; r < f.count; r++) {
        const sdpa__device_key *dev = &f.records[r].dev;
        info->records++;
        for (int k = 0; k < nkeys; k++) {
            if (!sdpa__device_key_equal(dev, &keys[k])) continue;
            info->matching++;
            info->stale += strcmp(dev->driver, keys[k].driver) != 0 ||
                           strcmp(dev->source_hash, keys[k].source_hash) != 0;
            break;
        }
    }
    sdpa__profile_file_free(&f);
}

static void count_dir(DIR *d, sdpa_shipped_profiles_info *info);

sdpa_status sdpa_shipped_profiles_get_info(sdpa_shipped_profiles_info *info)
{
    if (!info) return SDPA_ERR_NULL;
    if (sdpa__struct_size(info) < SDPA_SHIPPED_PROFILES_INFO_SIZE_V1) return SDPA_ERR_INVALID_ARG;
    sdpa_shipped_profiles_info *out = info, full;
    info = &full;
    memset(info, 0, sizeof *info);
    info->struct_size = sizeof *info;
    const char *how = NULL;
    sdpa__strlcpy(info->dir, sdpa__shipped_profile_dir(&how), sizeof info->dir);
    sdpa__strlcpy(info->found_by, how, sizeof info->found_by);
    DIR *d = opendir(info->dir);
    if (d) {
        info->exists = 1;
        count_dir(d, info);
        closedir(d);
    }
    sdpa__struct_out(out, info, sizeof *info);
    return SDPA_OK;
}

/* Counts the profile files of the open folder d (info->dir) into *info. */
static void count_dir(DIR *d, sdpa_shipped_profiles_info *info)
{
    sdpa__device_key keys[MAX_KEYS];
    int nkeys = machine_keys(keys, MAX_KEYS);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char path[4400];
        struct stat st;
        if (!is_profile_file(e->d_name)) continue;
        int n = snprintf(path, sizeof path, "%s/%s", info->dir, e->d_name);
        if (n < 0 || (size_t)n >= sizeof path) continue;
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) continue;
        count_file(path, keys, nkeys, info);
    }
}
