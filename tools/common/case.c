/*
 * case.c — the sdpa-case/1 loader (see case.h and
 * ../shared/conformance/README.md). A case folder is untrusted input: the
 * JSON is size-limited and parsed with cJSON, every field's type is checked,
 * shapes must be positive, bounded and consistent with q/k/v, element counts
 * are multiplied with overflow checks, and each file must be a regular file of
 * exactly count * element-size bytes (at most SC_MAX_FILE_BYTES). Any problem
 * yields 0 and a one-line reason naming the field or file, never a crash.
 *
 * Invariant on success: every present tensor's data holds `count` elements of
 * `dtype`, its shape agrees with the case dimensions (B, Hq, Hkv, Sq, Skv, D,
 * Dv), so sc_run can hand it to the library as is.
 * Called by sc_check_dir (case_run.c), sdpa-check and test_conformance.
 */
#include "case.h"
#include "util.h"

#include <cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The extra file dtype that only kv_len may use. */
#define SC_FILE_I64 100

/* ---- keys: the library's slots ------------------------------------------------ */

int sc_key_count(void)
{
    int n = sdpa_slot_count(SDPA_SLOT_FORWARD) + sdpa_slot_count(SDPA_SLOT_BACKWARD);
    return n <= SC_MAX_KEYS ? n : 0;
}

int sc_key_info(int k, sdpa_slot_info *info, sdpa_slot_group *group)
{
    const int nf = sdpa_slot_count(SDPA_SLOT_FORWARD);
    if (k < 0 || k >= sc_key_count())
        return 0;
    *group = k < nf ? SDPA_SLOT_FORWARD : SDPA_SLOT_BACKWARD;
    return sdpa_slot_get_info(*group, k < nf ? k : k - nf, info) == SDPA_OK;
}

const char *sc_key_name(int k)
{
    sdpa_slot_info info;
    sdpa_slot_group g;
    return sc_key_info(k, &info, &g) ? info.name : "?";
}

int sc_key_find(const char *name)
{
    for (int k = 0; name && k < sc_key_count(); k++)
        if (strcmp(sc_key_name(k), name) == 0)
            return k;
    return -1;
}

/* The case's extent for a slot axis letter (sdpa_slot_info.axes), as a
 * pointer so the loader can set it from the tensors that define it; NULL
 * for the unit axis and for C (the statistics' columns, fixed). */
static int64_t *extent_of(sc_case *c, char letter)
{
    switch (letter) {
    case 'B': return &c->B;
    case 'Q': return &c->Hq;
    case 'K': return &c->Hkv;
    case 's': return &c->Sq;
    case 'k': return &c->Skv;
    case 'D': return &c->D;
    case 'V': return &c->Dv;
    case 'P': return &c->pages;
    case 'G': return &c->page;
    case 'T': return &c->max_pages;
    default: return NULL;
    }
}

int sc_slot_shape(const sc_case *c, const char *key, int64_t lib[4], int64_t file[4])
{
    sdpa_slot_info info;
    sdpa_slot_group g;
    if (!sc_key_info(sc_key_find(key), &info, &g))
        return 0;
    int rank = 0;
    for (int a = 0; a < 4; a++) {
        const int64_t *e = extent_of((sc_case *)c, info.axes[a]);
        lib[a] = e ? *e : info.axes[a] == 'C' ? SDPA_STAT_COUNT : 1;
        if (info.axes[a] != '1')
            file[rank++] = lib[a];
    }
    return rank;
}

typedef struct loader {
    sc_case *c;
    char *err;
    size_t errcap;
    char *real_dir; /* realpath of the case folder (malloc'd) */
} loader;

static int fail(loader *L, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(L->err, L->errcap, fmt, ap);
    va_end(ap);
    return 0;
}

/* ---- small JSON helpers ----------------------------------------------------- */

static int get_number(loader *L, const cJSON *obj, const char *key, double *out,
                      int required, const char *where)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!it) {
        if (required)
            return fail(L, "%s: missing \"%s\"", where, key);
        return 1;
    }
    if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble))
        return fail(L, "%s: \"%s\" must be a finite number", where, key);
    *out = it->valuedouble;
    return 1;
}

static int get_integer(loader *L, const cJSON *it, int64_t lo, int64_t hi,
                       int64_t *out, const char *what)
{
    if (!cJSON_IsNumber(it))
        return fail(L, "%s must be an integer", what);
    double v = it->valuedouble;
    if (!isfinite(v) || v != floor(v) || v < (double)lo || v > (double)hi)
        return fail(L, "%s must be an integer in [%lld, %lld]", what, (long long)lo,
                    (long long)hi);
    *out = (int64_t)v;
    return 1;
}

static const char *get_string(const cJSON *obj, const char *key)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsString(it) ? it->valuestring : NULL;
}

/* ---- files ------------------------------------------------------------------- */

static int host_is_little_endian(void)
{
    const uint16_t one = 1;
    return *(const uint8_t *)&one == 1;
}

