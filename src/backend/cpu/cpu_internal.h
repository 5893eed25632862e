/*
 * cpu_internal.h — shared declarations of the fast CPU backend:
 * the thread pool, the table of vector kernels (portable, AVX2, AVX-512), the
 * backend's context and plan state, and the entry points of the forward,
 * backward and decode drivers.
 *
 * Layout conventions used by every driver (see docs/cpu.md):
 *  - Scores are held transposed, S^T[j][i] (key j, query row i), in a tile of
 *    bk keys x bq rows with leading dimension bq, so the online softmax runs
 *    down the columns with vertical vector ops (no horizontal reductions).
 *  - Q tiles are packed transposed (D x bq) once per task, K and V tiles
 *    row-major (bk x D, bk x Dv) once per key tile, always as f32.
 */
#ifndef SDPA_CPU_INTERNAL_H
#define SDPA_CPU_INTERNAL_H

#include "internal.h"

#include <stdatomic.h>
#include <stddef.h>

/* The CPU's hint for a spin-wait loop (the pool's spins, the read
 * reference's barrier). */
#if defined(__x86_64__) || defined(__i386__)
#define sdpa__cpu_relax() __builtin_ia32_pause() /* no -msse needed (i686 builds) */
#elif defined(__aarch64__) || defined(__arm__)
#define sdpa__cpu_relax() __asm__ __volatile__("yield")
#else
#define sdpa__cpu_relax() ((void)0)
#endif

/* ---- thread pool (cpu_pool.c); idle threads spin SDPA_CPU_SPIN_US (default
 * 200) microseconds before they sleep ---------------------------------------- */
typedef struct sdpa__cpu_pool sdpa__cpu_pool;
typedef void (*sdpa__cpu_job)(void *arg, int tid, int nthreads);
sdpa_status sdpa__cpu_pool_create(sdpa_context *ctx, int nthreads,
                                  sdpa__cpu_pool **out);
void sdpa__cpu_pool_destroy(sdpa__cpu_pool *pool);
void sdpa__cpu_pool_run(sdpa__cpu_pool *pool, sdpa__cpu_job job, void *arg);
/* The same for jobs whose threads take their work from a shared counter (any
 * thread may do any part): workers that have not started when the caller's
 * own call returns are skipped, not waited for (cpu_pool.c). */
void sdpa__cpu_pool_run_any(sdpa__cpu_pool *pool, sdpa__cpu_job job, void *arg);
int sdpa__cpu_pool_size(const sdpa__cpu_pool *pool);
/* Times a worker stopped spinning (SDPA_CPU_SPIN_US ran out with no new
 * run) and went to the condition variable: a test and diagnostic counter. */
long long sdpa__cpu_pool_sleeps(sdpa__cpu_pool *pool);
/* Test and diagnostic counters since the pool's creation. */
typedef struct sdpa__cpu_pool_counts {
    long long wakeups;     /* runs that found a worker asleep and had to wake it */
    long long timed_waits; /* pauses a worker slept through with a timed wait for
                              a predicted call (wake-ahead) */
    long long descheduled; /* spins that found their thread descheduled (the
                              second within 32 runs turns spinning off) */
    long long stalls;      /* spins stalled without a switch to another thread
                              (Linux: waited out, no strike) */
    int64_t late_ns;       /* the timer lateness the workers measured */
    int nospin;            /* runs left with spinning off */
} sdpa__cpu_pool_counts;
void sdpa__cpu_pool_counts_get(sdpa__cpu_pool *pool, sdpa__cpu_pool_counts *out);
/* Wake-ahead on (the default when the spin is not 0) or off; forgets the
 * history. Tests only. */
