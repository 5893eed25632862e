/*
 * test_platform.c — the operating-system layer (src/core/platform.h) and
 * the file rules built on it (fileio.h), on the platform the suite is built
 * for: Linux here, Windows under Wine in scripts/cross-check-windows.sh.
 * Each case states what the platform must do, so a port that forgets one
 * (rename that cannot replace, text-mode reads, a lock that does not
 * exclude, Windows separators and drive roots, the per-user folders, a DLL
 * that cannot be opened by name, the folder of the module that holds some
 * code: where libsdpa finds its shipped profiles, huge pages asked for over
 * exactly the whole huge pages of a range) fails here rather than in a
 * user's cache.
 */
#include "testutil.h"

#include "dynlib.h"
#include "internal.h"
#include "fileio.h"
#include "platform.h"
#include "../src/backend/cpu/host_buffers.h" /* sdpa__host_alloc */

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef _WIN32
#define SEP "\\"
#else
#define SEP "/"
#endif

static char *g_dir;

static void setup(void) { g_dir = tmkdtemp("sdpa-platform"); }
static void teardown(void) { free(g_dir); }

/* A second atomic write replaces the first file (rename over an existing
 * file fails on Windows unless MoveFileEx is told to replace). */
START_TEST(atomic_write_replaces)
{
    char path[1200];
    snprintf(path, sizeof path, "%s" SEP "profile.jsonl", g_dir);
    sdpa__file_why why;
    ck_assert_int_eq(sdpa__file_write_atomic(path, "first\n", 6, 0644, 0, &why), SDPA__FILE_OK);
    ck_assert_msg(sdpa__file_write_atomic(path, "second!\n", 8, 0644, 0, &why) == SDPA__FILE_OK,
                  "replacing %s: %s", path, why.text);
    char *data;
    size_t len;
    ck_assert_int_eq(sdpa__file_read(path, 1 << 20, 0, &data, &len, &why), SDPA__FILE_OK);
    ck_assert_uint_eq(len, 8);
    ck_assert_str_eq(data, "second!\n");
    free(data);
}
END_TEST

/* Files are bytes: CR LF and 0x1A (text-mode EOF on Windows) come back as
 * written. */
START_TEST(files_are_binary)
{
    char path[1200];
    snprintf(path, sizeof path, "%s" SEP "bytes.bin", g_dir);
    const char bytes[] = {'a', '\r', '\n', 'b', 0x1a, 'c', '\n', '\r'};
    sdpa__file_why why;
    ck_assert_int_eq(sdpa__file_write_atomic(path, bytes, sizeof bytes, 0644, 0, &why),
                     SDPA__FILE_OK);
    char *data;
    size_t len;
    ck_assert_int_eq(sdpa__file_read(path, 1 << 20, 0, &data, &len, &why), SDPA__FILE_OK);
    ck_assert_uint_eq(len, sizeof bytes);
    ck_assert(memcmp(data, bytes, sizeof bytes) == 0);
    free(data);
}
END_TEST

/* The lock excludes another holder: a thread that asks while the lock is
 * held gets it only after the release. */
typedef struct locker {
    const char *path;
    atomic_int got;
} locker;

static void *lock_main(void *arg)
{
    locker *l = arg;
    int fd = sdpa__file_open_lock(l->path, NULL);
    if (fd < 0 || sdpa__file_lock(fd) != 0) {
        atomic_store(&l->got, -1);
        return NULL;
    }
    atomic_store(&l->got, 1);
    sdpa__file_unlock(fd);
    close(fd);
    return NULL;
}

START_TEST(lock_excludes)
{
    char path[1200];
    snprintf(path, sizeof path, "%s" SEP "store.lock", g_dir);
    sdpa__file_why why;
    int fd = sdpa__file_open_lock(path, &why);
    ck_assert_msg(fd >= 0, "open_lock: %s", why.text);
    ck_assert_int_eq(sdpa__file_lock(fd), 0);
    locker l = {.path = path};
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, lock_main, &l), 0);
    struct timespec pause = {.tv_nsec = 300000000}; /* time for the thread to block */
    nanosleep(&pause, NULL);
    ck_assert_int_eq(atomic_load(&l.got), 0);
    sdpa__file_unlock(fd);
    pthread_join(t, NULL);
    ck_assert_int_eq(atomic_load(&l.got), 1);
    close(fd);
}
END_TEST

