/*
 * platform_posix.c — platform.h for POSIX systems (Linux; macOS untested):
 * sysconf, stat's st_mtim, XDG folders, flock, rename, kill(pid, 0),
 * dlopen, dladdr, madvise (transparent huge pages, Linux). Compiled
 * instead of platform_win32.c on every non-Windows host.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr */
#endif
#include "platform.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <unistd.h>

void *sdpa__os_aligned_alloc(size_t align, size_t bytes) { return aligned_alloc(align, bytes); }

void sdpa__os_aligned_free(void *p) { free(p); }

#if defined(__linux__) && defined(MADV_HUGEPAGE)
/* The first line of a small sysfs file, "" when it cannot be read. */
static void read_line(const char *path, char *out, size_t size)
{
    out[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f) return;
    if (!fgets(out, (int)size, f)) out[0] = '\0';
    fclose(f);
}

size_t sdpa__os_huge_page_size(void)
{
    char line[128];
    read_line("/sys/kernel/mm/transparent_hugepage/enabled", line, sizeof line);
    if (!line[0] || strstr(line, "[never]")) return 0;
    read_line("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size", line, sizeof line);
    char *end = NULL;
    const unsigned long long n = strtoull(line, &end, 10);
    /* a power of two between 64 KiB and 1 GiB, else the x86-64 size */
    if (end == line || n < (64u << 10) || n > (1u << 30) || (n & (n - 1))) return (size_t)2 << 20;
    return (size_t)n;
}

void sdpa__os_advise_huge(void *p, size_t bytes, size_t huge)
{
    if (!huge || !p) return;
    const uintptr_t lo = ((uintptr_t)p + huge - 1) & ~(uintptr_t)(huge - 1);
    const uintptr_t hi = ((uintptr_t)p + bytes) & ~(uintptr_t)(huge - 1);
    if (hi > lo) (void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE); /* advice: errors change nothing */
}
#else
size_t sdpa__os_huge_page_size(void) { return 0; }

void sdpa__os_advise_huge(void *p, size_t bytes, size_t huge)
{
    (void)p;
    (void)bytes;
    (void)huge;
}
#endif

int sdpa__os_cpu_count(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)(n > 1024 ? 1024 : n) : 1;
}

int64_t sdpa__os_phys_mem(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? (int64_t)pages * page : 0;
}

#ifdef __APPLE__
struct timespec sdpa__os_stat_mtime(const struct stat *sb) { return sb->st_mtimespec; }
struct timespec sdpa__os_stat_ctime(const struct stat *sb) { return sb->st_ctimespec; }
#else
struct timespec sdpa__os_stat_mtime(const struct stat *sb) { return sb->st_mtim; }
struct timespec sdpa__os_stat_ctime(const struct stat *sb) { return sb->st_ctim; }
#endif

bool sdpa__os_user_dir(const char *what, char *out, size_t size)
{
    bool profiles = strcmp(what, "profiles") == 0;
    const char *xdg = getenv(profiles ? "XDG_DATA_HOME" : "XDG_CACHE_HOME");
    if (xdg && *xdg) return snprintf(out, size, "%s/sdpa/%s", xdg, what) < (int)size;
    const char *home = getenv("HOME");
    if (home && *home)
        return snprintf(out, size, "%s/%s/sdpa/%s", home, profiles ? ".local/share" : ".cache",
                        what) < (int)size;
    return false;
}

bool sdpa__os_is_sep(char c) { return c == '/'; }

size_t sdpa__os_root_len(const char *path)
{
    (void)path;
    return 0;
}

int sdpa__os_mkdir(const char *path, mode_t mode) { return mkdir(path, mode); }

int sdpa__os_fsync(int fd) { return fsync(fd); }

void sdpa__os_sync_dir(const char *dir)
{
    int dfd = open(dir, O_RDONLY | O_CLOEXEC | O_DIRECTORY);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
}

int sdpa__os_replace(const char *from, const char *to) { return rename(from, to); }

void sdpa__os_unlink_in(DIR *d, const char *dir, const char *name)
{
    (void)dir;
    unlinkat(dirfd(d), name, 0);
}

bool sdpa__os_pid_alive(long pid) { return kill((pid_t)pid, 0) == 0 || errno != ESRCH; }

long sdpa__os_euid(void) { return (long)geteuid(); }

bool sdpa__os_is_symlink(const char *path)
{
    struct stat ls;
    return lstat(path, &ls) == 0 && S_ISLNK(ls.st_mode);
}

char *sdpa__os_realpath(const char *path, char *out) { return realpath(path, out); }

bool sdpa__os_module_folder(const void *addr, char *out, size_t size)
{
    Dl_info info;
    char path[PATH_MAX];
    if (!dladdr(addr, &info) || !info.dli_fname || !*info.dli_fname) return false;
    /* the program itself may come as a bare argv[0] */
    const char *file = strchr(info.dli_fname, '/') ? info.dli_fname : "/proc/self/exe";
    if (!realpath(file, path)) return false;
    char *slash = strrchr(path, '/');
    if (!slash) return false;
    slash[slash == path ? 1 : 0] = '\0'; /* "/" stays the root */
    const int n = snprintf(out, size, "%s", path);
    return n >= 0 && (size_t)n < size;
}

int sdpa__os_setenv(const char *name, const char *value)
{
    return value ? setenv(name, value, 1) : unsetenv(name);
}

bool sdpa__os_make_temp_dir(const char *prefix, char *out, size_t size)
{
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp) tmp = "/tmp";
    return snprintf(out, size, "%s/%s-XXXXXX", tmp, prefix) < (int)size && mkdtemp(out);
}

int sdpa__os_lock(int fd)
{
    int rc;
    while ((rc = flock(fd, LOCK_EX)) != 0 && errno == EINTR) {}
    return rc;
}

void sdpa__os_unlock(int fd) { flock(fd, LOCK_UN); }

void *sdpa__os_lib_open(const char *name, const char **reason)
{
    void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        *reason = e ? e : "unknown reason";
    }
    return h;
}

void (*sdpa__os_lib_sym(void *lib, const char *symbol))(void)
{
    void *p = dlsym(lib, symbol);
    void (*f)(void) = NULL;
    /* object pointer to function pointer: POSIX guarantees it is the same */
    memcpy(&f, &p, sizeof f < sizeof p ? sizeof f : sizeof p);
    return f;
}