void sdpa__cpu_pool_set_predict(sdpa__cpu_pool *pool, bool on);
/* Wake-ahead's prediction (cpu_pool.c), pure: from the pauses iv[0..n-1]
 * before the last n calls (ns from the end of a call to the start of the
 * next, oldest first; the last 8 count), whether the next call is
 * predictable (at least 4, and all but a quarter of them, within 1/8 of the
 * shortest of those, at most 100 ms, their mean at least 2 ms) and then the
 * window in which a sleeping worker spins for it, *wake to *end, ns after
 * the end of the last call: 5 % of their mean, ending where the span of
 * that length that catches most of them (from 1 % of the mean, at least
 * 50 us, before one) ends, or that much after the longest of them. */
bool sdpa__cpu_pool_predict(const int64_t *iv, int n, int64_t *wake, int64_t *end);
/* The back-off rule for a spinner found descheduled during run `gen`
 * (cpu_pool.c), pure: *last holds the previous such run + 1 (0: none) and
 * becomes gen + 1; true (spinning goes off for 64 runs) when the previous
 * one was at most 32 runs before. */
bool sdpa__cpu_pool_strike(unsigned long long *last, unsigned long long gen);
/* Whether a spinner's gap of gap_ns between two looks at the clock is a
 * strike (cpu_pool.c), pure: it must last a time slice's share (0.5 ms) and,
 * where the thread's involuntary context switches are counted (switches >=
 * 0: their rise during the gap; -1: not counted, e.g. Windows), show a
 * switch to another thread. Shorter gaps are stalls of the machine (a VM's
 * vCPU held for a moment, an interrupt), not oversubscription. */
bool sdpa__cpu_pool_gap_strikes(int64_t gap_ns, long switches);
/* Moves the calling thread off `cpu` when it runs there and its affinity
 * mask has another CPU: the mask without `cpu`, then the mask as it was
 * (cpu_pool.c; a worker leaves its creator's CPU at start). Returns whether
 * it moved; false where the system cannot say (not Linux). */
bool sdpa__cpu_leave(int cpu);

/* ---- vector kernels (cpu_kernels_generic.c, _avx2.c, _avx512.c, _neon.c) -- */
/* The K or V rows of one decode kernel call: at[j] is the address of key
 * j's row (counted from the call's first key), for j < n; n covers the
 * call's keys and then up to SDPA__CPU_KV_AHEAD_MAX more, and a tile more
 * for a paged cache (the next ones in key order, up to the task's last
 * key), which the kernels prefetch (the next tile's K while V is read:
 * sdpa__cpu_rows.next; cpu_forward.c's decode_lookahead). So a
 * paged cache is read through the block table once per page
 * (sdpa__cpu_kv_rows) and the kernels walk a whole tile across pages, and
 * their prefetch stream across pages and tiles, as on a contiguous cache. */