/* Folder names: the separators and roots of the platform. */
START_TEST(paths)
{
    char out[256];
    ck_assert(sdpa__path_dir("a/b/c.json", out, sizeof out));
    ck_assert_str_eq(out, "a/b");
    ck_assert(sdpa__path_dir("c.json", out, sizeof out));
    ck_assert_str_eq(out, ".");
    ck_assert(sdpa__path_dir("/c.json", out, sizeof out));
    ck_assert_str_eq(out, "/");
#ifdef _WIN32
    ck_assert(sdpa__path_dir("C:\\Users\\me\\p.jsonl", out, sizeof out));
    ck_assert_str_eq(out, "C:\\Users\\me");
    ck_assert(sdpa__path_dir("C:\\p.jsonl", out, sizeof out));
    ck_assert_str_eq(out, "C:\\");
    ck_assert(sdpa__path_dir("C:p.jsonl", out, sizeof out));
    ck_assert_str_eq(out, "C:");
    ck_assert_uint_eq(sdpa__os_root_len("\\\\server\\share\\x"), 15);
#endif
    /* mkdir -p with the platform's separator, below an absolute root */
    char deep[1200];
    snprintf(deep, sizeof deep, "%s" SEP "a" SEP "b" SEP "c", g_dir);
    sdpa__file_why why;
    ck_assert_msg(sdpa__dir_writable(deep, 0700, &why) == SDPA__FILE_OK, "%s: %s", deep,
                  why.text);
}
END_TEST

/* With neither the caller nor SDPA_PROFILE_DIR naming one, a context keeps
 * profiles and kernels in the platform's per-user folders. */
START_TEST(user_dirs)
{
    char out[1200];
#ifdef _WIN32
    sdpa__os_setenv("LOCALAPPDATA", "C:\\Users\\me\\AppData\\Local");
    ck_assert(sdpa__os_user_dir("profiles", out, sizeof out));
    ck_assert_str_eq(out, "C:\\Users\\me\\AppData\\Local\\sdpa\\profiles");
    ck_assert(sdpa__os_user_dir("kernels", out, sizeof out));
    ck_assert_str_eq(out, "C:\\Users\\me\\AppData\\Local\\sdpa\\kernels");
#else
    sdpa__os_setenv("XDG_DATA_HOME", NULL);
    sdpa__os_setenv("XDG_CACHE_HOME", "/x/cache");
    sdpa__os_setenv("HOME", "/home/me");
    ck_assert(sdpa__os_user_dir("profiles", out, sizeof out));
    ck_assert_str_eq(out, "/home/me/.local/share/sdpa/profiles");
    ck_assert(sdpa__os_user_dir("kernels", out, sizeof out));
    ck_assert_str_eq(out, "/x/cache/sdpa/kernels");
#endif
}
END_TEST

/* A library that is not there: false and a message naming it; one that is
 * there: its entry point resolves. */
START_TEST(dynamic_loading)
{
    char why[512];
    const char *names[] = {"missing_fn"};
    sdpa__lib_fn fns[1];
    ck_assert(!sdpa__lib_load("test", "sdpa-no-such-library-1", "hint", names, fns, 1, why,
                              sizeof why));
    ck_assert_msg(strstr(why, "test: cannot load sdpa-no-such-library-1 (") && strstr(why, "hint"),
                  "%s", why);
#ifdef _WIN32
    const char *lib = "kernel32.dll", *real[] = {"GetTickCount"};
#else
    const char *lib = "libc.so.6", *real[] = {"getpid"};
#endif
    ck_assert_msg(sdpa__lib_load("test", lib, "hint", real, fns, 1, why, sizeof why), "%s", why);
    ck_assert_ptr_nonnull(fns[0]);
}
END_TEST

/* The folder of the module holding some code: for a function of this
 * program (the suite links libsdpa statically), the folder this program's
 * file lies in; for a function of a system library, that library's folder,
 * not the program's (GetModuleFileName(NULL) or /proc/self/exe would give
 * the program's for both). */