static void swap_bytes(void *data, size_t count, size_t esize)
{
    uint8_t *p = data;
    for (size_t i = 0; i < count; i++, p += esize)
        for (size_t a = 0, b = esize - 1; a < b; a++, b--) {
            uint8_t t = p[a];
            p[a] = p[b];
            p[b] = t;
        }
}

/* A file name from case.json must stay inside the case folder. */
static int safe_file_name(const char *f)
{
    if (!f || !*f || f[0] == '/')
        return 0;
    for (const char *p = f; *p; p++)
        if ((unsigned char)*p < 0x20)
            return 0;
    const char *s = f;
    while (*s) {
        const char *e = strchr(s, '/');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        if (n == 2 && s[0] == '.' && s[1] == '.')
            return 0;
        if (!e)
            break;
        s = e + 1;
    }
    return 1;
}

/* Opens dir/name for reading, refusing what a case folder must not hold:
 * a name that resolves (through symlinks) outside the case folder, and
 * anything but a regular file. O_NONBLOCK keeps a FIFO from waiting for a
 * writer; O_NOFOLLOW refuses a symlink swapped in after the check. `what`
 * prefixes messages ("inputs.q: q.f32 ..."; "case.json" alone for the case
 * file). Returns the descriptor, or -1 with the reason in L->err. */
static int open_in_case(loader *L, const char *name, const char *what, struct stat *st)
{
    char path[4352];
    int json = strcmp(what, name) == 0;
    if (!tu_path_join(path, sizeof path, L->c->dir, name))
        return fail(L, "%s: path too long", what), -1;
    char *real = realpath(path, NULL);
    int fd = -1;
    if (real) {
        size_t n = strlen(L->real_dir);
        int inside = strncmp(real, L->real_dir, n) == 0 &&
                     (real[n] == '/' || strcmp(L->real_dir, "/") == 0);
        if (!inside) {
            free(real);
            if (json)
                return fail(L, "case.json resolves outside the case folder"), -1;
            return fail(L, "%s: %s resolves outside the case folder", what, name), -1;
        }
        fd = open(real, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
        free(real);
    }
    if (fd < 0) {
        if (json)
            return fail(L, "case.json: cannot open %s", path), -1;
        return fail(L, "%s: cannot open %s", what, name), -1;
    }
    if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode)) {
        close(fd);
        if (json)
            return fail(L, "case.json: not a regular file"), -1;
        return fail(L, "%s: %s is not a regular file", what, name), -1;
    }
    return fd;
}

/* Reads exactly n bytes from fd; 1 when it got them and the file ends there. */
static int read_all(int fd, void *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, (char *)buf + got, n - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return 0;
        got += (size_t)r;
    }
    char extra;
    ssize_t r;
    do
        r = read(fd, &extra, 1);
    while (r < 0 && errno == EINTR);
    return r == 0;
}

/* Reads exactly `bytes` bytes of dir/name into a new buffer. */
static int read_exact(loader *L, const char *name, size_t bytes, size_t max_bytes,
                      void **out, const char *what)
{
    *out = NULL;
    if (!safe_file_name(name))
        return fail(L, "%s: file name \"%s\" is not a relative path inside the case",
                    what, name ? name : "");
    if (bytes > max_bytes)
        return fail(L, "%s: %zu bytes exceeds the limit of %zu", what, bytes, max_bytes);
    struct stat st;
    int fd = open_in_case(L, name, what, &st);
    if (fd < 0)
        return 0;
    if ((uint64_t)st.st_size != (uint64_t)bytes) {
        close(fd);
        return fail(L, "%s: %s has %lld bytes, expected %zu (%s)", what, name,
                    (long long)st.st_size, bytes,
                    (uint64_t)st.st_size < (uint64_t)bytes ? "short file" : "file too long");
    }
    void *buf = malloc(bytes ? bytes : 1);
    if (!buf) {
        close(fd);
        return fail(L, "%s: out of memory for %zu bytes", what, bytes);
    }
    int ok = read_all(fd, buf, bytes);
    close(fd);
    if (!ok) {
        free(buf);
        return fail(L, "%s: %s changed size while being read", what, name);
    }
    *out = buf;
    return 1;
}

/* ---- one tensor entry --------------------------------------------------------- */

static int parse_dtype(const char *s, int *out)
{
    static const struct { const char *n; int d; } t[] = {
        {"f32", SDPA_DTYPE_F32}, {"f16", SDPA_DTYPE_F16}, {"bf16", SDPA_DTYPE_BF16},
        {"u8", SDPA_DTYPE_U8},   {"i32", SDPA_DTYPE_I32}, {"i64", SC_FILE_I64},
        {"q8_0", SDPA_DTYPE_Q8_0}, {"q4_0", SDPA_DTYPE_Q4_0}};
    if (!s)
        return 0;
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (strcmp(s, t[i].n) == 0) {
            *out = t[i].d;
            return 1;
        }
    return 0;
}

static const char *file_dtype_name(int d)
{
    return d == SC_FILE_I64 ? "i64" : sdpa_dtype_name((sdpa_dtype)d);
}