typedef struct sdpa__cpu_rows {
    const unsigned char *const *at;
    int n;
    /* bytes added to every address of at: V read through K's table where
     * the two share a layout (sdpa__cpu_kv_same_layout), else 0 */
    ptrdiff_t shift;
    /* rows through a block table (a paged cache), not at one stride */
    bool paged;
    /* The rows the kernel prefetches while it reads these (NULL: none;
     * sdpa__cpu_rows_prefetch_next): reading row t, row t + next_off of
     * `next`, next_bytes long. cpu_forward.c decides which: K's table
     * points at V's rows of the same keys (next_off 0), V's at K's rows of
     * the next tile (next_off = the tile's keys). */
    const struct sdpa__cpu_rows *next;
    size_t next_bytes;
    int next_off;
    /* Rows `far` on from the one being read are prefetched into L2, whole
     * (0: none; sdpa__cpu_rows_prefetch_far): cpu_forward.c's decode_next
     * sets it for contiguous f32 caches, whose streams the hardware
     * prefetchers alone keep too short; the AVX-512 and AVX2 kernels read
     * it, NEON's do not. */
    int far;
    size_t far_bytes;
} sdpa__cpu_rows;
/* Key j's row of a decode kernel call (at[j] + shift). */
static inline const unsigned char *sdpa__cpu_rows_at(const sdpa__cpu_rows *r, int j)
{
    return (const unsigned char *)((uintptr_t)r->at[j] + (uintptr_t)r->shift);
}
typedef struct sdpa__cpu_kernels {
    const char *name;
    /* C[r][n] = c0 + sum_k A(r,k) B[k][n] for r < M, n < N, k < K, where
     * A(r,k) = A[r*a_rs + k*a_cs], B rows have stride ldb, C rows ldc, and
     * c0 = 0 (accumulate 0), C[r][n] (accumulate 1), or C[r][n] * c_scale[r]
     * (accumulate 1 with c_scale != NULL: the online-softmax rescale). */
    void (*gemm)(int M, int N, int K, const float *A, ptrdiff_t a_rs,
                 ptrdiff_t a_cs, const float *B, ptrdiff_t ldb, float *C,
                 ptrdiff_t ldc, int accumulate, const float *c_scale);
    /* C[j*ldc + i] = dot(A + j*lda, B + i*ldb) over K, for j < M, i < N.
     * Used when N (query rows) is too small to fill a vector. */
    void (*dots)(int M, int N, int K, const float *A, ptrdiff_t lda,
                 const float *B, ptrdiff_t ldb, float *C, ptrdiff_t ldc);
    /* m[i] = max(m[i], max_j S[j*ld + i]) for j < nk, i < nq. */
    void (*colmax)(const float *S, ptrdiff_t ld, int nk, int nq, float *m);
    /* S[j*ld+i] = exp(S[j*ld+i] - sub[i]); sum[i] += that, when sum != NULL.
     * exp(-inf) is exactly 0; NaN stays NaN. */
    void (*expsub)(float *S, ptrdiff_t ld, int nk, int nq, const float *sub,
                   float *sum);
    /* dst[e] = (float)src[e*stride] for e < n. */
    void (*load_row)(const void *src, sdpa_dtype dtype, int64_t stride, int n,
                     float *dst);
    /* dP[j*ld+i] = P (dP - dr[i]) (1 - th^2), with th = th[j*ld+i] or 0 when
     * th is NULL, and exactly 0 where P is 0 (dropped keys). */
    void (*dsoft)(const float *P, float *dP, const float *th, ptrdiff_t ld, int nk,
                  int nq, const float *dr);
    /* Per-column sums of one score tile for the statistics, over kept keys
     * (S > -inf), with P = e^{S - M[i]} relative to the running maximum M:
     * t[e*tld + i] for e = 0..CPU_TS_N-1 as named by CPU_TS_*. The P sums
     * leave out keys with S == M (P = 1 there; they are counted in TIES), so
     * saturated rows keep the digits of the small terms. */
    void (*tilestats)(const float *S, const float *P, const float *M, ptrdiff_t ld, int nk,
                      int nq, float *t, ptrdiff_t tld);
    /* S[j*ld+i] = -inf unless lo[i] <= j < hi[i] (the band, relative to the
     * tile), for j < nk, i < nq. */
    void (*band)(float *S, ptrdiff_t ld, int nk, int nq, const int32_t *lo,
                 const int32_t *hi);
    /* Whether any of n rows (stride ld) of m floats is Inf or NaN. */
    bool (*nonfinite)(const float *x, ptrdiff_t ld, int n, int m);
    /* dst[e*stride] = src[e] * mul, converted to dtype, for e < n. */
    void (*store_row)(const float *src, float mul, void *dst, sdpa_dtype dtype,
                      int64_t stride, int n);
    /* dst[c*ldd + r] = src[r*lds + c] * mul for r < R, c < C: a block of Q
     * rows transposed (D x rows) for the forward's S^T = K Q^T, times the
     * head's scale when the rows come straight from the caller. */
    void (*transpose)(int R, int C, const float *src, ptrdiff_t lds, float *dst,
                      ptrdiff_t ldd, float mul);
    /* Decode (optional; NULL = K/V tiles are packed to f32 first): K and V
     * rows read in their storage dtype (f32, f16, bf16 with a unit element
     * stride; q8_0, q4_0 whole blocks) and converted in registers while
     * streaming, for sub-blocks under 16 rows. The rows are A->at[j] /
     * V->at[k] (sdpa__cpu_rows: contiguous or through a block table, pages
     * crossed anywhere, even inside a block of 4 keys); the rows of the table
     * past M / K are the next ones in key order, to prefetch. dots_kv:
     * C[j*ldc + i] = dot(row j of A, B + i*ldb) over K, j < M, i < N.
     * pv_kv: C[r*ldc + n] = C[r*ldc + n] * c_scale[r] + sum_k P[r + k*ldp]
     * V(k, n), r < M, n < N, k < K (c_scale NULL: times 1). */
    void (*dots_kv)(int M, int N, int K, const sdpa__cpu_rows *A, sdpa_dtype dtype,
                    const float *B, ptrdiff_t ldb, float *C, ptrdiff_t ldc);
    void (*pv_kv)(int M, int N, int K, const float *P, ptrdiff_t ldp, const sdpa__cpu_rows *V,
                  sdpa_dtype dtype, float *C, ptrdiff_t ldc, const float *c_scale);
} sdpa__cpu_kernels;

