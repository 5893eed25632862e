/*
 * fileio.h — the one place libsdpa reads and writes its own files (profiles,
 * the peak cache, the OpenCL binary cache, the Vulkan pipeline cache). Every
 * such file is input that someone else may have written, so:
 *   - reads open with O_NONBLOCK (a FIFO or device at the path cannot block
 *     the caller), optionally O_NOFOLLOW, then fstat the open descriptor and
 *     refuse anything but a regular file, above a size limit, or (PRIVATE)
 *     owned by another user or writable by group/others, before reading;
 *   - writes are atomic (temp file in the same folder, fsync, rename), clean
 *     up temp files that writers killed before their rename left behind, and
 *     either replace a symlink at the path or write through to its target;
 *   - folders are created with a caller's mode, and cache folders are checked
 *     to be private (owned by us, not writable by group/others).
 * No context, no logging: each call returns a kind and a reason the caller
 * turns into a status, a message or a log line. Implemented in fileio.c.
 */
#ifndef SDPA_CORE_FILEIO_H
#define SDPA_CORE_FILEIO_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Flags of sdpa__file_read / sdpa__file_write_atomic. */
enum {
    SDPA__FILE_NOFOLLOW = 1u << 0,    /* read: a symlink at the path is refused */
    SDPA__FILE_PRIVATE = 1u << 1,     /* read: owner must be us, no group/other write */
    SDPA__FILE_FOLLOW_LINK = 1u << 2, /* write: a symlink at the path is written through */
};

/* Outcome of a file call. */
typedef enum sdpa__file_result {
    SDPA__FILE_OK = 0,
    SDPA__FILE_MISSING,   /* read: no file at the path (not an error for callers) */
    SDPA__FILE_REFUSED,   /* not a regular file, untrusted owner or mode, a symlink, ... */
    SDPA__FILE_TOO_LARGE, /* read: larger than the caller's limit */
    SDPA__FILE_IO,        /* a system call failed (why holds strerror) */
    SDPA__FILE_NO_MEMORY,
} sdpa__file_result;

/* Why a call failed, for messages: "is a FIFO, not a regular file". */
typedef struct sdpa__file_why {
    int err;        /* errno of a failed system call, else 0 */
    char text[160];
} sdpa__file_why;

/* Reads the whole regular file at path when it is at most `limit` bytes.
 * *data is malloc'd with a NUL after the last byte (*len bytes). A file that
 * grows while being read is cut at its size when opened. why may be NULL. */
sdpa__file_result sdpa__file_read(const char *path, size_t limit, unsigned flags, char **data,
                                  size_t *len, sdpa__file_why *why);

/* Replaces the file at path with data[0..n), atomically: writes
 * "<target>.tmp.<pid>" (mode `mode`, O_EXCL | O_NOFOLLOW), fsyncs it and
 * renames it over the target. Before that, temp files of the same target
 * whose writer process no longer exists are removed. The target is path
 * itself, or with SDPA__FILE_FOLLOW_LINK, when path is a symlink, the file
 * it resolves to (a dangling link is refused). The folder must exist. */
sdpa__file_result sdpa__file_write_atomic(const char *path, const void *data, size_t n,
                                          mode_t mode, unsigned flags, sdpa__file_why *why);

/* Opens (creating with mode 0644) the lock file at path for flock: O_NONBLOCK,
 * O_NOFOLLOW, refused unless a regular file. Returns the fd or -1. */
int sdpa__file_open_lock(const char *path, sdpa__file_why *why);

/* Blocks until this process holds the exclusive lock on a descriptor from
 * sdpa__file_open_lock (flock; LockFileEx on Windows): 0, or -1 with errno.
 * sdpa__file_unlock releases it (closing the descriptor also does). */
int sdpa__file_lock(int fd);
void sdpa__file_unlock(int fd);

/* mkdir -p: every missing component is created with `mode`; existing ones
 * are left as they are. OK when path is a directory afterwards. */
sdpa__file_result sdpa__dir_make(const char *path, mode_t mode, sdpa__file_why *why);

/* REFUSED unless path is a directory owned by the effective user and not
 * writable by group or others (what a cache folder must be to be trusted). */
sdpa__file_result sdpa__dir_check_private(const char *path, sdpa__file_why *why);

/* Creates path (mkdir -p, `mode`) and proves a file can be created in it
 * (a probe file, removed at once): read-only mounts and folders refuse here,
 * also for root, for whom permission bits do not. */
sdpa__file_result sdpa__dir_writable(const char *path, mode_t mode, sdpa__file_why *why);

/* The folder part of path ("." when there is none) into out. */
bool sdpa__path_dir(const char *path, char *out, size_t size);

#endif /* SDPA_CORE_FILEIO_H */
