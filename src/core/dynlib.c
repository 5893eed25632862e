/*
 * dynlib.c — see dynlib.h. Opens through platform.h (dlopen/dlsym on POSIX,
 * LoadLibrary/GetProcAddress on Windows); the only file that opens the
 * backends' libraries.
 */
#include "dynlib.h"

#include "platform.h"

#include <stdio.h>
#include <string.h>

bool sdpa__lib_load(const char *backend, const char *soname, const char *hint,
                    const char *const *names, sdpa__lib_fn *fns, size_t n,
                    char *why, size_t why_size)
{
    const char *reason = NULL;
    void *h = sdpa__os_lib_open(soname, &reason);
    if (!h) {
        snprintf(why, why_size, "%s: cannot load %s (%s); %s", backend, soname, reason, hint);
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        fns[i] = sdpa__os_lib_sym(h, names[i]);
        if (!fns[i]) {
            snprintf(why, why_size, "%s: %s has no %s; %s", backend, soname, names[i], hint);
            /* nothing resolved is used: keep the library open, harmlessly */
            return false;
        }
    }
    return true;
}
