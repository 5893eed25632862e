/*
 * platform_win32.c — platform.h for Windows (MinGW-w64; tested under Wine,
 * docs/windows.md): GetActiveProcessorCount, GlobalMemoryStatusEx,
 * %LOCALAPPDATA% folders, LockFileEx, MoveFileEx, OpenProcess,
 * LoadLibrary/GetProcAddress, GetModuleHandleExW/GetModuleFileNameW (the
 * DLL's own folder, where shipped profiles are found from). Compiled instead of platform_posix.c when the
 * host is Windows. Paths are narrow (ANSI code page) strings, as libsdpa's
 * API takes them.
 */
#include "platform.h"

#include <direct.h>
#include <errno.h>
#include <io.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>

void *sdpa__os_aligned_alloc(size_t align, size_t bytes) { return _aligned_malloc(bytes, align); }

void sdpa__os_aligned_free(void *p) { _aligned_free(p); }

/* Large pages on Windows need a privilege (SeLockMemoryPrivilege) that
 * applications rarely hold, and pin the memory: none are asked for. */
size_t sdpa__os_huge_page_size(void) { return 0; }

void sdpa__os_advise_huge(void *p, size_t bytes, size_t huge)
{
    (void)p;
    (void)bytes;
    (void)huge;
}

int sdpa__os_cpu_count(void)
{
    DWORD n = GetActiveProcessorCount(ALL_PROCESSOR_GROUPS);
    return n > 0 ? (int)(n > 1024 ? 1024 : n) : 1;
}

int64_t sdpa__os_phys_mem(void)
{
    MEMORYSTATUSEX ms = {.dwLength = sizeof ms};
    return GlobalMemoryStatusEx(&ms) ? (int64_t)ms.ullTotalPhys : 0;
}

struct timespec sdpa__os_stat_mtime(const struct stat *sb)
{
    return (struct timespec){.tv_sec = sb->st_mtime};
}

struct timespec sdpa__os_stat_ctime(const struct stat *sb)
{
    return (struct timespec){.tv_sec = sb->st_ctime};
}

bool sdpa__os_user_dir(const char *what, char *out, size_t size)
{
    const char *base = getenv("LOCALAPPDATA");
    return base && *base && snprintf(out, size, "%s\\sdpa\\%s", base, what) < (int)size;
}

bool sdpa__os_is_sep(char c) { return c == '/' || c == '\\'; }

size_t sdpa__os_root_len(const char *path)
{
    if (path[0] && path[1] == ':') return sdpa__os_is_sep(path[2]) ? 3 : 2; /* C: or C:\ */
    if (sdpa__os_is_sep(path[0]) && sdpa__os_is_sep(path[1])) { /* \\server\share\ */
        size_t i = 2;
        for (int part = 0; part < 2; part++) {
            while (path[i] && !sdpa__os_is_sep(path[i])) i++;
            if (path[i]) i++;
        }
        return i;
    }
    return 0;
}

int sdpa__os_mkdir(const char *path, mode_t mode)
{
    (void)mode;
    return _mkdir(path);
}

int sdpa__os_fsync(int fd) { return _commit(fd); }

void sdpa__os_sync_dir(const char *dir) { (void)dir; }

static int errno_of(DWORD e)
{
    switch (e) {
    case ERROR_FILE_NOT_FOUND:
    case ERROR_PATH_NOT_FOUND: return ENOENT;
    case ERROR_ACCESS_DENIED:
    case ERROR_SHARING_VIOLATION:
    case ERROR_LOCK_VIOLATION: return EACCES;
    case ERROR_NOT_ENOUGH_MEMORY:
    case ERROR_OUTOFMEMORY: return ENOMEM;
    case ERROR_DISK_FULL: return ENOSPC;
    default: return EIO;
    }
}

int sdpa__os_replace(const char *from, const char *to)
{
    if (MoveFileExA(from, to, MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH)) return 0;
    errno = errno_of(GetLastError());
    return -1;
}

void sdpa__os_unlink_in(DIR *d, const char *dir, const char *name)
{
    (void)d;
    char full[MAX_PATH + 1];
    if (snprintf(full, sizeof full, "%s\\%s", dir, name) < (int)sizeof full) _unlink(full);
}

bool sdpa__os_pid_alive(long pid)
{
    HANDLE h = OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, FALSE, (DWORD)pid);
    if (!h) return GetLastError() != ERROR_INVALID_PARAMETER; /* no such process */
    DWORD code = 0;
    bool alive = !GetExitCodeProcess(h, &code) || code == STILL_ACTIVE;
    CloseHandle(h);
    return alive;
}

