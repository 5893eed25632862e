/*
 * fileio.c — safe reads, atomic writes and folder creation for every file
 * libsdpa keeps on disk (interface and rules in fileio.h). Callers: the
 * profile store and peak cache (src/tune/profile.c), the OpenCL binary cache
 * (src/backend/opencl/cl_diskcache.c) and the Vulkan pipeline cache
 * (src/backend/vulkan/vk_pcache.c).
 *
 * Invariants: nothing is read before the open descriptor has been fstat'ed
 * and found to be a regular file within the limit (so a FIFO, a device or a
 * directory is refused without blocking, and the size check and the read see
 * the same file); a write never leaves a partial file under the final name;
 * a temp file is only removed when its name is exactly "<target>.tmp.<pid>"
 * and that process no longer exists (or it is ours).
 * The calls that differ on Windows (locking, replacing, mkdir, process
 * liveness, file owners) go through platform.h; there, owner and mode checks
 * pass (ownership is an ACL; %LOCALAPPDATA% is per user) and symlinks are
 * not looked for.
 */
#include "fileio.h"

#include "internal.h"
#include "platform.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static sdpa__file_result fail(sdpa__file_why *why, sdpa__file_result r, int err,
                              const char *fmt, ...) SDPA__PRINTF(4, 5);
static sdpa__file_result fail(sdpa__file_why *why, sdpa__file_result r, int err,
                              const char *fmt, ...)
{
    if (!why) return r;
    why->err = err;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why->text, sizeof why->text, fmt, ap);
    va_end(ap);
    return r;
}

static sdpa__file_result fail_errno(sdpa__file_why *why, const char *what)
{
    int e = errno;
    return fail(why, e == ENOMEM ? SDPA__FILE_NO_MEMORY : SDPA__FILE_IO, e, "%s: %s", what,
                strerror(e));
}

static const char *type_name(mode_t m)
{
    if (S_ISDIR(m)) return "a directory";
    if (S_ISFIFO(m)) return "a FIFO";
    if (S_ISCHR(m)) return "a character device";
    if (S_ISBLK(m)) return "a block device";
    if (S_ISSOCK(m)) return "a socket";
    if (S_ISLNK(m)) return "a symlink";
    return "not a regular file";
}

/* REFUSED unless sb describes something the effective user owns and that
 * group and others cannot write. */
static sdpa__file_result check_private(const struct stat *sb, sdpa__file_why *why)
{
    if ((long)sb->st_uid != sdpa__os_euid())
        return fail(why, SDPA__FILE_REFUSED, 0, "owned by uid %ld, not by this user (uid %ld)",
                    (long)sb->st_uid, sdpa__os_euid());
    if (sb->st_mode & (S_IWGRP | S_IWOTH))
        return fail(why, SDPA__FILE_REFUSED, 0, "writable by group or others (mode %04o)",
                    (unsigned)(sb->st_mode & 07777));
    return SDPA__FILE_OK;
}