/* gemm with K = 0, shared by the vector kernels: C = 0, C, or C * c_scale[r]. */
static inline void sdpa__cpu_gemm_k0(int M, int N, float *C, ptrdiff_t ldc, int accumulate,
                                     const float *c_scale)
{
    for (int r = 0; r < M; r++) {
        if (!accumulate)
            for (int n = 0; n < N; n++) C[r * ldc + n] = 0.0f;
        else if (c_scale)
            for (int n = 0; n < N; n++) C[r * ldc + n] *= c_scale[r];
    }
}

/* Prefetch distance of the decode kernels (dots_kv, pv_kv): rows of rowb
 * bytes about 4 KiB ahead, 8 to SDPA__CPU_KV_AHEAD_MAX rows, so f16 rows are
 * fetched as far ahead in time as f32 ones. */
#define SDPA__CPU_KV_AHEAD_MAX 64
static inline int sdpa__cpu_kv_ahead(size_t rowb)
{
    const size_t rows = 4096 / (rowb + 1) + 1;
    return rows < 8 ? 8 : rows > SDPA__CPU_KV_AHEAD_MAX ? SDPA__CPU_KV_AHEAD_MAX : (int)rows;
}

/* Storage units of the K/V dtypes (what strides count): bytes per unit and
 * elements per unit (32 for the block types q8_0 and q4_0, 1 otherwise). */
static inline size_t sdpa__cpu_unit_bytes(sdpa_dtype dt)
{
    return dt == SDPA_DTYPE_F32 ? 4 : dt == SDPA_DTYPE_Q8_0 ? 34 : dt == SDPA_DTYPE_Q4_0 ? 18 : 2;
}
static inline int sdpa__cpu_unit_elems(sdpa_dtype dt)
{
    return dt == SDPA_DTYPE_Q8_0 || dt == SDPA_DTYPE_Q4_0 ? 32 : 1;
}

/* The AVX-512 decode kernels' (and AVX2 pv_kv_rows') software prefetch: bytes [off, off + len) of
 * row t (read `ahead` rows from now), for rows through a block table
 * (r->paged: page breaks the hardware prefetchers cannot guess) and for the
 * block types q8_0 / q4_0 (short rows, bound by dequantizing). Rows of f32,
 * f16 and bf16 caches stored contiguously are not prefetched this way (into
 * L1, 4 KiB ahead): on a Zen 4 host that slowed contiguous f32 decode by
 * 1.1-1.5x (the prefetches compete with the loads for the miss buffers),
 * while q8_0 ran 1.1-1.2x slower without, and paged q8_0 1.6-2x. Those go
 * into L2 instead: f16 / bf16 K `ahead` rows on (sdpa__cpu_rows_prefetch_l2),
 * f32 K and V 32 KiB on (sdpa__cpu_rows_prefetch_far). */
