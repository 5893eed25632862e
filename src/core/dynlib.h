/*
 * dynlib.h — opening a backend's run-time library (the OpenCL ICD loader,
 * the Vulkan loader, CLBlast) when a context first asks for it, so libsdpa
 * itself has no link-time dependency on any of them. The platform call
 * (dlopen/dlsym) sits behind these two functions only, so another platform
 * (LoadLibrary/GetProcAddress on Windows) is one change here. The function
 * tables filled through them live with their backends (cl_api.c,
 * vk_api.c); see docs/architecture.md, "Run-time libraries".
 */
#ifndef SDPA_CORE_DYNLIB_H
#define SDPA_CORE_DYNLIB_H

#include <stdbool.h>
#include <stddef.h>

/* A resolved entry point, cast to its own type by the caller. */
typedef void (*sdpa__lib_fn)(void);

/* Opens the library `soname` and resolves the n entry points in names[] into
 * fns[]. Never unloaded: the tables stay valid for the life of the process.
 * On failure returns false and writes, into why (why_size bytes),
 * "<backend>: cannot load <soname> (<platform reason>); <hint>" or
 * "<backend>: <soname> has no <symbol>; <hint>". */
bool sdpa__lib_load(const char *backend, const char *soname, const char *hint,
                    const char *const *names, sdpa__lib_fn *fns, size_t n,
                    char *why, size_t why_size);

#endif
