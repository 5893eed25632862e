/*
 * cpu_kv.c — how the fast CPU backend's drivers reach K and V rows: in
 * place in the caller's memory, contiguous or paged (a pool of pages and a
 * block table), in their storage dtype (f32, f16, bf16, q8_0, q4_0). The
 * decode kernels (dots_kv / pv_kv of the ISA tables) take a table of these
 * row addresses per tile (sdpa__cpu_kv_rows: a task's table slides from
 * tile to tile, and V is read through K's table at a fixed distance when
 * the two share a layout, sdpa__cpu_kv_shift) and convert or dequantize in
 * registers; the tiled prefill path loads one row at a time into its
 * per-thread tile (sdpa__cpu_kv_load).
 * Nothing here copies or dequantizes the cache as a whole. Declarations in
 * cpu_internal.h.
 */
#include "cpu_internal.h"

sdpa__cpu_kv sdpa__cpu_kv_source(const sdpa__problem *p, const sdpa__fwd_args *a, bool is_v)
{
    sdpa__cpu_kv s = {0};
    const bool paged = p->has_block_table;
    s.ref = paged ? (is_v ? &a->v_pages : &a->k_pages) : (is_v ? &a->v : &a->k);
    s.mem = s.ref->mem;
    s.table = paged ? &a->block_table : NULL;
    s.dt = p->kv_dtype;
    s.ubytes = sdpa__cpu_unit_bytes(p->kv_dtype);
    s.page = paged ? p->page : 0;
    return s;
}

sdpa__cpu_kv sdpa__cpu_kv_plain(const sdpa__ref *r, sdpa_dtype dt)
{
    sdpa__cpu_kv s = {0};
    s.ref = r;
    s.mem = r->mem;
    s.dt = dt;
    s.ubytes = sdpa__cpu_unit_bytes(dt);
    return s;
}

void sdpa__cpu_kv_rows(const sdpa__cpu_kv *s, int64_t b, int64_t hkv, int64_t j, int n,
                       sdpa__cpu_rowtab *t)
{
    int have = 0;
    if (t->n > 0 && j >= t->j0 && j < t->j0 + t->n) {
        const int skip = (int)(j - t->j0);
        have = t->n - skip < n ? t->n - skip : n;
        memmove(t->at, t->at + skip, (size_t)have * sizeof *t->at);
    }
    const size_t ldb = (size_t)s->ref->stride[2] * s->ubytes;
    for (int i = have, len; i < n; i += len) {
        const unsigned char *row = sdpa__cpu_kv_row(s, b, hkv, j + i);
        len = sdpa__cpu_kv_run(s, j + i, n - i);
        for (int e = 0; e < len; e++) t->at[i + e] = row + (size_t)e * ldb;
    }
    t->j0 = j;
    t->n = n;
}

bool sdpa__cpu_kv_shift(const sdpa__cpu_kv *k, const sdpa__cpu_kv *v, ptrdiff_t *shift)
{
    for (int d = 0; d < 4; d++)
        if (k->ref->stride[d] != v->ref->stride[d]) return false;
    if (k->page != v->page || k->table != v->table || k->ubytes != v->ubytes) return false;
    /* the rows' addresses differ by the bases' (offsets included) */
    *shift = (ptrdiff_t)(((uintptr_t)v->mem + v->ref->offset * v->ubytes) -
                         ((uintptr_t)k->mem + k->ref->offset * k->ubytes));
    return true;
}

float sdpa__cpu_block_elem(const void *row, sdpa_dtype dt, int64_t e)
{
    uint16_t dh;
    const unsigned char *blk = sdpa__cpu_block_of(row, dt, (ptrdiff_t)e, &dh);
    const float d = sdpa__f16_to_f32(dh);
    const int t = (int)(e % 32);
    if (dt == SDPA_DTYPE_Q8_0) return d * (float)(int8_t)blk[2 + t];
    const int nib = t < 16 ? blk[2 + t] & 15 : blk[2 + t - 16] >> 4;
    return d * (float)(nib - 8);
}

void sdpa__cpu_kv_load(const sdpa__cpu_kernels *k, const sdpa__cpu_kv *s, int64_t b,
                       int64_t hkv, int64_t j, int n, float *dst)
{
    const void *row = sdpa__cpu_kv_row(s, b, hkv, j);
    if (sdpa__cpu_unit_elems(s->dt) > 1) {
        for (int e = 0; e < n; e++) dst[e] = sdpa__cpu_block_elem(row, s->dt, e);
        return;
    }
    k->load_row(row, s->dt, s->ref->stride[3], n, dst);
}