START_TEST(module_folder)
{
    char here[4096], path[4200], lib[4096];
    ck_assert(sdpa__os_module_folder((const void *)(uintptr_t)&tmkdtemp, here, sizeof here));
#ifdef _WIN32
    const char *exe = "test_platform.exe", *syslib = "kernel32.dll", *fn = "GetTickCount";
#else
    const char *exe = "test_platform", *syslib = "libc.so.6", *fn = "getpid";
#endif
    const char *why = NULL;
    void *h = sdpa__os_lib_open(syslib, &why);
    ck_assert_msg(h, "%s: %s", syslib, why);
    const void *sys = (const void *)(uintptr_t)sdpa__os_lib_sym(h, fn);
    snprintf(path, sizeof path, "%s" SEP "%s", here, exe);
    struct stat st;
    ck_assert_msg(stat(path, &st) == 0 && S_ISREG(st.st_mode), "%s is not this program", path);
    char real[4096];
    ck_assert_ptr_nonnull(sdpa__os_realpath(here, real));
    ck_assert_str_eq(real, here); /* resolved already */
    ck_assert_ptr_nonnull(sys);
    ck_assert(sdpa__os_module_folder(sys, lib, sizeof lib));
    ck_assert_msg(strcmp(lib, here) != 0, "a system library's code found in %s", lib);
    ck_assert(!sdpa__os_module_folder((const void *)(uintptr_t)&tmkdtemp, here, 2)); /* no room */
}
END_TEST

#ifdef __linux__ /* the huge-page helpers: /proc and sysfs */
/* The flags of the mapping (VMA) that holds address a, from /proc/self/smaps,
 * and its bounds; false when no mapping holds it. */
static bool vma_of(uintptr_t a, uintptr_t *lo, uintptr_t *hi, char *flags, size_t size)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f) return false;
    char line[512];
    bool in = false, found = false;
    while (fgets(line, sizeof line, f)) {
        unsigned long long b, e;
        char perms[8];
        if (sscanf(line, "%llx-%llx %7s", &b, &e, perms) == 3) { /* a mapping's first line */
            in = a >= b && a < e;
            if (in) *lo = (uintptr_t)b, *hi = (uintptr_t)e;
        } else if (in && !strncmp(line, "VmFlags:", 8)) {
            snprintf(flags, size, "%.200s", line + 8); /* two-letter flags */
            found = true;
            break;
        }
    }
    fclose(f);
    return found;
}

/* Whether every byte of [a, b) lies in a mapping flagged `hg` (advised huge),
 * from the mappings' bounds in /proc/self/smaps. A range may span more than
 * one mapping even where one madvise call covered it all: the kernel does
 * not merge two neighbouring anonymous mappings that each hold pages of their
 * own already, so the test asks about the bytes, not about one mapping. */
static bool advised_over(uintptr_t a, uintptr_t b)
{
    while (a < b) {
        uintptr_t lo, hi;
        char flags[256];
        if (!vma_of(a, &lo, &hi, flags, sizeof flags) || !strstr(flags, " hg")) return false;
        a = hi;
    }
    return true;
}

/* The first line of a sysfs file ("" when absent), read here on its own so
 * the suite does not take platform_posix.c's reading on trust. */
static void sysfs_line(const char *path, char *out, size_t size)
{
    out[0] = '\0';
    FILE *f = fopen(path, "r");
    if (f && !fgets(out, (int)size, f)) out[0] = '\0';
    if (f) fclose(f);
}

#endif

/* Huge pages: none asked for on Windows; on Linux the size is the kernel's
 * transparent huge page size (0 when they are off), the advice covers
 * exactly the whole huge pages inside the range (madvise splits the mapping
 * there: the flag `hg` marks it; the bytes are asked about, not one
 * mapping, see advised_over), and sdpa__host_alloc gives buffers of two
 * huge pages or more whole, advised huge pages, smaller ones none. */
