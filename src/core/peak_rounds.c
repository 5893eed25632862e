/*
 * peak_rounds.c — the one best-of-rounds loop of the device-peak
 * micro-benchmarks (the backends' measure_peak slots: cpu_peak.c, cl_peak.c,
 * vk_peak.c), declared in backend.h. The backend supplies one timed run of a
 * given size; this file calibrates the size until a run takes >= 10 ms,
 * scales it so each of SDPA__PEAK_ROUNDS runs takes about seconds / ROUNDS,
 * and keeps the best rate (short rounds raise the odds that one of them runs
 * undisturbed by other load).
 */
#include "backend.h"
#include "internal.h"

sdpa_status sdpa__peak_rounds(sdpa__peak_run_fn run, void *user, double start, double seconds,
                              double *gflops)
{
    double size = start >= 1 ? start : 1, t = 0, flops = 0;
    int full = 0;
    *gflops = 0;
    if (!(seconds > 0)) seconds = 0.25;
    /* Calibrate: grow until one run takes >= 10 ms, jumping close to 12 ms
     * once a run is long enough to time well. */
    for (int i = 0; i < 64; i++) {
        SDPA__TRY(run(user, size, &t, &flops, &full));
        if (t >= 0.01 || full) break;
        size = t > 0.001 ? size * (0.012 / t) + 1 : size * 8;
    }
    double f = t > 0 ? (seconds / SDPA__PEAK_ROUNDS) / t : 1.0;
    if (f > 1) size *= f;
    double best = 0;
    for (int round = 0; round < SDPA__PEAK_ROUNDS; round++) {
        SDPA__TRY(run(user, size, &t, &flops, &full));
        if (t > 0 && flops / t / 1e9 > best) best = flops / t / 1e9;
    }
    *gflops = best;
    return SDPA_OK;
}
