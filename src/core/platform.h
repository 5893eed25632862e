/*
 * platform.h — the operating-system calls that differ between POSIX systems
 * (Linux; macOS untested) and Windows, each behind one small function, so
 * the rest of libsdpa has no #ifdef for the platform. platform_posix.c and
 * platform_win32.c implement them; src/core/meson.build compiles the one
 * for the host. Callers: fileio.c (locking, replacing, folders, temp-file
 * owners), dynlib.c (opening the backends' run-time libraries), context.c
 * (CPU count, default folders), the host backends (CPU count, memory size).
 * The few declarations a platform lacks (open flags, stat time fields) are
 * filled in here, once, for the same reason. No logging, no context.
 */
#ifndef SDPA_CORE_PLATFORM_H
#define SDPA_CORE_PLATFORM_H

#include <dirent.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

/* Open flags only one side has: 0 where absent (Windows has no close-on-exec
 * across exec, no FIFOs to block on, no controlling tty, no symlinks that
 * libsdpa's files could meet; POSIX has no text mode). */
#ifndef O_BINARY
#define O_BINARY 0
#endif
#ifndef O_CLOEXEC
#define O_CLOEXEC 0
#endif
#ifndef O_NONBLOCK
#define O_NONBLOCK 0
#endif
#ifndef O_NOCTTY
#define O_NOCTTY 0
#endif
#ifndef O_NOFOLLOW
#define O_NOFOLLOW 0
#endif
#ifndef O_DIRECTORY
#define O_DIRECTORY 0
#endif
#ifndef S_ISLNK
#define S_ISLNK(m) 0
#endif
#ifndef S_ISSOCK
#define S_ISSOCK(m) 0
#endif
#ifndef S_IWGRP
#define S_IWGRP 0
#endif
#ifndef S_IWOTH
#define S_IWOTH 0
#endif

/* Memory aligned to align (a power of two; bytes a multiple of it), and its
 * release (aligned_alloc/free; _aligned_malloc/_aligned_free on Windows). */
void *sdpa__os_aligned_alloc(size_t align, size_t bytes);
void sdpa__os_aligned_free(void *p);

/* Huge pages for large host buffers: the size of one transparent huge page
 * where the OS backs memory with them on request (Linux with
 * /sys/kernel/mm/transparent_hugepage/enabled not `never`: its hpage_pmd_size,
 * 2 MiB on x86-64), else 0; and that request over the whole huge pages (of
 * `huge` bytes, that size) inside [p, p + bytes) (madvise MADV_HUGEPAGE;
 * nothing where huge is 0). Advice only: it cannot fail, and the memory works
 * the same without it. */
size_t sdpa__os_huge_page_size(void);
void sdpa__os_advise_huge(void *p, size_t bytes, size_t huge);

/* Online logical CPUs (at least 1). */
int sdpa__os_cpu_count(void);

/* Physical memory in bytes, 0 when unknown. */
int64_t sdpa__os_phys_mem(void);

/* Modification and status-change times of a stat result (nanoseconds where
 * the platform keeps them, whole seconds on Windows). */
struct timespec sdpa__os_stat_mtime(const struct stat *sb);
struct timespec sdpa__os_stat_ctime(const struct stat *sb);

/* The folder libsdpa keeps `what` in ("profiles" or "kernels") when neither
 * the caller nor the environment names one: POSIX $XDG_DATA_HOME/sdpa/profiles
 * (else ~/.local/share/sdpa/profiles) and $XDG_CACHE_HOME/sdpa/kernels (else
 * ~/.cache/sdpa/kernels); Windows %LOCALAPPDATA%\sdpa\profiles and
 * %LOCALAPPDATA%\sdpa\kernels. False when the environment gives no base. */
bool sdpa__os_user_dir(const char *what, char *out, size_t size);

/* True for a path separator ('/'; on Windows also '\\'). */
bool sdpa__os_is_sep(char c);

/* Length of the root prefix of path that mkdir must not be asked to create:
 * 0 on POSIX; "C:" (2) or "C:\" (3) or a UNC "\\server\share\" on Windows. */
size_t sdpa__os_root_len(const char *path);

/* mkdir with a mode (Windows ignores the mode: folder ACLs are inherited). */
int sdpa__os_mkdir(const char *path, mode_t mode);

/* fsync a written file descriptor; make a folder's entries durable (best
 * effort; nothing to do on Windows, where the rename below writes through). */
int sdpa__os_fsync(int fd);
void sdpa__os_sync_dir(const char *dir);

/* Atomically replaces `to` with `from` (rename(2); Windows MoveFileEx with
 * MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH). 0, or -1 with errno. */
int sdpa__os_replace(const char *from, const char *to);

/* Removes the entry `name` of the open folder d (opened from dir):
 * unlinkat relative to the folder on POSIX, dir\name on Windows. */
void sdpa__os_unlink_in(DIR *d, const char *dir, const char *name);

/* True when process pid may still exist (so its temp files must be kept). */
bool sdpa__os_pid_alive(long pid);

/* The user id files must belong to, and the owner recorded in sb; on Windows
 * both are 0 (ownership there is an ACL, and %LOCALAPPDATA% is per user). */
long sdpa__os_euid(void);

/* True when path itself is a symbolic link (lstat; never on Windows). */
bool sdpa__os_is_symlink(const char *path);

/* The absolute, resolved form of path into out (PATH_MAX bytes), or into
 * malloc'd memory when out is NULL; NULL with errno on failure. */
char *sdpa__os_realpath(const char *path, char *out);

/* The resolved folder (as sdpa__os_realpath gives it, no trailing separator
 * but at a root) of the module holding the code at addr: the shared
 * library (libsdpa.so, libsdpa-0.dll) when addr is in it, else the program.
 * dladdr; GetModuleHandleExW(FROM_ADDRESS) and GetModuleFileNameW on
 * Windows. False when it cannot be known (no dladdr, a path the ANSI code
 * page cannot spell, too long for size). */
bool sdpa__os_module_folder(const void *addr, char *out, size_t size);

/* Sets the environment variable name to value, or removes it (value NULL),
 * for this process (setenv/unsetenv; _putenv_s). 0, or -1. */
int sdpa__os_setenv(const char *name, const char *value);

/* Creates a fresh private folder <temp>/<prefix>-XXXXXX (mkdtemp under
 * $TMPDIR or /tmp; GetTempPath on Windows) into out. False on failure. */
bool sdpa__os_make_temp_dir(const char *prefix, char *out, size_t size);

/* Blocks until this process holds an exclusive lock on the open file fd
 * (flock LOCK_EX; Windows LockFileEx), and releases it. 0, or -1 with errno. */
int sdpa__os_lock(int fd);
void sdpa__os_unlock(int fd);

/* Opens a shared library by file name (dlopen RTLD_NOW | RTLD_LOCAL;
 * LoadLibraryA): NULL and *reason set on failure (*reason points to static
 * or thread-local text valid until the next call in this thread). */
void *sdpa__os_lib_open(const char *name, const char **reason);

/* The address of symbol in lib as a function pointer, NULL when absent. */
void (*sdpa__os_lib_sym(void *lib, const char *symbol))(void);

#endif /* SDPA_CORE_PLATFORM_H */