START_TEST(huge_pages)
{
    const size_t huge = sdpa__os_huge_page_size();
#ifndef __linux__
    ck_assert_uint_eq(huge, 0);
    void *p = sdpa__host_alloc(NULL, (size_t)8 << 20); /* plain aligned memory */
    ck_assert_ptr_nonnull(p);
    ck_assert_uint_eq((uintptr_t)p % 64, 0);
    sdpa__aligned_free(p);
#else
    char enabled[128], pmd[64];
    sysfs_line("/sys/kernel/mm/transparent_hugepage/enabled", enabled, sizeof enabled);
    sysfs_line("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size", pmd, sizeof pmd);
    if (!enabled[0] || strstr(enabled, "[never]")) {
        ck_assert_uint_eq(huge, 0);
        printf("huge_pages: transparent huge pages are off here (`%s`): the advice is "
               "not checked\n", enabled[0] ? enabled : "no sysfs file");
        return;
    }
    ck_assert_uint_eq(huge, (size_t)strtoull(pmd, NULL, 10));
    /* the advice over [p + 1, p + 3 huge - 1): only [p + huge, p + 2 huge) */
    char *p = sdpa__aligned_alloc(huge, 4 * huge);
    ck_assert_ptr_nonnull(p);
    sdpa__os_advise_huge(p + 1, 3 * huge - 2, huge);
    uintptr_t lo, hi;
    char flags[256];
    ck_assert_msg(advised_over((uintptr_t)p + huge, (uintptr_t)p + 2 * huge),
                  "no huge page advice over [p + huge, p + 2 huge)");
    ck_assert(vma_of((uintptr_t)p + 2 * huge, &lo, &hi, flags, sizeof flags));
    ck_assert_msg(!strstr(flags, " hg"), "advice past the range's last whole huge page");
    ck_assert(vma_of((uintptr_t)p + huge - 1, &lo, &hi, flags, sizeof flags));
    ck_assert_msg(!strstr(flags, " hg"), "advice before the range's first whole huge page");
    sdpa__aligned_free(p);
    /* the host backends' buffers: from two huge pages up, whole advised pages */
    char *big = sdpa__host_alloc(NULL, 2 * huge), *small = sdpa__host_alloc(NULL, 2 * huge - 64);
    ck_assert_ptr_nonnull(big);
    ck_assert_ptr_nonnull(small);
    ck_assert_uint_eq((uintptr_t)big % huge, 0);
    ck_assert_msg(advised_over((uintptr_t)big, (uintptr_t)big + 2 * huge),
                  "a 2-huge-page buffer is not advised over all its bytes");
    ck_assert(vma_of((uintptr_t)small, &lo, &hi, flags, sizeof flags));
    ck_assert_msg(!strstr(flags, " hg"), "a buffer under two huge pages was advised");
    sdpa__aligned_free(big);
    sdpa__aligned_free(small);
    /* SDPA_CPU_HUGE_PAGES=0: no advice, 1 and a bad value: advice */
    const char *vals[] = {"0", "1", "yes"};
    for (int i = 0; i < 3; i++) {
        setenv("SDPA_CPU_HUGE_PAGES", vals[i], 1);
        big = sdpa__host_alloc(NULL, 4 * huge);
        ck_assert_ptr_nonnull(big);
        ck_assert(vma_of((uintptr_t)big + 2 * huge, &lo, &hi, flags, sizeof flags));
        if (i == 0) ck_assert_msg(!strstr(flags, " hg"), "SDPA_CPU_HUGE_PAGES=0: %s", flags);
        else
            ck_assert_msg(advised_over((uintptr_t)big, (uintptr_t)big + 4 * huge),
                          "SDPA_CPU_HUGE_PAGES=%s: not advised over all the buffer", vals[i]);
        sdpa__aligned_free(big);
    }
    unsetenv("SDPA_CPU_HUGE_PAGES");
#endif
}
END_TEST

static Suite *platform_suite(void)
{
    Suite *s = suite_create("platform");
    /* one TCase per test, so CK_RUN_CASE runs one */
    struct {
        const char *name;
        const TTest *test;
    } cases[] = {
        {"atomic_write_replaces", atomic_write_replaces},
        {"files_are_binary", files_are_binary},
        {"lock_excludes", lock_excludes},
        {"paths", paths},
        {"user_dirs", user_dirs},
        {"dynamic_loading", dynamic_loading},
        {"module_folder", module_folder},
        {"huge_pages", huge_pages},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        TCase *t = tcase_create(cases[i].name);
        tcase_add_checked_fixture(t, setup, teardown);
        tcase_add_test(t, cases[i].test);
        suite_add_tcase(s, t);
    }
    return s;
}

int main(void) { return trun_suite(platform_suite()); }
