/*
 * fault.c — fault injection for tests (SQLite-style): with the
 * fault_injection build option, sdpa__fault() counts every allocation and
 * backend call site and makes the armed one fail, so a test can walk N over
 * every failure point of a plan creation, a forward or a backward and check
 * that a status comes back, nothing leaks and the context stays usable.
 * In normal builds the sites compile away and the hooks are inert.
 */
#include "internal.h"
#include "platform.h"

#include <stdatomic.h>
#include <stdlib.h>

static _Atomic int64_t fault_countdown; /* 0 = disarmed */
static _Atomic int64_t fault_seen;
static const char *_Atomic fault_site = "";

void sdpa__fault_arm(int64_t n)
{
    atomic_store(&fault_seen, 0);
    atomic_store(&fault_site, "");
    atomic_store(&fault_countdown, n > 0 ? n : 0);
}

int64_t sdpa__fault_count(void) { return atomic_load(&fault_seen); }
const char *sdpa__fault_last_site(void) { return atomic_load(&fault_site); }

bool sdpa__fault(const char *site)
{
    atomic_fetch_add(&fault_seen, 1);
    int64_t c = atomic_load(&fault_countdown);
    while (c > 0) {
        if (atomic_compare_exchange_weak(&fault_countdown, &c, c - 1)) {
            if (c == 1) {
                atomic_store(&fault_site, site);
                return true;
            }
            return false;
        }
    }
    return false;
}

void *sdpa__malloc(size_t bytes)
{
    if (SDPA__FAULT("malloc")) return NULL;
    return malloc(bytes ? bytes : 1);
}

void *sdpa__calloc(size_t n, size_t size)
{
    if (SDPA__FAULT("calloc")) return NULL;
    return calloc(n ? n : 1, size ? size : 1);
}

void *sdpa__aligned_alloc(size_t align, size_t bytes)
{
    if (SDPA__FAULT("aligned_alloc")) return NULL;
    size_t rounded = bytes ? bytes : 1;
    if (rounded > SIZE_MAX - (align - 1)) return NULL;
    rounded = (rounded + align - 1) & ~(align - 1);
    return sdpa__os_aligned_alloc(align, rounded);
}

void sdpa__aligned_free(void *p) { sdpa__os_aligned_free(p); }