long sdpa__os_euid(void) { return 0; }

bool sdpa__os_is_symlink(const char *path)
{
    (void)path;
    return false;
}

char *sdpa__os_realpath(const char *path, char *out)
{
    return _fullpath(out, path, out ? MAX_PATH : 0);
}

bool sdpa__os_module_folder(const void *addr, char *out, size_t size)
{
    HMODULE mod = NULL;
    if (!GetModuleHandleExW(GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS |
                                GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT,
                            (LPCWSTR)addr, &mod))
        return false;
    wchar_t wide[4096];
    const DWORD n = GetModuleFileNameW(mod, wide, sizeof wide / sizeof wide[0]);
    if (n == 0 || n >= sizeof wide / sizeof wide[0]) return false; /* failed or cut */
    /* libsdpa's paths are narrow strings in the ANSI code page: a name it
     * cannot spell there is not a folder it could open */
    char path[4 * MAX_PATH], full[MAX_PATH];
    BOOL lossy = FALSE;
    if (WideCharToMultiByte(CP_ACP, WC_NO_BEST_FIT_CHARS, wide, -1, path, sizeof path, NULL,
                            &lossy) <= 0 || lossy)
        return false;
    if (!_fullpath(full, path, sizeof full)) return false;
    char *sep = NULL;
    for (char *c = full; *c; c++)
        if (sdpa__os_is_sep(*c)) sep = c;
    if (!sep) return false;
    /* "C:\x.dll" and "\\server\share\x.dll" keep their root's separator */
    sep[(size_t)(sep - full) < sdpa__os_root_len(full) ? 1 : 0] = '\0';
    const int len = snprintf(out, size, "%s", full);
    return len >= 0 && (size_t)len < size;
}

int sdpa__os_setenv(const char *name, const char *value)
{
    return _putenv_s(name, value ? value : "") == 0 ? 0 : -1; /* "" removes it */
}

bool sdpa__os_make_temp_dir(const char *prefix, char *out, size_t size)
{
    char tmp[MAX_PATH + 1];
    DWORD n = GetTempPathA(sizeof tmp, tmp);
    if (n == 0 || n > MAX_PATH) return false;
    for (unsigned tries = 0; tries < 100; tries++) {
        if (snprintf(out, size, "%s%s-%08lx", tmp, prefix,
                     (unsigned long)(GetTickCount() ^ (GetCurrentProcessId() << 16) ^
                                     (tries * 2654435761u))) >= (int)size)
            return false;
        if (_mkdir(out) == 0) return true;
        if (errno != EEXIST) return false;
    }
    return false;
}

int sdpa__os_lock(int fd)
{
    HANDLE h = (HANDLE)_get_osfhandle(fd);
    OVERLAPPED ov = {0};
    if (h != INVALID_HANDLE_VALUE &&
        LockFileEx(h, LOCKFILE_EXCLUSIVE_LOCK, 0, MAXDWORD, MAXDWORD, &ov))
        return 0;
    errno = h == INVALID_HANDLE_VALUE ? EBADF : errno_of(GetLastError());
    return -1;
}

void sdpa__os_unlock(int fd)
{
    HANDLE h = (HANDLE)_get_osfhandle(fd);
    OVERLAPPED ov = {0};
    if (h != INVALID_HANDLE_VALUE) UnlockFileEx(h, 0, MAXDWORD, MAXDWORD, &ov);
}

void *sdpa__os_lib_open(const char *name, const char **reason)
{
    static _Thread_local char text[256];
    /* no error dialog box for a missing DLL: the caller reports it */
    UINT old = SetErrorMode(SEM_FAILCRITICALERRORS | SEM_NOOPENFILEERRORBOX);
    HMODULE h = LoadLibraryA(name);
    DWORD e = GetLastError();
    SetErrorMode(old);
    if (!h) {
        DWORD n = FormatMessageA(FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS, NULL,
                                 e, 0, text, sizeof text, NULL);
        while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == '\r' || text[n - 1] == '.'))
            text[--n] = '\0';
        if (n == 0) snprintf(text, sizeof text, "Windows error %lu", (unsigned long)e);
        *reason = text;
    }
    return (void *)h;
}

void (*sdpa__os_lib_sym(void *lib, const char *symbol))(void)
{
    FARPROC p = GetProcAddress((HMODULE)lib, symbol);
    void (*f)(void) = NULL;
    memcpy(&f, &p, sizeof f < sizeof p ? sizeof f : sizeof p);
    return f;
}
