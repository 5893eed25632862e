/*
 * case.h — loader and runner for conformance cases in the sdpa-case/1 format
 * (tests/conformance/README.md, docs/tools.md): a folder with case.json
 * and one raw little-endian file per tensor.
 *
 * sc_load() reads and checks a case completely (JSON structure, dtypes, shapes
 * against each other, exact file sizes, size limits) and never crashes on bad
 * input: it returns 0 with a one-line reason instead. sc_run() builds the
 * attention descriptor with host tensors mapped to the library's 4-D shapes,
 * runs the forward (and the backward for op = "backward") on a context with
 * every output poisoned (NaN) first, and compares each expected output.
 * Used by tools/sdpa-check.c and tests/test_conformance.c.
 */
#ifndef SDPA_TOOLS_CASE_H
#define SDPA_TOOLS_CASE_H

#include <stddef.h>
#include <stdint.h>

#include "sdpa.h"

/* Limits for untrusted case folders. */
#define SC_MAX_JSON_BYTES ((size_t)4 << 20)   /* case.json */
#define SC_MAX_FILE_BYTES ((size_t)1 << 30)   /* one tensor file or output */
#define SC_MAX_EXTENT ((int64_t)INT32_MAX)    /* one axis */
#define SC_MAX_DEPTH 4                        /* folder nesting for sc_find */

/* The case-file keys are the library's slot names (sdpa_slot_get_info):
 * key k < sdpa_slot_count(SDPA_SLOT_FORWARD) is that forward slot, the
 * following keys the backward slots in their order. A case holds one tensor
 * per key; whether it is an input or an expected output is the slot's
 * `output` flag (the forward's saved outputs out and lse are expected
 * outputs of a backward case too). Nothing here lists the slots: a new slot
 * is a new key without an edit. At most SC_MAX_KEYS keys (sc_key_count
 * returns 0 if the library has more, and every load then fails saying so). */
#define SC_MAX_KEYS 64
int sc_key_count(void);
/* Key index of a case-file key, -1 for an unknown name. */
int sc_key_find(const char *name);
/* The key's name ("?" out of range) and its slot description. */
const char *sc_key_name(int k);
int sc_key_info(int k, sdpa_slot_info *info, sdpa_slot_group *group);

/* One tensor as read from its file. Integer files (i32, or i64 for i32
 * slots) are held as i32; other f32 slots (bias, gains, ...) as f32; q, dout
 * in the case's storage dtype, k/v/k_pages/v_pages in the K/V dtype (blocks
 * of q8_0 / q4_0 as stored); expected outputs in their file's float dtype. */
typedef struct sc_tensor {
    int present;
    sdpa_dtype dtype;   /* dtype of `data` */
    int rank;           /* as written in case.json (1..4) */
    int64_t shape[4];
    size_t count;       /* elements */
    void *data;
} sc_tensor;

typedef struct sc_case {
    char name[128];
    char dir[4096];
    int backward;                 /* op = "backward" */
    sdpa_dtype dtype;             /* storage dtype of q, out, dout */
    sdpa_dtype kv_dtype;          /* storage dtype of k, v (or k_pages, v_pages) */
    int paged;                    /* block_table given: K/V in pages */
    int64_t B, Hq, Hkv, Sq, Skv, D, Dv;
    int64_t pages, page, max_pages; /* paged: pool pages, slots per page, table width */
    sdpa_attention_desc attrs;    /* attributes only; tensors unset */
    sc_tensor in[SC_MAX_KEYS];    /* inputs, by key */
    sc_tensor want[SC_MAX_KEYS];  /* expected outputs, by key */
    int stats_cols;               /* columns of the expected stats */
    int stats_map[32];            /* expected column -> sdpa_stat index */
    double tol_max_abs, tol_rel_l2;
} sc_case;

/* SC_UNSUPPORTED: the library answered SDPA_ERR_UNSUPPORTED (the backend
 * does not implement what the case needs; the reason names it). Never a
 * pass: sdpa-check counts it as a failure unless --allow-unsupported. */
