/*
 * cl_gemm.c — CLBlast's own GEMM kernel parameters, tuned for the unfused
 * OpenCL path (issue 6: "tune CLBlast's own GEMM parameters through its C API
 * override call, stored in the same profile").
 *
 * CLBlast picks its Xgemm parameters from a database by vendor and device
 * name; devices it does not know (PoCL here) get generic ones, measured 3-8x
 * slower than a register-blocked set on this machine. libsdpa keeps a small
 * table of parameter sets; the tuner measures the unfused path under each set
 * that fits the device and records the winner's index in the profile
 * (SDPA_TILE_OPENCL_GEMM_PARAMS, include/sdpa_opencl.h), a backend tile parameter.
 *
 * Invariants: CLBlastOverrideParameters is process-wide per device, so this
 * file keeps which set is in force per cl_device_id (under a mutex) and calls
 * CLBlast only to change it; a change takes effect at CLBlast's next call
 * (it rebuilds its kernel: seconds on a cold PoCL cache). Set 0 means CLBlast's
 * own parameters, which cannot be restored once a set was applied. Every
 * set obeys CLBlast's Xgemm constraints (MWG % (MDIMC*VWM) == 0, NWG %
 * (NDIMC*VWN) == 0, MWG % (MDIMA*VWM) == 0, NWG % (NDIMB*VWN) == 0, KWG %
 * (MDIMC*NDIMC/MDIMA) == 0, KWG % (MDIMC*NDIMC/NDIMB) == 0) and forces the
 * indirect GEMM (XGEMM_MIN_INDIRECT_SIZE = 0) so the set is what runs.
 */
#include "cl_gemm.h"

#include <pthread.h>
#include <string.h>

#ifdef SDPA_HAVE_CLBLAST
#include "clblast_api.h"
#endif

enum { NPARAM = 16 };

static const char *const xgemm_names[NPARAM] = {
    "GEMMK", "KREG", "KWG", "KWI", "MDIMA", "MDIMC", "MWG", "NDIMB",
    "NDIMC", "NWG", "SA", "SB", "STRM", "STRN", "VWM", "VWN"};

typedef struct gemm_set {
    const char *label;
    bool gpu; /* local-memory tiles (SA/SB = 1): GPU-style devices */
    size_t v[NPARAM];
} gemm_set;

/* Index 0 is CLBlast's own parameters (no entry). Measured on PoCL (this
 * machine, 1024x1024x64 and 1024x64x1024): set 1 36/25 GFLOP/s, set 2 30/21,
 * CLBlast's generic parameters 4.6/8. */
static const gemm_set sets[] = {
    {"register 64x64 vec 4/4, no local memory", false,
     {0, 1, 16, 2, 8, 8, 64, 8, 8, 64, 0, 0, 0, 0, 4, 4}},
    {"register 64x64 vec 8/8, no local memory", false,
     {0, 1, 16, 2, 4, 4, 64, 8, 8, 64, 0, 0, 0, 0, 8, 8}},
    {"local 64x64, 16x16 threads", true,
     {0, 1, 32, 2, 16, 16, 64, 16, 16, 64, 1, 1, 1, 1, 4, 2}},
    {"local 128x128, 16x16 threads, vec 4/4", true,
     {0, 1, 16, 2, 16, 16, 128, 16, 16, 128, 1, 1, 1, 1, 4, 4}},
};
#define NSETS ((int)(sizeof sets / sizeof sets[0]))

int sdpa__cl_gemm_count(void) { return NSETS; }

const char *sdpa__cl_gemm_label(int k)
{
    return k >= 1 && k <= NSETS ? sets[k - 1].label : "CLBlast's own parameters";
}

bool sdpa__cl_gemm_fits(int k, const sdpa__cl_props *d, bool gpu)
{
    if (k < 1 || k > NSETS) return false;
    const gemm_set *s = &sets[k - 1];
    if (s->gpu != gpu) return false;
    size_t mdimc = s->v[5], ndimc = s->v[8], kwg = s->v[2], mwg = s->v[6], nwg = s->v[9];
    if (mdimc * ndimc > d->max_wg) return false;
    size_t local = (s->v[10] ? kwg * mwg : 0) + (s->v[11] ? kwg * nwg : 0);
    return local * sizeof(float) <= d->local_mem;
}

uint64_t sdpa__cl_gemm_hash(uint64_t h)
{
    for (int k = 0; k < NSETS; k++) h = sdpa__cl_hash(h, sets[k].v, sizeof sets[k].v);
    return h;
}

/* ---- which set is in force, per device (process-wide) ---------------------- */

enum { MAX_DEVICES = 64 };
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct { cl_device_id device; int set; } in_force[MAX_DEVICES];
static int n_devices;

static int find(cl_device_id device)
{
    for (int i = 0; i < n_devices; i++)
        if (in_force[i].device == device) return i;
    return -1;
}

int sdpa__cl_gemm_current(cl_device_id device)
{
    pthread_mutex_lock(&lock);
    int i = find(device), k = i >= 0 ? in_force[i].set : 0;
    pthread_mutex_unlock(&lock);
    return k;
}

sdpa_status sdpa__cl_gemm_apply(sdpa_context *ctx, cl_device_id device, int k)
{
    if (k < 0 || k > NSETS)
        return SDPA__FAIL(ctx, SDPA_ERR_INVALID_ARG,
                          "opencl: tile.gemm_params %d outside 0..%d", k, NSETS);
    pthread_mutex_lock(&lock);
    int i = find(device), cur = i >= 0 ? in_force[i].set : 0;
    sdpa_status s = SDPA_OK;
    if (cur == k) {
        /* already in force */
    } else if (k == 0) {
        s = SDPA__FAIL(ctx, SDPA_ERR_UNSUPPORTED,
                       "opencl: tile.gemm_params 0 (CLBlast's own parameters): libsdpa set "
                       "%d is already in force for this device in this process, and CLBlast "
                       "cannot go back to its own", cur);
    } else if (i < 0 && n_devices == MAX_DEVICES) {
        s = SDPA__FAIL(ctx, SDPA_ERR_UNSUPPORTED,
                       "opencl: CLBlast parameters already set for %d devices", MAX_DEVICES);
    } else {
#ifdef SDPA_HAVE_CLBLAST
        const char *routine[] = {"XGEMM_MIN_INDIRECT_SIZE"};
        size_t zero[] = {0};
        CLBlastStatusCode c = CLBlastOverrideParameters(
            device, "Xgemm", CLBlastPrecisionSingle, NPARAM, (const char **)xgemm_names,
            sets[k - 1].v);
        if (c == CLBlastSuccess) {
            /* the Xgemm parameters are in force from here on */
            if (i < 0) i = n_devices++, in_force[i].device = device;
            in_force[i].set = k;
            c = CLBlastOverrideParameters(device, "GemmRoutine", CLBlastPrecisionSingle, 1,
                                          routine, zero);
        }
        if (c != CLBlastSuccess)
            s = SDPA__FAIL_NATIVE(ctx, SDPA_ERR_DEVICE, (int)c,
                                  "opencl: CLBlastOverrideParameters (set %d, %s) failed "
                                  "(status %d)", k, sets[k - 1].label, (int)c);
#else
        s = SDPA__FAIL(ctx, SDPA_ERR_UNSUPPORTED,
                       "opencl: tile.gemm_params needs CLBlast, which this build does not have");
#endif
    }
    pthread_mutex_unlock(&lock);
    return s;
}
