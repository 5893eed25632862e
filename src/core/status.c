/*
 * status.c — the status table expanded into strings, version queries and the
 * small name functions of the public API (dtypes, backends, statistics).
 * Everything here is constant data: thread-safe by construction.
 */
#include "internal.h"

#include <strings.h>

unsigned sdpa_version(void) { return SDPA_VERSION_NUMBER; }

#define SDPA__STR2(x) #x
#define SDPA__STR(x) SDPA__STR2(x)
const char *sdpa_version_string(void)
{
    return SDPA__STR(SDPA_VERSION_MAJOR) "." SDPA__STR(SDPA_VERSION_MINOR) "."
        SDPA__STR(SDPA_VERSION_PATCH);
}

const char *sdpa_status_string(sdpa_status status)
{
    switch (status) {
#define SDPA_X_MSG(name, value, message) case name: return message;
        SDPA_STATUS_TABLE(SDPA_X_MSG)
#undef SDPA_X_MSG
    }
    return "unknown status";
}

const char *sdpa_status_name(sdpa_status status)
{
    switch (status) {
#define SDPA_X_NAME(name, value, message) case name: return #name;
        SDPA_STATUS_TABLE(SDPA_X_NAME)
#undef SDPA_X_NAME
    }
    return "SDPA_UNKNOWN";
}

size_t sdpa_dtype_size(sdpa_dtype dtype)
{
    switch (dtype) {
    case SDPA_DTYPE_F32: return 4;
    case SDPA_DTYPE_F16: return 2;
    case SDPA_DTYPE_BF16: return 2;
    case SDPA_DTYPE_U8: return 1;
    case SDPA_DTYPE_I32: return 4;
    case SDPA_DTYPE_Q8_0: return 34;
    case SDPA_DTYPE_Q4_0: return 18;
    default: return 0;
    }
}

int64_t sdpa_dtype_block_elems(sdpa_dtype dtype)
{
    switch (dtype) {
    case SDPA_DTYPE_Q8_0:
    case SDPA_DTYPE_Q4_0: return 32;
    default: return sdpa_dtype_size(dtype) ? 1 : 0;
    }
}

const char *sdpa_dtype_name(sdpa_dtype dtype)
{
    switch (dtype) {
    case SDPA_DTYPE_NONE: return "none";
    case SDPA_DTYPE_F32: return "f32";
    case SDPA_DTYPE_F16: return "f16";
    case SDPA_DTYPE_BF16: return "bf16";
    case SDPA_DTYPE_U8: return "u8";
    case SDPA_DTYPE_I32: return "i32";
    case SDPA_DTYPE_Q8_0: return "q8_0";
    case SDPA_DTYPE_Q4_0: return "q4_0";
    }
    return "?";
}

static const char *const backend_names[] = {"auto", "reference", "cpu", "opencl",
                                             "vulkan"};

const char *sdpa_backend_name(sdpa_backend_kind kind)
{
    if (kind == SDPA_BACKEND_DEFAULT) return "default";
    if ((int)kind < 0 || (int)kind >= SDPA_BACKEND_COUNT) return "?";
    return backend_names[kind];
}

sdpa_status sdpa_backend_parse(const char *name, sdpa_backend_kind *out)
{
    if (!name || !out) return SDPA_ERR_NULL;
    for (int i = 0; i < SDPA_BACKEND_COUNT; i++) {
        if (strcasecmp(name, backend_names[i]) == 0) {
            *out = (sdpa_backend_kind)i;
            return SDPA_OK;
        }
    }
    if (strcasecmp(name, "default") == 0) {
        *out = SDPA_BACKEND_DEFAULT;
        return SDPA_OK;
    }
    return SDPA_ERR_INVALID_ARG;
}

static const char *const stat_names[SDPA_STAT_COUNT] = {
    "logit_mean",   "logit_std",      "logit_min",         "logit_max",
    "entropy_mean", "entropy_min",    "pmax_mean",         "saturated_frac",
    "jacobian_fro_mean", "sink_mass", "empty_rows"};

const char *sdpa_stat_name(int stat)
{
    if (stat < 0 || stat >= SDPA_STAT_COUNT) return NULL;
    return stat_names[stat];
}
