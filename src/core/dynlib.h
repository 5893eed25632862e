/*
 * dynlib.h — opening a backend's run-time library (the OpenCL ICD loader,
 * the Vulkan loader, CLBlast) when a context first asks for it, so libsdpa
 * itself has no link-time dependency on any of them. The platform calls
 * (dlopen/dlsym, LoadLibrary/GetProcAddress on Windows) are platform.h's
 * sdpa__os_lib_open / sdpa__os_lib_sym. The
 * function tables filled through sdpa__lib_load live with their backends
 * (cl_api.c, vk_api.c, through SDPA__LIB_DEFINE_LOADER below); see
 * docs/architecture.md, "Run-time libraries".
 */
#ifndef SDPA_CORE_DYNLIB_H
#define SDPA_CORE_DYNLIB_H

#include <stdbool.h>
#include <stddef.h>

/* The backends' run-time libraries by file name: versioned sonames on Linux,
 * unversioned on Android (vendors ship libOpenCL.so), the loaders' DLLs on
 * Windows (OpenCL.dll and vulkan-1.dll from the driver, in System32;
 * clblast.dll beside the program or on PATH), dylibs on macOS (untested). */
#if defined(_WIN32)
#define SDPA__LIB_OPENCL "OpenCL.dll"
#define SDPA__LIB_VULKAN "vulkan-1.dll"
#define SDPA__LIB_CLBLAST "clblast.dll"
#elif defined(__APPLE__)
#define SDPA__LIB_OPENCL "/System/Library/Frameworks/OpenCL.framework/OpenCL"
#define SDPA__LIB_VULKAN "libvulkan.1.dylib"
#define SDPA__LIB_CLBLAST "libclblast.dylib"
#elif defined(__ANDROID__)
#define SDPA__LIB_OPENCL "libOpenCL.so"
#define SDPA__LIB_VULKAN "libvulkan.so"
#define SDPA__LIB_CLBLAST "libclblast.so"
#else
#define SDPA__LIB_OPENCL "libOpenCL.so.1"
#define SDPA__LIB_VULKAN "libvulkan.so.1"
#define SDPA__LIB_CLBLAST "libclblast.so.1"
#endif

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

/* Defines `static const char *loader(void)`: on its first call (once per
 * process, thread safe: pthread_once) opens `soname` and fills the struct
 * `table` with the entry points that the X-macro `LIST` names (its fields
 * carry the same names); returns NULL when the table is ready, else the
 * message of sdpa__lib_load, the same on every call. The including file
 * needs <pthread.h>, and the field names must not be #defined there. */
#define SDPA__LIB_NAME(name) #name,
#define SDPA__LIB_FILL(name) t->name = (__typeof__(t->name))fns[i++];
#define SDPA__LIB_DEFINE_LOADER(loader, table, LIST, backend, soname, hint)                 \
    static pthread_once_t loader##_once = PTHREAD_ONCE_INIT;                                \
    static char loader##_why[512];                                                          \
    static bool loader##_ready;                                                             \
    static void loader##_run(void)                                                          \
    {                                                                                       \
        static const char *const names[] = {LIST(SDPA__LIB_NAME)};                          \
        enum { N = sizeof names / sizeof names[0] };                                        \
        sdpa__lib_fn fns[N];                                                                \
        if (!sdpa__lib_load(backend, soname, hint, names, fns, N, loader##_why,             \
                            sizeof loader##_why))                                           \
            return;                                                                         \
        __typeof__(table) *t = &(table);                                                    \
        size_t i = 0;                                                                       \
        LIST(SDPA__LIB_FILL)                                                                \
        loader##_ready = true;                                                              \
    }                                                                                       \
    static const char *loader(void)                                                         \
    {                                                                                       \
        pthread_once(&loader##_once, loader##_run);                                         \
        return loader##_ready ? NULL : loader##_why;                                        \
    }

#endif