static size_t file_dtype_size(int d) { return d == SC_FILE_I64 ? 8 : sdpa_dtype_size((sdpa_dtype)d); }

static int is_float(int d)
{
    return d == SDPA_DTYPE_F32 || d == SDPA_DTYPE_F16 || d == SDPA_DTYPE_BF16;
}

/* Elements per storage unit of a file dtype (32 for q8_0 / q4_0 blocks). */
static int64_t file_block_elems(int d)
{
    return d == SC_FILE_I64 ? 1 : sdpa_dtype_block_elems((sdpa_dtype)d);
}

/* Reads {dtype, shape, file}: checks the shape, reads the file and stores
 * the data with its file dtype (i64 stays 8-byte here; see to_i32). */
static int read_entry(loader *L, const cJSON *e, const char *what, sc_tensor *t,
                      int *file_dtype)
{
    char w[96];
    memset(t, 0, sizeof *t);
    if (!cJSON_IsObject(e))
        return fail(L, "%s: must be an object {dtype, shape, file}", what);
    const char *ds = get_string(e, "dtype");
    if (!ds)
        return fail(L, "%s: missing string \"dtype\"", what);
    if (!parse_dtype(ds, file_dtype))
        return fail(L, "%s: unknown dtype \"%s\" (f32, f16, bf16, u8, i32, i64, q8_0, q4_0)",
                    what, ds);
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(e, "shape");
    if (!cJSON_IsArray(sh))
        return fail(L, "%s: missing array \"shape\"", what);
    int rank = cJSON_GetArraySize(sh);
    if (rank < 1 || rank > 4)
        return fail(L, "%s: shape must have 1 to 4 axes, has %d", what, rank);
    size_t count = 1;
    for (int a = 0; a < rank; a++) {
        snprintf(w, sizeof w, "%s: shape[%d]", what, a);
        if (!get_integer(L, cJSON_GetArrayItem(sh, a), 1, SC_MAX_EXTENT, &t->shape[a], w))
            return 0;
        if (!tu_mul_size(count, (size_t)t->shape[a], &count))
            return fail(L, "%s: element count overflows", what);
    }
    t->rank = rank;
    t->count = count;
    /* block types: the last axis is cut into blocks of file_block_elems */
    const int64_t blk = file_block_elems(*file_dtype);
    if (t->shape[rank - 1] % blk != 0)
        return fail(L, "%s: a %s tensor's last axis (%lld) must be a multiple of %lld", what,
                    ds, (long long)t->shape[rank - 1], (long long)blk);
    size_t bytes;
    if (!tu_mul_size(count / (size_t)blk, file_dtype_size(*file_dtype), &bytes))
        return fail(L, "%s: size overflows", what);
    const char *file = get_string(e, "file");
    if (!file)
        return fail(L, "%s: missing string \"file\"", what);
    if (!read_exact(L, file, bytes, SC_MAX_FILE_BYTES, &t->data, what))
        return 0;
    if (!host_is_little_endian() && blk == 1 && file_dtype_size(*file_dtype) > 1)
        swap_bytes(t->data, count, file_dtype_size(*file_dtype));
    else if (!host_is_little_endian() && blk > 1) /* each block's f16 scale */
        for (size_t b = 0; b < count / (size_t)blk; b++)
            swap_bytes((char *)t->data + b * file_dtype_size(*file_dtype), 1, 2);
    t->present = 1;
    t->dtype = *file_dtype == SC_FILE_I64 ? SDPA_DTYPE_NONE : (sdpa_dtype)*file_dtype;
    return 1;
}

/* Converts a float tensor to f32 in place (bias, gains, temperature). */
static int to_f32(loader *L, sc_tensor *t, const char *what)
{
    if (t->dtype == SDPA_DTYPE_F32)
        return 1;
    if (!is_float(t->dtype))
        return fail(L, "%s: dtype must be f32 (or f16/bf16), got %s", what,
                    sdpa_dtype_name(t->dtype));
    float *f = malloc(t->count * sizeof *f);
    if (!f)
        return fail(L, "%s: out of memory", what);
    for (size_t i = 0; i < t->count; i++)
        f[i] = (float)tu_load(t->data, t->dtype, i);
    free(t->data);
    t->data = f;
    t->dtype = SDPA_DTYPE_F32;
    return 1;
}

/* An i32 slot's values from i32 or i64, range-checked against [0, bound]
 * (bound_name says what bound is: "Skv" for key counts, "pages-1" for page
 * indices). */