static inline void sdpa__cpu_rows_prefetch(const sdpa__cpu_rows *r, int t, sdpa_dtype dt,
                                           size_t off, size_t len)
{
    if ((!r->paged && sdpa__cpu_unit_elems(dt) == 1) || t >= r->n) return;
    for (size_t o = 0; o < len; o += 64) __builtin_prefetch(sdpa__cpu_rows_at(r, t) + off + o, 0, 3);
}

/* Whether dots_kv prefetches the K rows of r ahead into L2 rather than L1:
 * contiguous f16 / bf16 rows (the rule of the AVX-512 and AVX2 kernels;
 * cpu_forward.c's decode_next_k has the figures). */
static inline bool sdpa__cpu_k_ahead_l2(const sdpa__cpu_rows *r, sdpa_dtype dt)
{
    return !r->paged && (dt == SDPA_DTYPE_F16 || dt == SDPA_DTYPE_BF16);
}

/* Row t of r into L2 (locality 2), whatever its layout (nothing past the
 * table's rows): dots_kv's prefetch where sdpa__cpu_k_ahead_l2. */
static inline void sdpa__cpu_rows_prefetch_l2(const sdpa__cpu_rows *r, int t, size_t len)
{
    if (t >= r->n) return;
    for (size_t o = 0; o < len; o += 64) __builtin_prefetch(sdpa__cpu_rows_at(r, t) + o, 0, 2);
}

/* The decode kernels' prefetch of the other stream, into L2 (locality 2):
 * reading row t of r, row t + r->next_off of r->next (see sdpa__cpu_rows;
 * nothing past that table's rows). The AVX-512 and AVX2 dots_kv call it for
 * each K row they read (f32 / f16 / bf16: the block types' dots_kv,
 * dequantize-bound, do not), the AVX-512 pv_kv and the AVX2 pv_kv_rows for
 * each V row in their first pass over it. Which tables get a `next` is
 * cpu_forward.c's rule (decode_next), from what was measured on a Zen 4
 * host. */
static inline void sdpa__cpu_rows_prefetch_next(const sdpa__cpu_rows *r, int t)
{
    const sdpa__cpu_rows *n = r->next;
    if (!n || (t += r->next_off) >= n->n) return;
    for (size_t o = 0; o < r->next_bytes; o += 64) __builtin_prefetch(sdpa__cpu_rows_at(n, t) + o, 0, 2);
}

/* Reading row t of r, row t + r->far into L2 (locality 2), far_bytes of
 * it (nothing when far is 0 or past the table's rows). */
static inline void sdpa__cpu_rows_prefetch_far(const sdpa__cpu_rows *r, int t)
{
    if (r->far == 0 || (t += r->far) >= r->n) return;
    const unsigned char *row = sdpa__cpu_rows_at(r, t);
    for (size_t o = 0; o < r->far_bytes; o += 64) __builtin_prefetch(row + o, 0, 2);
}

/* The q8_0 / q4_0 block holding element e of rows from base (element index
 * row * row_blocks * 32 + column), with its f16 scale bits in *dh. */
static inline const unsigned char *sdpa__cpu_block_of(const void *base, sdpa_dtype dt,
                                                      ptrdiff_t e, uint16_t *dh)
{
    const unsigned char *blk = (const unsigned char *)base + (size_t)(e >> 5) * sdpa__cpu_unit_bytes(dt);
    memcpy(dh, blk, sizeof *dh);
    return blk;
}

extern const sdpa__cpu_kernels sdpa__cpu_kernels_generic;
#ifdef SDPA_CPU_HAVE_AVX2
extern const sdpa__cpu_kernels sdpa__cpu_kernels_avx2;
#endif
#ifdef SDPA_CPU_HAVE_AVX512
extern const sdpa__cpu_kernels sdpa__cpu_kernels_avx512;
#endif
#ifdef SDPA_CPU_HAVE_NEON
extern const sdpa__cpu_kernels sdpa__cpu_kernels_neon;
#endif
/* The best table this CPU runs (cpu_kernels_select.c); SDPA_CPU_KERNELS=
 * generic|avx2|avx512|neon forces one the CPU runs (a developer and test
 * switch). Writes the reason into why (cap bytes; why may be NULL) and sets
 * *ignored (may be NULL) when SDPA_CPU_KERNELS named a set it could not use. */
