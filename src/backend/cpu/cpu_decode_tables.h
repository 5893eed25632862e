/*
 * cpu_decode_tables.h — the decode kernels' entry points, shared by the ISA
 * files (cpu_kernels_avx512.c, cpu_kernels_avx2.c, cpu_kernels_neon.c), each of which includes
 * it once after defining, always-inline:
 *   dots_kv_block(NI, M, K, A, dtype, B, ldb, C, ldc)  NI = 1..4 rows
 *   pv_kv_block(NR, n, c0, Dv, K, P, ldp, V, dtype, C, ldc, c_scale)
 *       NR = 1..4 rows, n = 1..PV_KV_COLS columns from column c0 of V's
 *       rows of Dv columns
 * (A and V: sdpa__cpu_rows, the row addresses; the block types' rows are
 * blocks of 32 elements, which the kernels dequantize in registers)
 * and PV_KV_COLS (the columns one pv_kv_block covers). It specialises the
 * blocks for every row count and dtype (f32, f16, bf16, q8_0, q4_0: the dtype is a
 * constant inside, so the conversion is chosen at compile time) and defines
 * the table entries decode_dots_kv and decode_pv_kv (sdpa__cpu_kernels'
 * dots_kv / pv_kv), which split the rows into blocks of 4 (and pv_kv's
 * columns into blocks of PV_KV_COLS) and pick the specialisation. Of
 * pv_kv's blocks only the first gets V's `next` table (sdpa__cpu_rows), so
 * those rows are prefetched once; pv_kv_block passes it to its first walk
 * over the keys only.
 */
#ifndef PV_KV_COLS
#error "define PV_KV_COLS, dots_kv_block and pv_kv_block before including cpu_decode_tables.h"
#endif

#define DOTS_KV(NI, DT)                                                                      \
    static void dots_kv_##NI##_##DT(int M, int K, const sdpa__cpu_rows *A, const float *B,     \
                                    ptrdiff_t ldb, float *C, ptrdiff_t ldc)                   \
    {                                                                                        \
        dots_kv_block(NI, M, K, A, SDPA_DTYPE_##DT, B, ldb, C, ldc);                         \
    }
#define DOTS_KV_DT(DT) DOTS_KV(1, DT) DOTS_KV(2, DT) DOTS_KV(3, DT) DOTS_KV(4, DT)
DOTS_KV_DT(F32)
DOTS_KV_DT(F16)
DOTS_KV_DT(BF16)
DOTS_KV_DT(Q8_0)
DOTS_KV_DT(Q4_0)

typedef void (*dots_kv_fn)(int, int, const sdpa__cpu_rows *, const float *, ptrdiff_t, float *,
                           ptrdiff_t);
#define DOTS_KV_ROW(DT) {dots_kv_1_##DT, dots_kv_2_##DT, dots_kv_3_##DT, dots_kv_4_##DT}
static const dots_kv_fn dots_kv_table[5][4] = {DOTS_KV_ROW(F32), DOTS_KV_ROW(F16),
                                               DOTS_KV_ROW(BF16), DOTS_KV_ROW(Q8_0),
                                               DOTS_KV_ROW(Q4_0)};

#define PV_KV(NR, DT)                                                                         \
    static void pv_kv_##NR##_##DT(int N, int c0, int Dv, int K, const float *P, ptrdiff_t ldp, \
                                  const sdpa__cpu_rows *V, float *C, ptrdiff_t ldc,           \
                                  const float *cs)                                            \
    {                                                                                         \
        pv_kv_block(NR, N, c0, Dv, K, P, ldp, V, SDPA_DTYPE_##DT, C, ldc, cs);                \
    }
#define PV_KV_DT(DT) PV_KV(1, DT) PV_KV(2, DT) PV_KV(3, DT) PV_KV(4, DT)
PV_KV_DT(F32)
PV_KV_DT(F16)
PV_KV_DT(BF16)
PV_KV_DT(Q8_0)
PV_KV_DT(Q4_0)

typedef void (*pv_kv_fn)(int, int, int, int, const float *, ptrdiff_t, const sdpa__cpu_rows *,
                         float *, ptrdiff_t, const float *);
#define PV_KV_ROW(DT) {pv_kv_1_##DT, pv_kv_2_##DT, pv_kv_3_##DT, pv_kv_4_##DT}
static const pv_kv_fn pv_kv_table[5][4] = {PV_KV_ROW(F32), PV_KV_ROW(F16), PV_KV_ROW(BF16),
                                           PV_KV_ROW(Q8_0), PV_KV_ROW(Q4_0)};

static int dt_index(sdpa_dtype dt)
{
    switch (dt) {
    case SDPA_DTYPE_F32: return 0;
    case SDPA_DTYPE_F16: return 1;
    case SDPA_DTYPE_Q8_0: return 3;
    case SDPA_DTYPE_Q4_0: return 4;
    default: return 2;
    }
}

static void decode_dots_kv(int M, int N, int K, const sdpa__cpu_rows *A, sdpa_dtype dtype,
                           const float *B, ptrdiff_t ldb, float *C, ptrdiff_t ldc)
{
    for (int i0 = 0; i0 < N; i0 += 4) {
        const int ni = N - i0 < 4 ? N - i0 : 4;
        dots_kv_table[dt_index(dtype)][ni - 1](M, K, A, B + i0 * ldb, ldb, C + i0, ldc);
    }
}

/* Keys per pass of decode_pv_kv over V's column chunks: the rows the first
 * chunk brought into L1 are still there when the next chunks read them. */
enum { PV_KV_KEYS = 64 };

static void decode_pv_kv(int M, int N, int K, const float *P, ptrdiff_t ldp,
                         const sdpa__cpu_rows *V, sdpa_dtype dtype, float *C, ptrdiff_t ldc,
                         const float *c_scale)
{
    for (int k0 = 0; k0 < K || k0 == 0; k0 += PV_KV_KEYS) {
        const int kn = K - k0 < PV_KV_KEYS ? K - k0 : PV_KV_KEYS;
        /* the first block's walk prefetches V's `next` and `far` rows, the
         * others not */
        const sdpa__cpu_rows vk = {V->at + k0,  V->n - k0,      V->shift,
                                   V->paged,    V->next,        V->next_bytes,
                                   V->next_off + k0, V->far,    V->far_bytes},
                             vrest = {V->at + k0, V->n - k0, V->shift, V->paged, NULL, 0, 0, 0, 0};
        const float *cs = k0 == 0 ? c_scale : NULL; /* the rescale once */
        for (int n0 = 0; n0 < N; n0 += PV_KV_COLS) {
            const int nn = N - n0 < PV_KV_COLS ? N - n0 : PV_KV_COLS;
            for (int r0 = 0; r0 < M; r0 += 4) {
                const int nr = M - r0 < 4 ? M - r0 : 4;
                pv_kv_table[dt_index(dtype)][nr - 1](nn, n0, N, kn, P + r0 + k0 * ldp, ldp,
                                                     n0 == 0 && r0 == 0 ? &vk : &vrest,
                                                     C + r0 * ldc + n0, ldc,
                                                     cs ? cs + r0 : NULL);
            }
        }
    }
}