typedef enum sc_verdict {
    SC_PASS = 0, SC_FAIL = 1, SC_UNSUPPORTED = 2
} sc_verdict;

typedef struct sc_compare {
    int which;            /* key index of the output */
    double max_abs;       /* worst |got - want| over finite expected entries */
    double rel_l2;        /* ||got - want|| / ||want|| over finite entries */
    size_t bad_nonfinite; /* non-finite expected entries not matched exactly */
    size_t worst;         /* flat index of the worst entry */
    int ok;
} sc_compare;

typedef struct sc_result {
    sc_verdict verdict;
    char name[128];
    char reason[512];     /* empty on PASS */
    int ncmp;
    sc_compare cmp[SC_MAX_KEYS];
    double seconds;       /* plan + run time */
    double tol_max_abs, tol_rel_l2; /* the case's tolerance (0 if not loaded) */
} sc_result;

/* The shapes of the slot named `key` (a case-file key) for case c: its
 * library shape (lib, from the slot's axis letters, sdpa_slot_get_info, and
 * the case's extents) and its sdpa-case/1 file shape (file: lib without the
 * unit axes). Returns the file rank, 0 for an unknown key. */
int sc_slot_shape(const sc_case *c, const char *key, int64_t lib[4], int64_t file[4]);

/* Clears t (and bt) and points every present input of the loaded case at
 * its slot as a host tensor (rank-4 files as given, lower ranks in the
 * slot's library shape); bt may be NULL (then dout is left out). */
void sc_case_inputs(const sc_case *c, sdpa_forward_tensors *t, sdpa_backward_tensors *bt);

/* Loads the case in folder `dir`. Returns 1 on success; otherwise 0 with a
 * reason in err (and *c holds nothing that needs freeing but its name). Files are read only from inside the folder: a name that is
 * absolute, holds "..", or resolves through a symlink outside the folder is
 * refused, as is anything but a regular file (a FIFO never blocks). */
int sc_load(const char *dir, sc_case *c, char *err, size_t errcap);
void sc_free(sc_case *c);

/* Runs a loaded case on ctx and fills r (name, verdict, comparisons). */
void sc_run(sdpa_context *ctx, const sc_case *c, sc_result *r);
/* The same with a forced kernel configuration (sdpa_plan_options.tile, NULL =
 * the plan's own choice), e.g. sdpa-check --unfused. A configuration the
 * backend refuses as unsupported makes the case UNSUPPORTED. */
void sc_run_tile(sdpa_context *ctx, const sc_case *c, const sdpa_tile_config *tile,
                 sc_result *r);

/* Loads and runs the case in `dir`: a load failure is a FAIL with the reason;
 * the name falls back to the folder's base name. */
void sc_check_dir(sdpa_context *ctx, const char *dir, sc_result *r);
void sc_check_dir_tile(sdpa_context *ctx, const char *dir, const sdpa_tile_config *tile,
                       sc_result *r);

/* Compares got against want (n doubles each) as sc_compare does. */
void sc_compare_values(const double *got, const double *want, size_t n,
                       double tol_max_abs, double tol_rel_l2, sc_compare *out);

/* A sorted list of case folders. */
typedef struct sc_list {
    char **paths;
    size_t n, cap;
} sc_list;

/* Adds `path` if it holds case.json, else every case folder below it (sorted
 * by name, down to SC_MAX_DEPTH levels, hidden folders skipped; `path` may be
 * a symlink, but symlinks below it are not followed and a folder already on
 * the way down (same device and inode) is not entered again). `list`
 * starts zeroed ({0}) or holds earlier results. Returns 0 when `path`
 * cannot be read (reason in err; the list is then freed and empty);
 * unreadable folders below it are passed over, and finding no case is not an
 * error here (the caller decides). */
int sc_find(const char *path, sc_list *list, char *err, size_t errcap);
void sc_list_free(sc_list *list);

#endif /* SDPA_TOOLS_CASE_H */