const sdpa__cpu_kernels *sdpa__cpu_kernels_select(char *why, size_t cap, bool *ignored);
/* The sets this build has, best first, those this CPU cannot run marked
 * ("neon, generic"): for the cpu device's details. */
void sdpa__cpu_kernels_built(char *out, size_t cap);

/* ---- K/V as the drivers read them (cpu_kv.c) ---------------------------------
 * One K or V input of a call: contiguous (k, v) or paged (k_pages, v_pages
 * through block_table), in its storage dtype (f32, f16, bf16, q8_0, q4_0).
 * Rows are addressed in place: nothing is gathered or dequantized into a
 * copy of the cache. */
typedef struct sdpa__cpu_kv {
    const unsigned char *mem;
    const sdpa__ref *ref;      /* k / v, or k_pages / v_pages */
    const sdpa__ref *table;    /* block_table (paged), else NULL */
    sdpa_dtype dt;
    size_t ubytes;             /* bytes per storage unit */
    int64_t page;              /* key slots per page (paged), else 0 */
} sdpa__cpu_kv;
/* The K (is_v false) or V source of a forward call. */
sdpa__cpu_kv sdpa__cpu_kv_source(const sdpa__problem *p, const sdpa__fwd_args *a, bool is_v);
/* A plain (unpaged) tensor read the same way: q, or K/V in the backward. */
sdpa__cpu_kv sdpa__cpu_kv_plain(const sdpa__ref *r, sdpa_dtype dt);
/* Address of key j's row of (b, hkv). */
static inline const void *sdpa__cpu_kv_row(const sdpa__cpu_kv *s, int64_t b, int64_t hkv,
                                           int64_t j)
{
    if (s->page) {
        const int32_t pg = ((const int32_t *)s->table->mem)[sdpa__at(s->table, b, 0, 0, j / s->page)];
        return s->mem + (size_t)sdpa__at(s->ref, pg, hkv, j % s->page, 0) * s->ubytes;
    }
    return s->mem + (size_t)sdpa__at(s->ref, b, hkv, j, 0) * s->ubytes;
}
/* Keys from j on (at most n) whose rows follow each other at the row stride
 * (ref->stride[2] units): up to the end of j's page when paged. */
static inline int sdpa__cpu_kv_run(const sdpa__cpu_kv *s, int64_t j, int n)
{
    if (!s->page) return n;
    const int64_t left = s->page - j % s->page;
    return left < n ? (int)left : n;
}
/* A decode task's table of row addresses, kept from one key tile to the
 * next: at[i] is key j0 + i's row for i < n. */
typedef struct sdpa__cpu_rowtab {
    const unsigned char **at;
    int64_t j0;
    int n; /* 0: holds nothing */
} sdpa__cpu_rowtab;
/* Makes t hold the rows of keys j .. j + n - 1 of (b, hkv), in key order:
 * the rows it already holds (the previous tile's look-ahead) are moved to
 * the front, only the others are looked up, one block-table look-up per
 * page (sdpa__cpu_rows). */
void sdpa__cpu_kv_rows(const sdpa__cpu_kv *s, int64_t b, int64_t hkv, int64_t j, int n,
                       sdpa__cpu_rowtab *t);
/* Whether v's rows lie at one fixed distance from k's for every (b, hkv,
 * key) (same strides, same pages), and then that distance in bytes in
 * *shift: V is then read through K's row table (sdpa__cpu_rows.shift). */
bool sdpa__cpu_kv_shift(const sdpa__cpu_kv *k, const sdpa__cpu_kv *v, ptrdiff_t *shift);
/* Key j's row of (b, hkv) as n f32 values in dst (block types dequantized). */
void sdpa__cpu_kv_load(const sdpa__cpu_kernels *k, const sdpa__cpu_kv *s, int64_t b,
                       int64_t hkv, int64_t j, int n, float *dst);
