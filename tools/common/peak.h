/*
 * peak.h — measured fp32 FMA peak of the host CPU, for sdpa-bench's
 * "fraction of peak" column. A C micro-benchmark: independent FMA chains in
 * the widest vector unit the CPU reports at run time (AVX-512, AVX2+FMA, or
 * plain C), one pthread per requested thread, all running at once.
 */
#ifndef SDPA_TOOLS_PEAK_H
#define SDPA_TOOLS_PEAK_H

/* GFLOP/s (2 flops per FMA lane) with `threads` threads (>= 1), measured for
 * about `seconds`; 0 when it cannot be measured. `isa` (may be NULL) receives
 * a static name of the code path used: "avx512", "avx2", "scalar". */
double tp_cpu_peak_gflops(int threads, double seconds, const char **isa);

#endif /* SDPA_TOOLS_PEAK_H */
