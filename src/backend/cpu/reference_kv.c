/*
 * reference_kv.c — how the float64 oracle reads K and V rows: through the
 * block table when the call is paged (logical key j of batch b is slot
 * j % page of page block_table[b][j / page]) and in any K/V storage dtype,
 * q8_0 and q4_0 blocks dequantized exactly (f16 scale d times the integer,
 * docs/semantics.md). The forward and the backward of reference_*.c read
 * keys and values only through sdpa__ref_load_kv.
 */
#include "reference.h"

#include <string.h>

/* Element t (0..31) of one ggml block of dtype q8_0 or q4_0. */
static double block_element(const unsigned char *blk, sdpa_dtype dtype, int64_t t)
{
    uint16_t d16;
    memcpy(&d16, blk, sizeof d16); /* little-endian f16 scale */
    double d = sdpa__f16_to_f32(d16);
    if (dtype == SDPA_DTYPE_Q8_0) return d * (double)(int8_t)blk[2 + t];
    unsigned byte = blk[2 + t % 16];
    int nibble = t < 16 ? (int)(byte & 0xFu) : (int)(byte >> 4);
    return d * (double)(nibble - 8);
}

void sdpa__ref_load_kv(const sdpa__problem *p, const sdpa__fwd_args *a, bool value, int64_t b,
                       int64_t kvh, int64_t j, int64_t len, double *dst)
{
    const sdpa__ref *r = value ? &a->v : &a->k;
    int64_t i0 = b, i2 = j;
    if (p->has_block_table) {
        const sdpa__ref *bt = &a->block_table;
        r = value ? &a->v_pages : &a->k_pages;
        i0 = ((const int32_t *)bt->mem)[sdpa__at(bt, b, 0, 0, j / p->page)];
        i2 = j % p->page;
    }
    const int64_t blk = sdpa_dtype_block_elems(p->kv_dtype);
    if (blk <= 1) {
        sdpa__ref_load_row(r, p->kv_dtype, i0, kvh, i2, len, dst);
        return;
    }
    const size_t bytes = sdpa_dtype_size(p->kv_dtype);
    for (int64_t d = 0; d < len; d++) {
        const unsigned char *block =
            (const unsigned char *)r->mem + (size_t)sdpa__at(r, i0, kvh, i2, d / blk) * bytes;
        dst[d] = block_element(block, p->kv_dtype, d % blk);
    }
}