/* Element e of a q8_0 / q4_0 row (blocks of 32 from row). */
float sdpa__cpu_block_elem(const void *row, sdpa_dtype dt, int64_t e);

/* ---- backend state ---------------------------------------------------------- */
typedef struct sdpa__cpu_state {
    sdpa__cpu_pool *pool;
    const sdpa__cpu_kernels *k;
    int nthreads;
} sdpa__cpu_state;

/* Rows of the tilestats output: sum P (S - M), sum P, sum P^2, sum P^3 over
 * keys with S != M; count of S == M; count, sum S, sum S^2, min S, max S. */
enum {
    CPU_TS_A, CPU_TS_P1, CPU_TS_P2, CPU_TS_P3, CPU_TS_TIES, CPU_TS_CNT, CPU_TS_SUM,
    CPU_TS_SUMSQ, CPU_TS_MIN, CPU_TS_MAX, CPU_TS_N
};

/* Number of partial sums per (head, row block) for the statistics. */
enum {
    CPU_SP_ROWS, CPU_SP_COUNT, CPU_SP_SUM, CPU_SP_SUMSQ, CPU_SP_MIN, CPU_SP_MAX,
    CPU_SP_ENT, CPU_SP_ENTMIN, CPU_SP_PMAX, CPU_SP_SAT, CPU_SP_JAC, CPU_SP_SINK,
    CPU_SP_EMPTY, CPU_SP_N
};

typedef struct sdpa__cpu_plan {
    sdpa__problem p;
    const sdpa__cpu_kernels *k;
    sdpa__cpu_pool *pool;
    int nthreads;
    int bq;            /* query rows per sub-block (multiple of 16) */
    int bk;            /* keys per tile (multiple of 16) */
    int bkb;           /* keys per backward tile (multiple of bk) */
    int sb;            /* rows per forward task (multiple of bq) */
    int nsplit;        /* key splits per forward task (split-KV decode) */
    int64_t G;         /* query heads per KV head */
    int64_t rows;      /* G * Sq: rows of one (b, hkv) task space */
    int64_t nsb;       /* forward tasks per (b, hkv) */
    int64_t nsub;      /* bq-row sub-blocks per (b, hkv) */
    bool backward;
    /* workspace, all carved from one allocation */
    void *mem;
    size_t mem_bytes;
    size_t thread_bytes;   /* per-thread scratch stride */
    unsigned char *thread_ws;
    float *params;         /* q_gain (D), k_gain (D), per-head scale (Hq) */
    float *split_ws;       /* forward partials for split-KV */
    size_t split_task_floats;
    double *stat_ws;       /* forward statistics partials */
    float *grad_ws;        /* backward per-thread dq_gain, dk_gain, dtemp */
} sdpa__cpu_plan;

/* Per-call constants shared by the drivers. */
typedef struct sdpa__cpu_call {
    const sdpa__cpu_plan *pl;
    const sdpa__problem *p;
    const sdpa__fwd_args *a;
    const sdpa__bwd_args *g;
    const float *q_gain, *k_gain; /* NULL when absent */
    const float *scale_h;         /* per query head scale */
} sdpa__cpu_call;

/* ---- drivers ------------------------------------------------------------------ */
size_t sdpa__cpu_forward_thread_bytes(const sdpa__cpu_plan *pl);
size_t sdpa__cpu_backward_thread_bytes(const sdpa__cpu_plan *pl);
sdpa_status sdpa__cpu_forward_run(sdpa__cpu_plan *pl, const sdpa__problem *p,
                                  const sdpa__fwd_args *a);
sdpa_status sdpa__cpu_backward_run(sdpa__cpu_plan *pl, const sdpa__problem *p,
                                   const sdpa__fwd_args *a,
                                   const sdpa__bwd_args *g);

/* ---- helpers shared by the drivers (cpu_common.c) --------------------------- */
/* Loads per-call parameters (gains, per-head scale) into pl->params. */
void sdpa__cpu_load_params(const sdpa__cpu_plan *pl, const sdpa__problem *p,
                           const sdpa__fwd_args *a, sdpa__cpu_call *call);

