/*
 * shipped_dir.c — where the profiles shipped with libsdpa are: data/profiles/
 * in the source tree, <datadir>/sdpa/profiles once installed. Found from the
 * location of the library itself, not from the configured prefix, so that a
 * build tree and a moved install both find their own. Compiled alone into a
 * small static library (src/tune/meson.build) because it is the one file that
 * carries the build's paths: changing the prefix rebuilds only this file.
 *
 * Order (docs/tuning.md, sdpa_shipped_profiles_get_info in sdpa.h):
 *  1. $SDPA_SHIPPED_PROFILE_DIR when set and not empty (read at every call);
 *  2. the file that holds this code (sdpa__os_module_folder on one of its
 *     functions: dladdr and realpath; GetModuleHandleExW and
 *     GetModuleFileNameW on Windows) lies directly in the Meson build
 *     directory (SDPA_BUILD_ROOT, where libsdpa.so is linked): the library
 *     runs uninstalled, from its build tree, so the source tree's
 *     data/profiles (SDPA_SOURCE_PROFILES);
 *  3. <that file's folder>/SDPA_PROFILES_FROM_LIBDIR (for example
 *     ../share/sdpa/profiles; from bindir on Windows, where the DLL is
 *     installed) when it is a folder: an install, wherever it was moved since;
 *  4. the configured <prefix>/<datadir>/sdpa/profiles (SDPA_PREFIX_PROFILES):
 *     the library's file unknown, a static link into a program that lives
 *     elsewhere, or an absolute libdir (bindir) or datadir.
 * Steps 2-4 are resolved once per process. Never fails, never logs.
 */
#include "tune.h"

#include "../core/platform.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#ifndef SDPA_PREFIX_PROFILES
#define SDPA_PREFIX_PROFILES "/usr/local/share/sdpa/profiles"
#endif

static pthread_once_t once = PTHREAD_ONCE_INIT;
static char found_dir[PATH_MAX];
static const char *found_how = "configured prefix";

static bool is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The resolved folder holding the file that holds this code (libsdpa.so,
 * libsdpa-0.dll, or a program it is linked into statically); false when it
 * cannot be known. */
static bool own_folder(char *out)
{
    return sdpa__os_module_folder((const void *)(uintptr_t)&own_folder, out, PATH_MAX);
}

static void resolve(void)
{
    sdpa__strlcpy(found_dir, SDPA_PREFIX_PROFILES, sizeof found_dir);
    char here[PATH_MAX];
    if (!own_folder(here)) return;
#if defined(SDPA_BUILD_ROOT) && defined(SDPA_SOURCE_PROFILES)
    char build[PATH_MAX];
    if (sdpa__os_realpath(SDPA_BUILD_ROOT, build) && strcmp(here, build) == 0) {
        sdpa__strlcpy(found_dir, SDPA_SOURCE_PROFILES, sizeof found_dir);
        found_how = "build tree";
        return;
    }
#endif
#ifdef SDPA_PROFILES_FROM_LIBDIR
    char rel[PATH_MAX + 64], abs[PATH_MAX];
    int n = snprintf(rel, sizeof rel, "%s/%s", strcmp(here, "/") == 0 ? "" : here,
                     SDPA_PROFILES_FROM_LIBDIR);
    if (n > 0 && (size_t)n < sizeof rel && sdpa__os_realpath(rel, abs) && is_dir(abs)) {
        sdpa__strlcpy(found_dir, abs, sizeof found_dir);
        found_how = "library location";
    }
#endif
}

const char *sdpa__shipped_profile_dir(const char **how)
{
    const char *env = getenv("SDPA_SHIPPED_PROFILE_DIR");
    if (env && *env) {
        if (how) *how = "SDPA_SHIPPED_PROFILE_DIR";
        return env;
    }
    pthread_once(&once, resolve);
    if (how) *how = found_how;
    return found_dir;
}