static int to_i32(loader *L, sc_tensor *t, int file_dtype, const char *key, int64_t bound,
                  const char *bound_name)
{
    if (file_dtype != SDPA_DTYPE_I32 && file_dtype != SC_FILE_I64)
        return fail(L, "%s: dtype must be i32 or i64", key);
    int32_t *v = malloc(t->count * sizeof *v);
    if (!v)
        return fail(L, "%s: out of memory", key);
    for (size_t i = 0; i < t->count; i++) {
        int64_t x;
        if (file_dtype == SC_FILE_I64)
            memcpy(&x, (const char *)t->data + 8 * i, 8);
        else
            x = ((const int32_t *)t->data)[i];
        if (x < 0 || x > bound) {
            free(v);
            return fail(L, "%s[%zu] = %lld is outside [0, %s = %lld]", key, i, (long long)x,
                        bound_name, (long long)bound);
        }
        v[i] = (int32_t)x;
    }
    free(t->data);
    t->data = v;
    t->dtype = SDPA_DTYPE_I32;
    return 1;
}

static void shape_str(const sc_tensor *t, char *buf, size_t cap)
{
    size_t n = 0;
    n += (size_t)snprintf(buf + n, cap - n, "[");
    for (int a = 0; a < t->rank && n < cap; a++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%lld", a ? "," : "", (long long)t->shape[a]);
    if (n < cap)
        snprintf(buf + n, cap - n, "]");
}

/* The shape is either the short form `s` (rank r) or its 4-D library form;
 * an axis whose bit is set in bcast (library axes, sdpa_slot_info.broadcast)
 * may also be 1 in the 4-D form. */
static int expect_shape_bc(loader *L, const sc_tensor *t, const char *what, int r,
                           const int64_t *s, const int64_t lib[4], unsigned bcast)
{
    int ok = t->rank == r;
    for (int a = 0; ok && a < r; a++)
        ok = t->shape[a] == s[a];
    if (!ok && t->rank == 4) {
        ok = 1;
        for (int a = 0; a < 4; a++)
            ok = ok && (t->shape[a] == lib[a] || ((bcast >> a & 1u) && t->shape[a] == 1));
    }
    if (ok)
        return 1;
    char got[96], want[96];
    sc_tensor tmp = {0};
    tmp.rank = r;
    memcpy(tmp.shape, s, (size_t)r * sizeof *s);
    shape_str(t, got, sizeof got);
    shape_str(&tmp, want, sizeof want);
    return fail(L, "%s: shape %s, expected %s%s", what, got, want,
                bcast ? " (broadcast axes may be 1)" : "");
}

static int expect_shape(loader *L, const sc_tensor *t, const char *what, int r,
                        const int64_t *s, const int64_t lib[4])
{
    return expect_shape_bc(L, t, what, r, s, lib, 0);
}

/* ---- attributes ------------------------------------------------------------------- */

static int parse_attrs(loader *L, const cJSON *attrs)
{
    sdpa_attention_desc *d = &L->c->attrs;
    sdpa_attention_desc_init(d);
    if (!attrs)
        return 1; /* all defaults */
    if (!cJSON_IsObject(attrs))
        return fail(L, "attrs: must be an object");
    static const char *const known[] = {"scale", "diagonal", "diagonal_offset", "window",
                                        "softcap", "qk_norm", "qk_norm_eps",
                                        "stats_saturation"};
    for (const cJSON *it = attrs->child; it; it = it->next) {
        size_t k = 0;
        while (k < sizeof known / sizeof known[0] && strcmp(it->string, known[k]) != 0)
            k++;
        if (k == sizeof known / sizeof known[0])
            return fail(L, "attrs: unknown attribute \"%s\"", it->string);
    }
    const cJSON *sc = cJSON_GetObjectItemCaseSensitive(attrs, "scale");
    if (sc && !cJSON_IsNull(sc)) {
        if (!cJSON_IsNumber(sc) || !isfinite(sc->valuedouble) || sc->valuedouble <= 0)
            return fail(L, "attrs.scale: must be null or a finite number > 0");
        d->scale = sc->valuedouble;
    }
    const cJSON *dg = cJSON_GetObjectItemCaseSensitive(attrs, "diagonal");
    if (dg) {
        const char *s = cJSON_IsString(dg) ? dg->valuestring : "";
        if (strcmp(s, "top_left") == 0)
            d->diagonal = SDPA_DIAGONAL_TOP_LEFT;
        else if (strcmp(s, "bottom_right") == 0)
            d->diagonal = SDPA_DIAGONAL_BOTTOM_RIGHT;
        else if (strcmp(s, "explicit") == 0)
            d->diagonal = SDPA_DIAGONAL_EXPLICIT;
        else
            return fail(L, "attrs.diagonal: must be \"top_left\", \"bottom_right\" or \"explicit\"");
    }
    const cJSON *off = cJSON_GetObjectItemCaseSensitive(attrs, "diagonal_offset");
    if (off && !get_integer(L, off, -SC_MAX_EXTENT, SC_MAX_EXTENT, &d->diagonal_offset,
                            "attrs.diagonal_offset"))
        return 0;
    const cJSON *win = cJSON_GetObjectItemCaseSensitive(attrs, "window");
    if (win) {
        if (!cJSON_IsArray(win) || cJSON_GetArraySize(win) != 2)
            return fail(L, "attrs.window: must be [left, right]");
        if (!get_integer(L, cJSON_GetArrayItem(win, 0), -1, SC_MAX_EXTENT, &d->window_left,
                         "attrs.window[0]") ||
            !get_integer(L, cJSON_GetArrayItem(win, 1), -1, SC_MAX_EXTENT, &d->window_right,
                         "attrs.window[1]"))
            return 0;
    }
    if (!get_number(L, attrs, "softcap", &d->softcap, 0, "attrs"))
        return 0;
    if (d->softcap < 0)
        return fail(L, "attrs.softcap: must be 0 (none) or > 0");
    const cJSON *qn = cJSON_GetObjectItemCaseSensitive(attrs, "qk_norm");
    if (qn) {
        const char *s = cJSON_IsString(qn) ? qn->valuestring : "";
        if (strcmp(s, "none") == 0)
            d->qk_norm = SDPA_QK_NORM_NONE;
        else if (strcmp(s, "rms") == 0)
            d->qk_norm = SDPA_QK_NORM_RMS;
        else if (strcmp(s, "layer") == 0)
            d->qk_norm = SDPA_QK_NORM_LAYER;
        else if (strcmp(s, "l2") == 0)
            d->qk_norm = SDPA_QK_NORM_L2;
        else
            return fail(L, "attrs.qk_norm: must be \"none\", \"rms\", \"layer\" or \"l2\"");
    }
    if (!get_number(L, attrs, "qk_norm_eps", &d->qk_norm_eps, 0, "attrs") ||
        !get_number(L, attrs, "stats_saturation", &d->stats_saturation, 0, "attrs"))
        return 0;
    return 1;
}

/* ---- inputs ----------------------------------------------------------------------- */

/* The library shape of a tensor read for slot `info`: rank 4 as given, a
 * short form spread over the slot's non-unit axes; 0 when the rank fits
 * neither. */
static int lib_shape_of(const sc_tensor *t, const sdpa_slot_info *info, int64_t lib[4])
{
    if (t->rank == 4) {
        memcpy(lib, t->shape, 4 * sizeof *lib);
        return 1;
    }
    int r = 0;
    for (int a = 0; a < 4; a++) {
        lib[a] = 1;
        if (info->axes[a] != '1') {
            if (r >= t->rank)
                return 0;
            lib[a] = t->shape[r++];
        }
    }
    return r == t->rank;
}

/* Whether input slot `info` must be given in case c (1), must not be (-1)
 * or may be (0), from the slot table alone: required slots always (k and v
 * unless paged), paged slots (k_pages, v_pages, block_table) exactly when
 * paged, backward inputs (dout) exactly in a backward case. */
static int input_rule(const sc_case *c, const sdpa_slot_info *info, sdpa_slot_group g)
{
    if (g == SDPA_SLOT_BACKWARD)
        return c->backward ? 1 : -1;
    if (info->paged)
        return (info->paged > 0) == (c->paged != 0) ? 1 : -1;
    return info->required ? 1 : 0;
}

/* The presence of every input, and the dtypes of the slots typed after q
 * (its dtype, the case's) or after K/V (one dtype for all of them). */
static int check_presence_and_dtypes(loader *L, const int *fdt)
{
    sc_case *c = L->c;
    int kv_key = -1;
    /* what must not be there first: pages without a block table are named
     * as such, not as a missing k */
    for (int w = 0; w < sc_key_count(); w++) {
        sdpa_slot_info info;
        sdpa_slot_group g;
        if (sc_key_info(w, &info, &g) && !info.output && c->in[w].present &&
            input_rule(c, &info, g) < 0)
            return fail(L, g == SDPA_SLOT_BACKWARD ? "inputs: \"%s\" given for a forward case"
                           : c->paged ? "inputs: \"%s\" given in a paged case (block_table is "
                                        "given: K/V come in k_pages and v_pages)"
                                      : "inputs: \"%s\" needs block_table (paged K/V)",
                        info.name);
    }
    for (int w = 0; w < sc_key_count(); w++) {
        sdpa_slot_info info;
        sdpa_slot_group g;
        if (!sc_key_info(w, &info, &g) || info.output)
            continue;
        const char *name = info.name;
        if (input_rule(c, &info, g) > 0 && !c->in[w].present)
            return fail(L, g == SDPA_SLOT_BACKWARD ? "inputs: a backward case needs \"%s\""
                           : c->paged && info.paged > 0
                               ? "inputs: missing \"%s\" (paged K/V: block_table is given)"
                               : "inputs: missing \"%s\"",
                        name);
        if (!c->in[w].present || info.dtype != SDPA_DTYPE_NONE)
            continue;
        if (!info.kv) {
            if (fdt[w] != (int)c->dtype)
                return fail(L, "inputs.%s: dtype %s differs from the case dtype %s", name,
                            file_dtype_name(fdt[w]), sdpa_dtype_name(c->dtype));
        } else if (kv_key < 0) { /* the K/V dtype: float or block-quantized */
            kv_key = w;
            c->kv_dtype = (sdpa_dtype)fdt[w];
            if (!is_float(fdt[w]) && file_block_elems(fdt[w]) <= 1)
                return fail(L, "inputs.%s: dtype %s is not a K/V dtype (f32, f16, bf16, q8_0, "
                            "q4_0)", name, file_dtype_name(fdt[w]));
        } else if (fdt[w] != (int)c->kv_dtype) {
            return fail(L, "inputs.%s: dtype %s differs from %s's %s (K and V share one dtype)",
                        name, file_dtype_name(fdt[w]), sc_key_name(kv_key),
                        sdpa_dtype_name(c->kv_dtype));
        }
    }
    return 1; /* a block dtype elsewhere fails its slot's dtype rule */
}

/* The case's extents from the inputs that define them (q; k, v or k_pages,
 * v_pages, block_table), the first one that has an axis setting it, as the
 * library does; the logical Skv of a paged case is max_pages * page. */
static int set_extents(loader *L)
{
    sc_case *c = L->c;
    for (int w = 0; w < sc_key_count(); w++) {
        sdpa_slot_info info;
        sdpa_slot_group g;
        int64_t lib[4];
        if (!sc_key_info(w, &info, &g) || info.output || g != SDPA_SLOT_FORWARD ||
            !c->in[w].present || input_rule(c, &info, g) <= 0)
            continue;
        if (!lib_shape_of(&c->in[w], &info, lib)) {
            int n = 0; /* the slot's non-unit axes */
            for (int a = 0; a < 4; a++)
                n += info.axes[a] != '1';
            return fail(L, "inputs.%s: shape must have %d axes%s (library axes %s)", info.name,
                        n, n < 4 ? " or 4" : "", info.axes);
        }
        for (int a = 0; a < 4; a++) {
            int64_t *e = extent_of(c, info.axes[a]);
            if (e && *e == 0)
                *e = lib[a];
        }
    }
    if (c->paged) {
        if (c->max_pages > SC_MAX_EXTENT / c->page)
            return fail(L, "inputs: max_pages (%lld) x page (%lld) keys exceed %lld",
                        (long long)c->max_pages, (long long)c->page, (long long)SC_MAX_EXTENT);
        c->Skv = c->max_pages * c->page;
    }
    if (c->Hq % c->Hkv != 0)
        return fail(L, "inputs: Hq = %lld is not a multiple of Hkv = %lld", (long long)c->Hq,
                    (long long)c->Hkv);
    return 1;
}

static int parse_inputs(loader *L, const cJSON *inputs)
{
    sc_case *c = L->c;
    int fdt[SC_MAX_KEYS] = {0};
    char what[64];
    if (sc_key_count() == 0)
        return fail(L, "the library has more slots than this runner's SC_MAX_KEYS (%d)",
                    SC_MAX_KEYS);
    if (!cJSON_IsObject(inputs))
        return fail(L, "inputs: missing object \"inputs\"");
    for (const cJSON *it = inputs->child; it; it = it->next) {
        int w = sc_key_find(it->string);
        sdpa_slot_info info;
        sdpa_slot_group g;
        if (w < 0 || !sc_key_info(w, &info, &g) || info.output)
            return fail(L, "inputs: unknown input \"%s\"", it->string);
        if (c->in[w].present)
            return fail(L, "inputs: \"%s\" given twice", it->string);
        snprintf(what, sizeof what, "inputs.%s", it->string);
        if (!read_entry(L, it, what, &c->in[w], &fdt[w]))
            return 0;
    }
    c->paged = c->in[sc_key_find("block_table")].present;
    if (!check_presence_and_dtypes(L, fdt) || !set_extents(L))
        return 0;
    /* every input against the extents: its slot's shape (broadcast axes may
     * be 1), then its values */
    for (int w = 0; w < sc_key_count(); w++) {
        sdpa_slot_info info;
        sdpa_slot_group g;
        sc_tensor *t = &c->in[w];
        if (!t->present || !sc_key_info(w, &info, &g))
            continue;
        snprintf(what, sizeof what, "inputs.%s", info.name);
        int64_t lib[4], file[4];
        int rank = sc_slot_shape(c, info.name, lib, file);
        if (!expect_shape_bc(L, t, what, rank, file, lib, (unsigned)info.broadcast))
            return 0;
        if (info.dtype == SDPA_DTYPE_U8 && fdt[w] != SDPA_DTYPE_U8)
            return fail(L, "%s: dtype must be u8", what);
        if (info.dtype == SDPA_DTYPE_F32 && !to_f32(L, t, what))
            return 0;
        /* i32 slots hold key counts (kv_len: [0, Skv]) or, with a block-table
         * axis, pool page indices ([0, pages - 1]) */
        const int page_index = strchr(info.axes, 'T') != NULL;
        if (info.dtype == SDPA_DTYPE_I32 &&
            !to_i32(L, t, fdt[w], info.name, page_index ? c->pages - 1 : c->Skv,
                    page_index ? "pages-1" : "Skv"))
            return 0;
    }
    return 1;
}

/* ---- expected outputs -------------------------------------------------------------- */

static int parse_stats_names(loader *L, const cJSON *e, int64_t cols)
{
    sc_case *c = L->c;
    const cJSON *names = cJSON_GetObjectItemCaseSensitive(e, "names");
    if (cols > (int64_t)(sizeof c->stats_map / sizeof c->stats_map[0]))
        return fail(L, "expected.stats: too many columns (%lld)", (long long)cols);
    c->stats_cols = (int)cols;
    if (!names) {
        if (cols != SDPA_STAT_COUNT)
            return fail(L, "expected.stats: %lld columns need a \"names\" list", (long long)cols);
        for (int i = 0; i < SDPA_STAT_COUNT; i++)
            c->stats_map[i] = i;
        return 1;
    }
    if (!cJSON_IsArray(names) || cJSON_GetArraySize(names) != cols)
        return fail(L, "expected.stats: \"names\" must list %lld column names", (long long)cols);
    for (int col = 0; col < (int)cols; col++) {
        const cJSON *n = cJSON_GetArrayItem(names, col);
        if (!cJSON_IsString(n))
            return fail(L, "expected.stats: names[%d] must be a string", col);
        int idx = -1;
        for (int s = 0; s < SDPA_STAT_COUNT; s++) {
            const char *sn = sdpa_stat_name(s);
            if (sn && strcmp(sn, n->valuestring) == 0)
                idx = s;
        }
        if (idx < 0)
            return fail(L, "expected.stats: unknown statistic \"%s\"", n->valuestring);
        c->stats_map[col] = idx;
    }
    return 1;
}

static int parse_expected(loader *L, const cJSON *exp)
{
    sc_case *c = L->c;
    char what[64];
    if (!cJSON_IsObject(exp) || !exp->child)
        return fail(L, "expected: missing or empty object \"expected\"");
    for (const cJSON *it = exp->child; it; it = it->next) {
        int w = sc_key_find(it->string);
        sdpa_slot_info oinfo;
        sdpa_slot_group og;
        if (w < 0 || !sc_key_info(w, &oinfo, &og) || !oinfo.output)
            return fail(L, "expected: unknown output \"%s\"", it->string);
        if (c->want[w].present)
            return fail(L, "expected: \"%s\" given twice", it->string);
        if (og == SDPA_SLOT_BACKWARD && !c->backward)
            return fail(L, "expected: \"%s\" needs op \"backward\"", it->string);
        snprintf(what, sizeof what, "expected.%s", it->string);
        int fdt;
        sc_tensor *t = &c->want[w];
        if (!read_entry(L, it, what, t, &fdt))
            return 0;
        if (!is_float(fdt))
            return fail(L, "%s: dtype must be f32, f16 or bf16", what);
        if (strchr(oinfo.axes, 'C')) { /* statistics (B, Hq, cols): the columns are named */
            int64_t cols = t->shape[t->rank - 1];
            const int64_t s[3] = {c->B, c->Hq, cols}, lib[4] = {c->B, c->Hq, 1, cols};
            if (!expect_shape(L, t, what, 3, s, lib) || !parse_stats_names(L, it, cols))
                return 0;
            continue;
        }
        /* an optional gradient needs its input (the slot it pairs with) */
        sdpa_slot_info info, of;
        int g = sdpa_slot_find(SDPA_SLOT_BACKWARD, it->string);
        if (g >= 0 && sdpa_slot_get_info(SDPA_SLOT_BACKWARD, g, &info) == SDPA_OK &&
            !info.required && sdpa_slot_get_info(SDPA_SLOT_FORWARD, info.pair, &of) == SDPA_OK &&
            !c->in[sc_key_find(of.name)].present)
            return fail(L, "%s: needs inputs.%s", what, of.name);
        /* the slot's shape without its unit axes, or the 4-D one */
        int64_t lib[4], file[4];
        int rank = sc_slot_shape(c, it->string, lib, file);
        if (!expect_shape(L, t, what, rank, file, lib))
            return 0;
    }
    return 1;
}

/* ---- the whole case ------------------------------------------------------------------ */

static int load_json(loader *L, char **text, size_t *len)
{
    struct stat st;
    int fd = open_in_case(L, "case.json", "case.json", &st);
    if (fd < 0)
        return 0;
    if ((uint64_t)st.st_size > SC_MAX_JSON_BYTES) {
        close(fd);
        return fail(L, "case.json: %lld bytes exceeds the limit of %zu",
                    (long long)st.st_size, SC_MAX_JSON_BYTES);
    }
    size_t n = (size_t)st.st_size;
    char *buf = malloc(n + 1);
    if (!buf) {
        close(fd);
        return fail(L, "case.json: out of memory");
    }
    int ok = read_all(fd, buf, n);
    close(fd);
    if (!ok) {
        free(buf);
        return fail(L, "case.json: read error");
    }
    buf[n] = '\0';
    *text = buf;
    *len = n;
    return 1;
}

static void json_error(loader *L, const char *text, const char *end, const char *what)
{
    int line = 1, col = 1;
    for (const char *p = text; end && p < end && *p; p++) {
        if (*p == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
    }
    fail(L, "case.json: %s near line %d, column %d", what, line, col);
}

static const char *base_name(const char *dir)
{
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        n--;
    size_t s = n;
    while (s > 0 && dir[s - 1] != '/')
        s--;
    static _Thread_local char buf[128];
    size_t len = n - s < sizeof buf - 1 ? n - s : sizeof buf - 1;
    memcpy(buf, dir + s, len);
    buf[len] = '\0';
    return buf;
}

static void copy_name(char *dst, size_t cap, const char *src)
{
    size_t i = 0;
    for (; src[i] && i + 1 < cap; i++)
        dst[i] = (unsigned char)src[i] < 0x20 || src[i] == ' ' ? '_' : src[i];
    dst[i] = '\0';
}

int sc_load(const char *dir, sc_case *c, char *err, size_t errcap)
{
    loader L = {c, err, errcap, NULL};
    char *text = NULL;
    size_t len = 0;
    cJSON *root = NULL;
    int ok = 0;

    memset(c, 0, sizeof *c);
    if (errcap)
        err[0] = '\0';
    if (strlen(dir) >= sizeof c->dir)
        return fail(&L, "case folder path too long");
    strcpy(c->dir, dir);
    copy_name(c->name, sizeof c->name, base_name(dir));
    L.real_dir = realpath(dir, NULL);
    if (!L.real_dir)
        return fail(&L, "case folder %s: cannot open", dir);

    if (!load_json(&L, &text, &len))
        goto done;
    const char *end = NULL;
    root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (!root) {
        json_error(&L, text, end, "invalid JSON");
        goto done;
    }
    /* No NUL byte (a C string would hide what follows it), one JSON value
     * and nothing after it but white space. */
    const char *nul = memchr(text, '\0', len);
    if (nul) {
        fail(&L, "case.json: NUL byte at offset %zu", (size_t)(nul - text));
        goto done;
    }
    while (end < text + len && (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r'))
        end++;
    if (end < text + len) {
        json_error(&L, text, end, "text after the JSON object");
        goto done;
    }
    if (!cJSON_IsObject(root)) {
        fail(&L, "case.json: top level must be an object");
        goto done;
    }
    const char *format = get_string(root, "format");
    if (!format) {
        fail(&L, "case.json: missing string \"format\"");
        goto done;
    }
    if (strcmp(format, "sdpa-case/1") != 0) {
        fail(&L, "case.json: unsupported format \"%s\" (this runner reads sdpa-case/1)", format);
        goto done;
    }
    const char *name = get_string(root, "name");
    if (name && *name)
        copy_name(c->name, sizeof c->name, name);
    const char *op = get_string(root, "op");
    if (!op || (strcmp(op, "forward") != 0 && strcmp(op, "backward") != 0)) {
        fail(&L, "case.json: \"op\" must be \"forward\" or \"backward\"");
        goto done;
    }
    c->backward = strcmp(op, "backward") == 0;
    const char *dts = get_string(root, "dtype");
    int dt = 0;
    if (!dts) {
        fail(&L, "case.json: missing string \"dtype\"");
        goto done;
    }
    if (!parse_dtype(dts, &dt) || !is_float(dt)) {
        fail(&L, "case.json: dtype \"%s\" is not a storage dtype (f32, f16, bf16)", dts);
        goto done;
    }
    c->dtype = (sdpa_dtype)dt;
    if (!parse_attrs(&L, cJSON_GetObjectItemCaseSensitive(root, "attrs")) ||
        !parse_inputs(&L, cJSON_GetObjectItemCaseSensitive(root, "inputs")) ||
        !parse_expected(&L, cJSON_GetObjectItemCaseSensitive(root, "expected")))
        goto done;
    const cJSON *tol = cJSON_GetObjectItemCaseSensitive(root, "tolerance");
    if (!cJSON_IsObject(tol)) {
        fail(&L, "case.json: missing object \"tolerance\"");
        goto done;
    }
    if (!get_number(&L, tol, "max_abs", &c->tol_max_abs, 1, "tolerance") ||
        !get_number(&L, tol, "rel_l2", &c->tol_rel_l2, 1, "tolerance"))
        goto done;
    if (c->tol_max_abs < 0 || c->tol_rel_l2 < 0) {
        fail(&L, "tolerance: values must be >= 0");
        goto done;
    }
    ok = 1;
done:
    cJSON_Delete(root);
    free(text);
    free(L.real_dir);
    if (!ok) {
        char keep[128];
        memcpy(keep, c->name, sizeof keep);
        sc_free(c);
        memcpy(c->name, keep, sizeof keep);
    }
    return ok;
}

void sc_free(sc_case *c)
{
    if (!c)
        return;
    for (int i = 0; i < SC_MAX_KEYS; i++) {
        free(c->in[i].data);
        free(c->want[i].data);
    }
    memset(c, 0, sizeof *c);
}
