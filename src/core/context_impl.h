/*
 * context_impl.h — the private layout of contexts, buffers and plans, shared
 * by the front-end files in src/core only (backends see the accessors in
 * backend.h, never these structs).
 *
 * A context has a primary backend slot and, in AUTO mode, a lazily started
 * CPU slot that plans fall back to when the device cannot build or run them.
 * Every call into a backend goes through the wrappers in dispatch.c, which
 * pass the called slot's state to the backend.
 */
#ifndef SDPA_CORE_CONTEXT_IMPL_H
#define SDPA_CORE_CONTEXT_IMPL_H

#include "internal.h"

#define SDPA__PLAN_CACHE_SIZE 8
#define SDPA__MESSAGE_MAX 1024

typedef struct sdpa__slot {
    const sdpa__backend *backend;
    void *state;
    bool started;
} sdpa__slot;

/* Dtype, shape and presence of every tensor a plan was made for. */
typedef struct sdpa__shape_key {
    sdpa__problem problem;
    sdpa_dtype dtypes[SDPA__T_COUNT];
    int64_t shapes[SDPA__T_COUNT][4];
} sdpa__shape_key;

struct sdpa_plan {
    sdpa_context *ctx;
    sdpa__slot *slot;       /* the primary slot or the CPU fallback slot */
    sdpa__shape_key key;
    unsigned flags;
    void *state;
    bool fallback;          /* running on the CPU fallback slot */
    char tile_source[64];   /* where the tile came from: "forced", "profile",
                               "shipped profile" or "default" (plan.c), plus
                               " (family <key>)" for another device's record */
};

struct sdpa_buffer {
    sdpa_context *ctx;
    void *handle;
    size_t size;
    bool owned;
};

struct sdpa_context {
    sdpa__slot primary;
    sdpa__slot fallback;    /* CPU, AUTO mode only, started on first need */
    bool auto_mode;
    char device_name[256];
    int device_index;
    int threads;
    int log_level;
    sdpa_log_fn log_fn;
    void *log_user;
    char *profile_dir;
    char *cache_dir;
    /* last error */
    sdpa_status err_status;
    int64_t err_native;
    char err_message[SDPA__MESSAGE_MAX];
    char *build_log;
    /* sdpa_attention_forward's plans, reused round-robin */
    sdpa_plan *plan_cache[SDPA__PLAN_CACHE_SIZE];
    int plan_cache_next;
};

/* Shared by the context and the one-call path. */
sdpa_status sdpa__slot_start(sdpa_context *ctx, sdpa__slot *slot,
                             const sdpa__backend *backend, int device_index);
void sdpa__slot_stop(sdpa_context *ctx, sdpa__slot *slot);



/* context.c: allocation with options + environment applied (no backend
 * started), and the AUTO CPU fallback slot. */
sdpa_status sdpa__context_alloc(const sdpa_context_options *options,
                                sdpa_context **out, sdpa_backend_kind *kind,
                                const char **selector);
sdpa_status sdpa__context_fallback(sdpa_context *ctx, sdpa__slot **slot);
/* oneshot.c: destroys the plans sdpa_attention_forward cached. */
void sdpa__plan_cache_clear(sdpa_context *ctx);
#endif /* SDPA_CORE_CONTEXT_IMPL_H */
