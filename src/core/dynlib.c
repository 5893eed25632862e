/*
 * dynlib.c — see dynlib.h. POSIX dlopen/dlsym; the only file that calls
 * them for the backends' libraries.
 */
#include "dynlib.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

/* The platform calls: open a library by name (NULL + reason on failure) and
 * look up one symbol (NULL when absent). */
static void *lib_open(const char *soname, const char **reason)
{
    void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        *reason = e ? e : "unknown reason";
    }
    return h;
}

static sdpa__lib_fn lib_sym(void *lib, const char *symbol)
{
    void *p = dlsym(lib, symbol);
    sdpa__lib_fn f = NULL;
    /* object pointer to function pointer: POSIX guarantees it is the same */
    memcpy(&f, &p, sizeof f < sizeof p ? sizeof f : sizeof p);
    return f;
}

bool sdpa__lib_load(const char *backend, const char *soname, const char *hint,
                    const char *const *names, sdpa__lib_fn *fns, size_t n,
                    char *why, size_t why_size)
{
    const char *reason = NULL;
    void *h = lib_open(soname, &reason);
    if (!h) {
        snprintf(why, why_size, "%s: cannot load %s (%s); %s", backend, soname, reason, hint);
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        fns[i] = lib_sym(h, names[i]);
        if (!fns[i]) {
            snprintf(why, why_size, "%s: %s has no %s; %s", backend, soname, names[i], hint);
            /* nothing resolved is used: keep the library open, harmlessly */
            return false;
        }
    }
    return true;
}