sdpa__file_result sdpa__file_read(const char *path, size_t limit, unsigned flags, char **data,
                                  size_t *len, sdpa__file_why *why)
{
    *data = NULL;
    *len = 0;
    if (why) memset(why, 0, sizeof *why);
    int oflags = O_RDONLY | O_BINARY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY;
    if (flags & SDPA__FILE_NOFOLLOW) oflags |= O_NOFOLLOW;
    int fd = open(path, oflags);
    if (fd < 0) {
        if (errno == ENOENT) return SDPA__FILE_MISSING;
        if (errno == ELOOP && (flags & SDPA__FILE_NOFOLLOW))
            return fail(why, SDPA__FILE_REFUSED, ELOOP, "a symlink (not followed here)");
        return fail_errno(why, "open");
    }
    struct stat sb;
    sdpa__file_result r = SDPA__FILE_OK;
    if (fstat(fd, &sb) != 0)
        r = fail_errno(why, "fstat");
    else if (!S_ISREG(sb.st_mode))
        r = fail(why, SDPA__FILE_REFUSED, 0, "%s, not a regular file", type_name(sb.st_mode));
    else if (flags & SDPA__FILE_PRIVATE)
        r = check_private(&sb, why);
    if (r == SDPA__FILE_OK && (uint64_t)sb.st_size > limit)
        r = fail(why, SDPA__FILE_TOO_LARGE, 0, "%lld bytes, above the %zu-byte limit",
                 (long long)sb.st_size, limit);
    char *buf = NULL;
    size_t n = 0, cap = r == SDPA__FILE_OK ? (size_t)sb.st_size : 0;
    if (r == SDPA__FILE_OK && !(buf = malloc(cap + 1)))
        r = fail(why, SDPA__FILE_NO_MEMORY, ENOMEM, "out of memory (%zu bytes)", cap + 1);
    while (r == SDPA__FILE_OK && n < cap) {
        ssize_t got = read(fd, buf + n, cap - n);
        if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (got < 0) r = fail_errno(why, "read");
        if (got <= 0) break; /* shrank while reading: what is there */
        n += (size_t)got;
    }
    close(fd);
    if (r != SDPA__FILE_OK) {
        free(buf);
        return r;
    }
    buf[n] = '\0';
    *data = buf;
    *len = n;
    return SDPA__FILE_OK;
}

/* The last path separator in path, NULL when none. */
static char *last_sep(char *path)
{
    char *last = NULL;
    for (char *p = path; *p; p++)
        if (sdpa__os_is_sep(*p)) last = p;
    return last;
}

bool sdpa__path_dir(const char *path, char *out, size_t size)
{
    if (!path || strlen(path) >= size) return false;
    sdpa__strlcpy(out, path, size);
    char *slash = last_sep(out);
    size_t root = sdpa__os_root_len(out);
    if (!slash && root == 0) sdpa__strlcpy(out, ".", size);
    else if (!slash || (size_t)(slash - out) < (root ? root : 1)) out[root ? root : 1] = '\0';
    else *slash = '\0';
    return true;
}

/* Removes "<base>.tmp.<pid>" files in dir whose process is gone: what a
 * writer killed between creating its temp file and renaming it leaves. */
static void remove_stale_temps(const char *dir, const char *base)
{
    DIR *d = opendir(dir);
    if (!d) return;
    size_t bl = strlen(base);
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *name = e->d_name;
        if (strncmp(name, base, bl) != 0 || strncmp(name + bl, ".tmp.", 5) != 0) continue;
        const char *digits = name + bl + 5;
        size_t nd = strspn(digits, "0123456789");
        if (nd == 0 || nd > 9 || digits[nd] != '\0') continue;
        long pid = strtol(digits, NULL, 10);
        if (pid <= 0 || pid == (long)getpid()) continue; /* ours: replaced by the caller */
        if (sdpa__os_pid_alive(pid)) continue; /* alive (or not ours to see) */
        sdpa__os_unlink_in(d, dir, name);
    }
    closedir(d);
}

static bool write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return false;
        p += w;
        n -= (size_t)w;
    }
    return true;
}

sdpa__file_result sdpa__file_write_atomic(const char *path, const void *data, size_t n,
                                          mode_t mode, unsigned flags, sdpa__file_why *why)
{
    if (why) memset(why, 0, sizeof *why);
    char target[PATH_MAX], dir[PATH_MAX], tmp[PATH_MAX + 32];
    if ((flags & SDPA__FILE_FOLLOW_LINK) && sdpa__os_is_symlink(path)) {
        if (!sdpa__os_realpath(path, target)) {
            if (errno == ENOENT)
                return fail(why, SDPA__FILE_REFUSED, ENOENT,
                            "a symlink to a missing file (create the target or remove the link)");
            return fail_errno(why, "resolving the symlink");
        }
    } else if (strlen(path) < sizeof target) {
        sdpa__strlcpy(target, path, sizeof target);
    } else {
        return fail(why, SDPA__FILE_REFUSED, ENAMETOOLONG, "path too long");
    }
    if (!sdpa__path_dir(target, dir, sizeof dir))
        return fail(why, SDPA__FILE_REFUSED, ENAMETOOLONG, "path too long");
    const char *slash = last_sep(target);
    remove_stale_temps(dir, slash ? slash + 1 : target);
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", target, (long)getpid());
    unlink(tmp); /* a leftover of an earlier writer with our pid */
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_BINARY | O_CLOEXEC | O_NOFOLLOW, mode);
    if (fd < 0) return fail_errno(why, "creating the temp file");
    sdpa__file_result r = SDPA__FILE_OK;
    if (!write_all(fd, data, n)) r = fail_errno(why, "write");
    else if (sdpa__os_fsync(fd) != 0) r = fail_errno(why, "fsync");
    if (close(fd) != 0 && r == SDPA__FILE_OK) r = fail_errno(why, "close");
    if (r == SDPA__FILE_OK && sdpa__os_replace(tmp, target) != 0) r = fail_errno(why, "rename");
    if (r != SDPA__FILE_OK) {
        unlink(tmp);
        return r;
    }
    sdpa__os_sync_dir(dir); /* make the rename durable; best effort */
    return SDPA__FILE_OK;
}