/* ---- the score pipeline (cpu_score.c) ------------------------------------- */
/* Valid key count of batch b (Skv, or the call's per-batch count clamped to
 * [0, Skv]). */
int64_t sdpa__cpu_batch_keys(const sdpa__problem *p, const sdpa__fwd_args *a, int64_t b);
/* One S^T tile of scores scale * q.k: element (j, r) at st[j * ld + r] is key
 * kt + j of row r, and row r is query (h0 + (g0 + r) / Sq, (g0 + r) % Sq) of
 * batch b (the G heads sharing a KV head laid end to end). */
typedef struct sdpa__cpu_tile {
    float *st;
    int ld, n, nq;
    int64_t b, kt, h0, g0;
    const int64_t *lo, *hi; /* each row's kept-key range (sdpa__row_range) */
    int32_t *lor, *hir;     /* scratch of nq: the range relative to the tile */
    float *th;              /* NULL, or receives the cap's tanh per element
                               (what the backward's gradient needs) */
} sdpa__cpu_tile;
/* The score function every cpu kernel calls on its tiles: the cap, then the
 * additive terms, then the drop decision (-inf). */
void sdpa__cpu_score(const sdpa__cpu_call *call, const sdpa__cpu_tile *t);
/* True when sdpa__cpu_score changes nothing on a tile inside every row's
 * range, so a kernel may skip the call there. */
bool sdpa__cpu_score_is_identity(const sdpa__problem *p);
/* Normalises x (length D) in place per p->qk_norm (no gain); returns the
 * inverse norm r (1 when no norm). */
float sdpa__cpu_norm(const sdpa__problem *p, float *x, int64_t D);
/* Gradient of the norm: given xhat (normalised) and r, turns dxhat into dx in
 * place. */
void sdpa__cpu_norm_backward(const sdpa__problem *p, const float *xhat, float r,
                             float *dx, int64_t D);
/* Loads one Q or K row (b, h, i) of src as f32: normalised, times gain (may
 * be NULL), times mul. When xhat != NULL also keeps the pre-gain normalised
 * row and returns r through *r_out. */
void sdpa__cpu_load_qk(const sdpa__cpu_kernels *k, const sdpa__problem *p,
                       const sdpa__cpu_kv *src, int64_t b, int64_t h, int64_t i,
                       const float *gain, float mul, float *dst, float *xhat,
                       float *r_out);
/* The kernels' gemm, but terms with A(r,k) == 0 are skipped, not multiplied:
 * where A holds probabilities (or their gradients) and B rows of V, dO, Q or
 * K that may be Inf/NaN, a key or row that A drops (exactly 0) contributes
 * exactly 0 (0 * Inf would be NaN). Plain loops: the generic table's gemm,
 * and what the AVX-512 table falls back to for tiles whose B is not finite. */
void sdpa__cpu_gemm_skip_zeros(int M, int N, int K, const float *A, ptrdiff_t a_rs,
                               ptrdiff_t a_cs, const float *B, ptrdiff_t ldb, float *C,
                               ptrdiff_t ldc, int accumulate, const float *c_scale);

/* The transpose kernel as plain loops: the portable tables' entry and the
 * vector kernels' tails. */
void sdpa__cpu_transpose(int R, int C, const float *src, ptrdiff_t lds, float *dst,
                         ptrdiff_t ldd, float mul);

/* Bytes rounded up to a cache line. */
static inline size_t sdpa__cpu_align(size_t n) { return (n + 63) & ~(size_t)63; }

/* Bump allocator over a workspace region. */
typedef struct sdpa__cpu_carve { unsigned char *p; size_t used; } sdpa__cpu_carve;
static inline void *sdpa__cpu_take(sdpa__cpu_carve *c, size_t bytes)
{
    void *r = c->p ? c->p + c->used : NULL;
    c->used += sdpa__cpu_align(bytes);
    return r;
}

#endif /* SDPA_CPU_INTERNAL_H */