int sdpa__file_open_lock(const char *path, sdpa__file_why *why)
{
    if (why) memset(why, 0, sizeof *why);
    int fd = open(path, O_RDWR | O_CREAT | O_BINARY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY,
                  0644);
    if (fd < 0) {
        fail_errno(why, "open");
        return -1;
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        fail(why, SDPA__FILE_REFUSED, 0, "%s, not a regular file", type_name(sb.st_mode));
        close(fd);
        return -1;
    }
    return fd;
}

int sdpa__file_lock(int fd) { return sdpa__os_lock(fd); }

void sdpa__file_unlock(int fd) { sdpa__os_unlock(fd); }

sdpa__file_result sdpa__dir_make(const char *path, mode_t mode, sdpa__file_why *why)
{
    if (why) memset(why, 0, sizeof *why);
    char buf[PATH_MAX];
    size_t n = path ? strlen(path) : 0;
    if (n == 0 || n >= sizeof buf) return fail(why, SDPA__FILE_REFUSED, 0, "unusable folder name");
    memcpy(buf, path, n + 1);
    size_t root = sdpa__os_root_len(buf);
    for (size_t i = root > 1 ? root : 1; i <= n; i++) {
        if (!sdpa__os_is_sep(buf[i]) && buf[i] != '\0') continue;
        char c = buf[i];
        buf[i] = '\0';
        if (sdpa__os_mkdir(buf, mode) != 0 && errno != EEXIST) {
            int e = errno;
            return fail(why, SDPA__FILE_IO, e, "cannot create %s: %s", buf, strerror(e));
        }
        buf[i] = c;
    }
    struct stat sb;
    if (stat(path, &sb) != 0) return fail_errno(why, "stat");
    if (!S_ISDIR(sb.st_mode))
        return fail(why, SDPA__FILE_REFUSED, ENOTDIR, "%s, not a directory", type_name(sb.st_mode));
    return SDPA__FILE_OK;
}

sdpa__file_result sdpa__dir_check_private(const char *path, sdpa__file_why *why)
{
    if (why) memset(why, 0, sizeof *why);
    struct stat sb;
    if (stat(path, &sb) != 0) return fail_errno(why, "stat");
    if (!S_ISDIR(sb.st_mode))
        return fail(why, SDPA__FILE_REFUSED, ENOTDIR, "%s, not a directory", type_name(sb.st_mode));
    return check_private(&sb, why);
}

sdpa__file_result sdpa__dir_writable(const char *path, mode_t mode, sdpa__file_why *why)
{
    sdpa__file_result r = sdpa__dir_make(path, mode, why);
    if (r != SDPA__FILE_OK) return r;
    char probe[PATH_MAX + 48];
    snprintf(probe, sizeof probe, "%s/.sdpa-write-probe.%ld", path, (long)getpid());
    int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_BINARY | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        int e = errno;
        return fail(why, SDPA__FILE_IO, e, "cannot create files in %s: %s", path, strerror(e));
    }
    close(fd);
    unlink(probe);
    return SDPA__FILE_OK;
}
