/*
 * sdpa-bench — forward/backward timings side by side across backends.
 *
 *   sdpa-bench [--backend LIST] [--shape B,Hq,Hkv,Sq,Skv,D[,Dv]]... [--preset P]...
 *              [--causal | --window L,R] [--diagonal top_left|bottom_right]
 *              [--dtype f32|f16|bf16] [--kv-dtype T[,T...]] [--page-size N[,N...]]
 *              [--alibi] [--sinks] [--backward] [--stats] [--threads N]
 *              [--device SEL] [--repeat N] [--warmup N] [--gap-ms N]
 *              [--gap-touch LIST] [--read-ref]
 *              [--interleave] [--json | --csv]
 *              [--plot FILE.svg] [--max-seconds S] [--gemm-params K] [--no-peak]
 *              [--refresh-peak] [--profile-dir DIR]
 *              [--help]
 *
 * Inputs live in device buffers (sdpa_buffer_create + sdpa_tensor_buffer), so
 * timings cover the plan's enqueue + completion only, never host copies. For
 * each shape, the repetitions interleave the backends (rep 1: A B C, rep 2:
 * A B C, ...) so machine noise hits all alike. --kv-dtype and --page-size
 * take lists: each shape runs once per (K/V type, page size), type outer.
 * --interleave sets up every row (shape x variant x backend) first and runs
 * the timed repetitions in rounds over all of them (round r starts at row
 * r mod n), and adds `vs base`: per row, the median over rounds of the base
 * row's time over its own in the same round, the base being the first row
 * of the same shape, op and backend; on a machine whose speed drifts (a VM)
 * these paired ratios hold where the rows' medians do not. Reported per
 * row: plan creation time, median/min/max ms, GFLOP/s over the kept (i, j)
 * pairs of the band (exactly counted), the fraction of the device's fp32 FMA peak (every
 * backend: sdpa_context_peak, measured once per device by the library's
 * micro-benchmark and cached in the profile dir; --refresh-peak measures
 * again, before the rows and after them, so that the two show how far the
 * machine's speed moved during the run; a row above 100 % makes the tool
 * measure that peak again, and a row still above is flagged `>100?`),
 * memory of buffers + workspace, the speedup relative to the first backend
 * listed, and the plan's kernel
 * configuration with where it came from (default, profile, shipped profile,
 * forced). --read-ref adds to each forward row a read reference (after the
 * repetitions, as many reads as the row's timed runs): a plain read of the
 * row's K/V bytes on the context's threads after the same --gap-ms pause
 * (sdpa_context_read_time), its median and the row's ratio to it, so a call
 * after a pause is judged against what the memory gives after that pause.
 * --gap-touch q,k,v reads those inputs on the calling thread after each
 * pause, outside the timed interval (sdpa_buffer_read, 64 KiB at a time), as
 * the layer that computed them would leave them in the caches: the pause
 * then costs its thread wake-ups and the cold caches of what the call itself
 * brings in, not its inputs' reads (host backends only: cpu, reference).
 * Presets are tools/common/presets.c's, shared with sdpa-tune, so
 * a tuned preset is what its benchmark runs. Before allocating, the memory
 * each shape needs is checked against the machine (exit 2 when it cannot
 * fit), and with --interleave the sum over all shapes. Rows the backend
 * refuses (SDPA_ERR_UNSUPPORTED, or SDPA_ERR_WORKSPACE from the workspace
 * limit) say `unsupported` and do not fail the run. `opencl-unfused` in the backend list is the OpenCL
 * backend with tile.unfused = 1 (scores through CLBlast), for fused vs
 * unfused side by side (forward only). --plot draws GFLOP/s against
 * Skv as SVG (tools/common/plot.c). Exit status: 0 ok, 1 when a run failed
 * (errors other than unsupported) or a context could not be made, 2 on
 * usage errors and shapes larger than the machine.
 * Thin program over sdpa.h (SDPA_EXPERIMENTAL for plan info and device peaks)
 * and tools/common.
 */
#include <cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "args.h"
#include "plot.h"
#include "presets.h"
#include "sdpa.h"
#include "util.h"

#define MAX_BACKENDS 8
#define MAX_SHAPES 64

typedef struct shape {
    int64_t B, Hq, Hkv, Sq, Skv, D, Dv;
    int64_t wl, wr;        /* window; -1 = unbounded */
    sdpa_diagonal diagonal;
    sdpa_dtype dtype;      /* storage of q, k, v, out (and the gradients) */
    sdpa_dtype kv_dtype;   /* storage of k, v (--kv-dtype; else dtype) */
    int page;              /* --page-size: paged K/V with pages of this many keys */
    int alibi, sinks;      /* --alibi, --sinks */
    char dtname[24];       /* "f32" or "f32/q8_0" (q / K/V) */
} shape;

typedef struct options {
    sdpa_backend_kind backends[MAX_BACKENDS];
    int unfused[MAX_BACKENDS]; /* 1 = opencl-unfused: tile.unfused = 1 */
    int nbackends;
    shape given[MAX_SHAPES]; /* --shape and preset rows, as given */
    int ngiven;
    shape *shapes;          /* the rows' shapes: each given one per --kv-dtype x
                               --page-size value (dtype outer), in list order */
    int nshapes;
    int causal, has_window, has_diagonal;
    int64_t wl, wr;
    sdpa_diagonal diagonal;
    sdpa_dtype dtype;
    int has_dtype;          /* --dtype given: it overrides the presets' dtypes */
    ta_kv_opts kv;          /* --kv-dtype and --page-size lists (none = each shape's
                               dtype, contiguous K/V), --alibi, --sinks */
    int interleave;         /* --interleave: every row set up first, rounds over all */
    int backward, stats, threads, repeat, warmup, json, csv, no_peak, refresh_peak;
    int gemm_params;        /* opencl-unfused: CLBlast parameter set, SDPA_AUTO = in force */
    const char *device;
    const char *profile_dir; /* --profile-dir, NULL = the library's default */
    const char *plot;       /* --plot FILE.svg, NULL = none */
    double max_seconds;     /* per backend and shape; 0 = no limit */
    double gap_ms;          /* pause before every call (ms); 0 = back to back */
    unsigned gap_touch;     /* --gap-touch: TOUCH_* bits, 0 = none */
    const char *gap_touch_list; /* its value as given, for the output */
    int read_ref;           /* --read-ref: a read reference per forward row */
} options;

/* --gap-touch: the inputs a call's caller can have just written. */
enum { TOUCH_Q = 1, TOUCH_K = 2, TOUCH_V = 4, TOUCH_DOUT = 8 };

/* One backend on one shape. */
typedef struct job {
    sdpa_backend_kind kind;
    int unfused;                /* forced unfused (CLBlast) path, forward only */
    sdpa_context *ctx;          /* borrowed */
    sdpa_buffer *buf[14];
    sdpa_plan *plan;
    sdpa_forward_tensors fwd;
    sdpa_backward_tensors bwd;
    sdpa_status status;         /* first failure, SDPA_OK while usable */
    char error[256];
    double plan_ms;
    size_t mem_bytes;
    char kernel[96];
    char config[256], source[64]; /* sdpa_plan_info: parameters and where from */
    double *t_fwd, *t_bwd;      /* repeat samples, ms, in run order */
    double *r_fwd, *r_bwd;      /* the same by round, NAN where the job sat out */
    int nrun;                   /* timed runs done */
    double spent;               /* seconds spent running (warm-up + timed) */
    double read_ms;             /* --read-ref: median read of the K/V bytes, NAN = none */
    size_t touch_fwd, touch_bwd; /* --gap-touch: bytes read before each forward / backward */
} job;

/* ---- usage -------------------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: sdpa-bench [options]\n"
            "\n"
            "Times attention forward (and backward) on one or more backends, side by side.\n"
            "\n"
            "  --backend LIST   comma list of auto|reference|cpu|opencl|opencl-unfused|\n"
            "                   vulkan, or `all` (every compiled backend with a device\n"
            "                   except reference; name reference explicitly to add it).\n"
            "                   opencl-unfused forces the materialised-scores path\n"
            "                   (CLBlast GEMMs; forward only). Default: cpu\n"
            "  --shape B,Hq,Hkv,Sq,Skv,D[,Dv]   problem shape (repeatable; Dv = D if\n"
            "                   omitted). Default when no shape or preset is given:\n"
            "                   1,8,8,1024,1024,64\n"
            "  --preset NAME    a named set of shapes, the same as sdpa-tune's (repeatable):\n");
    tps_print_help(f, 19, 1);
    fprintf(f,
            "  --causal         causal attention, window (-1, 0), for every shape\n"
            "  --window L,R     band i+off-L <= j <= i+off+R (-1 = unbounded), every shape\n"
            "  --diagonal D     top_left | bottom_right (default bottom_right: off = Skv-Sq)\n"
            "  --dtype T        f32 | f16 | bf16 storage for every shape (default: f32 for\n"
            "                   --shape, a preset's own dtype for its rows)\n"
            "  --kv-dtype T     K/V storage f32 | f16 | bf16 | q8_0 | q4_0 (default: --dtype;\n"
            "                   q8_0/q4_0: random blocks, forward only, D multiple of 32);\n"
            "                   a comma list (f32,f16) runs every shape once per type\n"
            "  --page-size N    paged K/V: pages of N keys in a shuffled pool, a block\n"
            "                   table and kv_len = Skv (forward only); 0 = contiguous; a\n"
            "                   comma list (0,16) runs every shape once per size (inside\n"
            "                   the --kv-dtype list: f32 0, f32 16, f16 0, f16 16)\n"
            "  --alibi          ALiBi slopes 2^(-8(h+1)/Hq) per query head\n"
            "  --sinks          an attention sink logit (0.5) per query head\n"
            "  --backward       also time the backward pass (rows with op bwd)\n"
            "  --stats          request the in-kernel statistics output\n"
            "  --threads N      CPU threads (default: all cores)\n"
            "  --device SEL     device index or name substring for every backend\n"
            "  --repeat N       timed repetitions (default 10)\n"
            "  --warmup N       untimed repetitions first (default 2)\n"
            "  --gap-ms N       sleep N ms before every call (forward and backward), the\n"
            "                   way applications call: measures calls that follow a pause\n"
            "                   (threads asleep, caches cold); default 0 = back to back\n"
            "  --gap-touch LIST after each pause, read these inputs on the calling thread\n"
            "                   before the timed call (comma list of q, k, v, dout), the\n"
            "                   way the layer that just computed them leaves them in the\n"
            "                   caches: the row then shows what the pause costs beyond\n"
            "                   its inputs' cold reads. Needs --gap-ms above 0; dout needs\n"
            "                   --backward; cpu and reference backends only (host memory)\n"
            "  --interleave     set up every row (shapes x K/V types x page sizes x\n"
            "                   backends) first, then run the timed repetitions in rounds\n"
            "                   over all rows, each round starting one row later; adds\n"
            "                   `vs base` (see below). Refused (exit 2) when all rows'\n"
            "                   buffers together do not fit in memory\n"
            "  --read-ref       also time, per forward row, a plain read of its K/V bytes\n"
            "                   (the bytes GB/s counts) on the same threads after the same\n"
            "                   pause, as many reads as timed runs: columns `read ms`\n"
            "                   (median) and `vs read` (the row's median over it); `-` on\n"
            "                   OpenCL and Vulkan, which have no such reference\n"
            "  --json | --csv   machine-readable output instead of the table\n"
            "  --plot FILE.svg  also draw GFLOP/s against sequence length (Skv) per\n"
            "                   backend and op (SVG only: FILE must end in .svg)\n"
            "  --max-seconds S  stop repeating a backend on a shape once its runs took\n"
            "                   S seconds (at least one timed run; `runs` says how many)\n"
            "  --gemm-params K  CLBlast parameter set of the opencl-unfused rows: 0 =\n"
            "                   CLBlast's own, 1.. = libsdpa's table (docs/opencl.md);\n"
            "                   default: the set in force (none at start = CLBlast's)\n"
            "  --no-peak        no device peaks or bandwidths (empty %% peak, %% bw)\n"
            "  --refresh-peak   measure every device's peak (and read bandwidth) again\n"
            "                   before the rows and after them (the machine's drift\n"
            "                   during the run; %% peak and %% bw use the first) and\n"
            "                   update the cache\n"
            "  --profile-dir D  profiles and peak cache read from D (default: SDPA_PROFILE_DIR,\n"
            "                   else $XDG_DATA_HOME/sdpa/profiles, else\n"
            "                   ~/.local/share/sdpa/profiles), as sdpa-tune writes them\n"
            "  -h, --help       this text\n"
            "\n"
            "GFLOP/s counts 2*(D+Dv) flops per kept (query, key) pair (4*D when Dv = D),\n"
            "exactly over the band for causal/window; the backward counts 2.5x the\n"
            "forward. `vs first` is the first listed backend's median divided by this\n"
            "row's (above 1 = faster). `%% peak` compares GFLOP/s with the device's fp32\n"
            "FMA peak, for every backend: measured once per device by a built-in FMA\n"
            "micro-benchmark (about 0.3 s; a C loop on the CPU, a kernel on OpenCL and\n"
            "Vulkan devices) and cached in the profile dir (peak.jsonl), so later runs\n"
            "read it; a new driver version is measured again. A row above 100 %% makes\n"
            "the tool measure that peak again; a row still above is shown as >100? with a\n"
            "warning. Decode rows (forward, Sq <= 16) also show `GB/s`, the bytes of K\n"
            "and V read per second in their storage type (every kept key once per KV\n"
            "head; q8_0 34 and q4_0 18 bytes per 32 elements), and `%% bw`, that\n"
            "over the read bandwidth of the device (a STREAM-like read loop on the CPU\n"
            "backends, cached beside the peak; none for OpenCL and Vulkan). With\n"
            "--read-ref, `vs read` near 1 means the call takes about as long as merely\n"
            "reading its K/V after the same pause (each thread sleeps the pause itself and\n"
            "the threads start together, so the read pays the cold caches but no thread\n"
            "wake-up); judge a --gap-ms row by it, not by the back-to-back row. The CPU peak\n"
            "is measured at the vector width of the kernels in use (SDPA_CPU_KERNELS).\n"
            "With --interleave, `vs base` is the median over rounds of (the base row's time\n"
            "/ this row's time in the same round), the base row being the first row of the\n"
            "same shape B..Dv, op and backend (with --kv-dtype f32,f16 --page-size 0,16: the\n"
            "f32 contiguous row, which shows 1.000); above 1 = faster; CSV and JSON add its\n"
            "quartiles (vs_base_q1, vs_base_q3). The calls it pairs ran milliseconds apart, so\n"
            "it holds on a machine whose speed drifts (a VM, a shared host), where medians\n"
            "of separate rows do not: quote these ratios there.\n"
            "`config` is the plan's kernel configuration and `source` where it\n"
            "came from: default, profile, shipped profile or forced.\n"
            "Shapes whose buffers do not fit in the machine's memory are refused (exit 2)\n"
            "before anything is allocated.\n"
            "Exit status: 0 ok, 1 a run failed or no context (e.g. no such device),\n"
            "2 usage error or a shape too large for the machine.\n");
}

/* ---- shapes and flops ------------------------------------------------------------ */

/* A --shape or preset row; its dtype (NONE for --shape) is settled after
 * parsing, when --dtype is known. */
static int add_shape(options *o, const tps_shape *t)
{
    if (o->ngiven >= MAX_SHAPES)
        return 0;
    shape *s = &o->given[o->ngiven++];
    s->B = t->B, s->Hq = t->Hq, s->Hkv = t->Hkv, s->Sq = t->Sq, s->Skv = t->Skv;
    s->D = t->D, s->Dv = t->Dv;
    s->wl = -1;
    s->wr = t->causal ? 0 : -1;
    s->diagonal = SDPA_DIAGONAL_BOTTOM_RIGHT;
    s->dtype = t->dtype;
    return 1;
}

/* 1 ok, 0 too many shapes, -1 unknown name. */
static int add_preset(options *o, const char *name)
{
    tps_shape rows[MAX_SHAPES];
    int n = tps_rows(name, rows, MAX_SHAPES);
    for (int i = 0; i < n; i++)
        if (i == MAX_SHAPES || !add_shape(o, &rows[i]))
            return 0;
    return n < 0 ? -1 : 1;
}

/* Kept (i, j) pairs of the band for one (batch, head), with kv_len = Skv. */
static double kept_pairs(const shape *s)
{
    int64_t off = s->diagonal == SDPA_DIAGONAL_BOTTOM_RIGHT ? s->Skv - s->Sq : 0;
    if (s->wl < 0 && s->wr < 0)
        return (double)s->Sq * (double)s->Skv;
    double n = 0;
    for (int64_t i = 0; i < s->Sq; i++) {
        int64_t lo = s->wl < 0 ? 0 : i + off - s->wl;
        int64_t hi = s->wr < 0 ? s->Skv - 1 : i + off + s->wr;
        if (lo < 0)
            lo = 0;
        if (hi > s->Skv - 1)
            hi = s->Skv - 1;
        if (hi >= lo)
            n += (double)(hi - lo + 1);
    }
    return n;
}

/* Rows of at most this many queries are decode rows: memory-bound, shown as
 * a fraction of the read bandwidth. */
#define DECODE_MAX_SQ 16

/* Bytes of K and V a decode row reads: every key in the union of the rows'
 * kept ranges, once per KV head (the query heads of a group share it). */
static double kv_bytes(const shape *s)
{
    int64_t off = s->diagonal == SDPA_DIAGONAL_BOTTOM_RIGHT ? s->Skv - s->Sq : 0;
    int64_t lo = s->Skv, hi = -1;
    for (int64_t i = 0; i < s->Sq; i++) {
        int64_t l = s->wl < 0 ? 0 : i + off - s->wl;
        int64_t h = s->wr < 0 ? s->Skv - 1 : i + off + s->wr;
        l = l < 0 ? 0 : l;
        h = h > s->Skv - 1 ? s->Skv - 1 : h;
        if (h >= l) {
            lo = l < lo ? l : lo;
            hi = h > hi ? h : hi;
        }
    }
    const double esz = (double)sdpa_dtype_size(s->kv_dtype) /
                       (double)sdpa_dtype_block_elems(s->kv_dtype); /* bytes per element */
    return hi < lo ? 0.0
                   : (double)s->B * (double)s->Hkv * (double)(hi - lo + 1) *
                         (double)(s->D + s->Dv) * esz;
}

static double forward_flops(const shape *s)
{
    return (double)s->B * (double)s->Hq * kept_pairs(s) * 2.0 * (double)(s->D + s->Dv);
}

static void shape_str(const shape *s, char *buf, size_t cap)
{
    snprintf(buf, cap, "%lld,%lld,%lld,%lld,%lld,%lld,%lld", (long long)s->B, (long long)s->Hq,
             (long long)s->Hkv, (long long)s->Sq, (long long)s->Skv, (long long)s->D,
             (long long)s->Dv);
}

static void band_str(const shape *s, char *buf, size_t cap)
{
    const char *dg = s->diagonal == SDPA_DIAGONAL_TOP_LEFT ? "tl" : "br";
    if (s->wl < 0 && s->wr < 0)
        snprintf(buf, cap, "none");
    else if (s->wl < 0 && s->wr == 0)
        snprintf(buf, cap, "causal-%s", dg);
    else
        snprintf(buf, cap, "win(%lld,%lld)-%s", (long long)s->wl, (long long)s->wr, dg);
    const size_t n = strlen(buf);
    snprintf(buf + n, cap - n, "%s%s", s->alibi ? "+alibi" : "", s->sinks ? "+sinks" : "");
    if (s->page > 0) {
        const size_t m = strlen(buf);
        snprintf(buf + m, cap - m, "+paged%d", s->page);
    }
}

/* ---- argument parsing ------------------------------------------------------------- */

static int add_backend(options *o, sdpa_backend_kind k, int unfused)
{
    for (int i = 0; i < o->nbackends; i++)
        if (o->backends[i] == k && o->unfused[i] == unfused)
            return 1;
    if (o->nbackends >= MAX_BACKENDS)
        return 0;
    o->unfused[o->nbackends] = unfused;
    o->backends[o->nbackends++] = k;
    return 1;
}

static int parse_backends(options *o, const char *list, ta_args *a)
{
    char buf[256];
    if (strlen(list) >= sizeof buf || !*list) {
        ta_fail(a, "--backend: bad list \"%s\"", list);
        return 0;
    }
    strcpy(buf, list);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        if (strcasecmp(tok, "all") == 0) {
            /* every backend with a device, but the float64 reference */
            for (int i = SDPA_BACKEND_CPU; i < SDPA_BACKEND_COUNT; i++) {
                const sdpa_backend_kind ki = (sdpa_backend_kind)i;
                int n = 0;
                if (sdpa_backend_compiled(ki) && sdpa_device_count(ki, &n) == SDPA_OK && n > 0)
                    add_backend(o, ki, 0);
            }
            continue;
        }
        sdpa_backend_kind k;
        int unfused = strcasecmp(tok, "opencl-unfused") == 0;
        if (unfused) {
            k = SDPA_BACKEND_OPENCL;
        } else if (sdpa_backend_parse(tok, &k) != SDPA_OK || k == SDPA_BACKEND_DEFAULT) {
            ta_fail(a, "--backend: unknown backend \"%s\" (auto, reference, cpu, opencl, "
                       "opencl-unfused, vulkan, all)", tok);
            return 0;
        }
        if (!add_backend(o, k, unfused)) {
            ta_fail(a, "--backend: too many backends");
            return 0;
        }
    }
    return 1;
}

/* --gap-touch's list into TOUCH_* bits; 0 on an unknown or empty element. */
static int parse_touch(const char *list, unsigned *bits)
{
    static const struct { const char *name; unsigned bit; } names[] = {
        {"q", TOUCH_Q}, {"k", TOUCH_K}, {"v", TOUCH_V}, {"dout", TOUCH_DOUT}};
    *bits = 0;
    for (const char *p = list;; p++) {
        const char *end = strchr(p, ',');
        const size_t len = end ? (size_t)(end - p) : strlen(p);
        unsigned bit = 0;
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
            if (strlen(names[i].name) == len && strncmp(p, names[i].name, len) == 0)
                bit = names[i].bit;
        if (!bit)
            return 0;
        *bits |= bit;
        if (!end)
            return 1;
        p = end;
    }
}

static int parse_args(options *o, int argc, char **argv, int *help)
{
    ta_args a;
    memset(o, 0, sizeof *o);
    o->dtype = SDPA_DTYPE_F32;
    o->threads = SDPA_AUTO;
    o->repeat = 10;
    o->warmup = 2;
    o->gemm_params = SDPA_AUTO;
    o->diagonal = SDPA_DIAGONAL_BOTTOM_RIGHT;
    *help = 0;
    ta_init(&a, argc, argv);
    int64_t v[8];
    int n;
    while (!a.error && ta_next(&a)) {
        const char *val;
        if (a.positional) {
            ta_fail(&a, "unexpected argument %s", a.arg);
        } else if (ta_flag(&a, "--help") || ta_flag(&a, "-h")) {
            *help = 1;
        } else if (ta_value(&a, "--backend", &val)) {
            if (val)
                parse_backends(o, val, &a);
        } else if (ta_value(&a, "--shape", &val)) {
            if (!val)
                break;
            tps_shape t;
            char err[200];
            if (!tps_parse_shape(val, &t, err, sizeof err))
                ta_fail(&a, "%s", err);
            else if (!add_shape(o, &t))
                ta_fail(&a, "too many shapes (at most %d)", MAX_SHAPES);
        } else if (ta_value(&a, "--preset", &val)) {
            if (!val)
                break;
            int r = add_preset(o, val);
            if (r < 0)
                ta_fail(&a, "--preset: unknown preset \"%s\" (%s)", val, tps_names());
            else if (r == 0)
                ta_fail(&a, "too many shapes (at most %d)", MAX_SHAPES);
        } else if (ta_flag(&a, "--causal")) {
            o->causal = 1;
        } else if (ta_value(&a, "--window", &val)) {
            if (!val)
                break;
            if (!ta_parse_i64_list(val, -1, (int64_t)1 << 31, 2, 2, v, &n))
                ta_fail(&a, "--window: expected L,R with integers >= -1, got \"%s\"", val);
            o->has_window = 1;
            o->wl = v[0];
            o->wr = v[1];
        } else if (ta_value(&a, "--diagonal", &val)) {
            if (!val)
                break;
            o->has_diagonal = 1;
            if (strcmp(val, "top_left") == 0)
                o->diagonal = SDPA_DIAGONAL_TOP_LEFT;
            else if (strcmp(val, "bottom_right") == 0)
                o->diagonal = SDPA_DIAGONAL_BOTTOM_RIGHT;
            else
                ta_fail(&a, "--diagonal: expected top_left or bottom_right, got \"%s\"", val);
        } else if (ta_value(&a, "--dtype", &val)) {
            if (val && !ta_parse_float_dtype(val, &o->dtype))
                ta_fail(&a, "--dtype: expected f32, f16 or bf16, got \"%s\"", val);
            o->has_dtype = 1;
        } else if (ta_kv_options(&a, &o->kv, TA_KV_LIST_MAX)) {
            /* --kv-dtype, --page-size (lists), --alibi, --sinks (tools/common/args.c) */
        } else if (ta_flag(&a, "--interleave")) {
            o->interleave = 1;
        } else if (ta_flag(&a, "--backward")) {
            o->backward = 1;
        } else if (ta_flag(&a, "--stats")) {
            o->stats = 1;
        } else if (ta_value(&a, "--threads", &val)) {
            if (val && !ta_parse_int(val, 1, 4096, &o->threads))
                ta_fail(&a, "--threads: expected an integer in [1, 4096], got \"%s\"", val);
        } else if (ta_value(&a, "--device", &val)) {
            if (val && !*val)
                ta_fail(&a, "--device: empty value");
            o->device = val;
        } else if (ta_value(&a, "--repeat", &val)) {
            if (val && !ta_parse_int(val, 1, 1000000, &o->repeat))
                ta_fail(&a, "--repeat: expected an integer in [1, 1000000], got \"%s\"", val);
        } else if (ta_value(&a, "--warmup", &val)) {
            if (val && !ta_parse_int(val, 0, 1000000, &o->warmup))
                ta_fail(&a, "--warmup: expected an integer in [0, 1000000], got \"%s\"", val);
        } else if (ta_flag(&a, "--json")) {
            o->json = 1;
        } else if (ta_flag(&a, "--csv")) {
            o->csv = 1;
        } else if (ta_value(&a, "--max-seconds", &val)) {
            if (val && (!ta_parse_double(val, &o->max_seconds) || o->max_seconds <= 0))
                ta_fail(&a, "--max-seconds: expected a number > 0, got \"%s\"", val);
        } else if (ta_value(&a, "--gap-ms", &val)) {
            if (val && (!ta_parse_double(val, &o->gap_ms) || !(o->gap_ms >= 0) ||
                        o->gap_ms > 60000))
                ta_fail(&a, "--gap-ms: expected a number in [0, 60000], got \"%s\"", val);
        } else if (ta_value(&a, "--gap-touch", &val)) {
            if (val && !parse_touch(val, &o->gap_touch))
                ta_fail(&a, "--gap-touch: expected a comma list of q, k, v, dout, got \"%s\"",
                        val);
            o->gap_touch_list = val;
        } else if (ta_flag(&a, "--read-ref")) {
            o->read_ref = 1;
        } else if (ta_value(&a, "--gemm-params", &val)) {
            if (val && !ta_parse_int(val, 0, 64, &o->gemm_params))
                ta_fail(&a, "--gemm-params: expected an integer in [0, 64], got \"%s\"", val);
        } else if (ta_flag(&a, "--no-peak")) {
            o->no_peak = 1;
        } else if (ta_flag(&a, "--refresh-peak")) {
            o->refresh_peak = 1;
        } else if (ta_value(&a, "--plot", &val)) {
            char err[300];
            if (val && !tp_svg_path_check(val, err, sizeof err))
                ta_fail(&a, "--plot: %s", err);
            o->plot = val;
        } else if (ta_value(&a, "--profile-dir", &val)) {
            if (val && !*val)
                ta_fail(&a, "--profile-dir: empty value");
            o->profile_dir = val;
        } else {
            ta_fail(&a, "unknown option %s", a.arg);
        }
    }
    if (!a.error && o->causal && o->has_window)
        ta_fail(&a, "--causal and --window exclude each other (causal is --window -1,0)");
    if (!a.error && o->json && o->csv)
        ta_fail(&a, "--json and --csv exclude each other");
    if (!a.error && o->gap_touch && !(o->gap_ms > 0))
        ta_fail(&a, "--gap-touch needs --gap-ms above 0 (back to back, the inputs are in "
                    "the caches already)");
    if (!a.error && (o->gap_touch & TOUCH_DOUT) && !o->backward)
        ta_fail(&a, "--gap-touch dout needs --backward");
    for (int b = 0; !a.error && o->gap_touch && b < o->nbackends; b++)
        if (o->backends[b] != SDPA_BACKEND_CPU && o->backends[b] != SDPA_BACKEND_REFERENCE)
            ta_fail(&a, "--gap-touch: backend %s: only cpu and reference keep their buffers "
                        "in host memory (a read elsewhere is a device transfer)",
                    sdpa_backend_name(o->backends[b]));
    if (a.error) {
        fprintf(stderr, "sdpa-bench: %s\nTry 'sdpa-bench --help'.\n", a.message);
        return 0;
    }
    if (*help)
        return 1;
    if (o->nbackends == 0)
        add_backend(o, SDPA_BACKEND_CPU, 0);
    if (o->ngiven == 0)
        add_shape(o, &(tps_shape){1, 8, 8, 1024, 1024, 64, 64, 0, SDPA_DTYPE_NONE});
    const int nkv = o->kv.nkv ? o->kv.nkv : 1, npage = o->kv.npage ? o->kv.npage : 1;
    o->shapes = calloc((size_t)(o->ngiven * nkv * npage), sizeof *o->shapes);
    if (!o->shapes) {
        fprintf(stderr, "sdpa-bench: out of memory\n");
        return 0;
    }
    for (int i = 0; i < o->ngiven; i++) {
        shape *g = &o->given[i];
        if (o->has_dtype || g->dtype == SDPA_DTYPE_NONE)
            g->dtype = o->dtype;
        g->alibi = o->kv.alibi;
        g->sinks = o->kv.sinks;
        if (o->causal)
            g->wl = -1, g->wr = 0;
        if (o->has_window)
            g->wl = o->wl, g->wr = o->wr;
        if (o->has_diagonal)
            g->diagonal = o->diagonal;
        for (int k = 0; k < nkv; k++)
            for (int p = 0; p < npage; p++) {
                shape *s = &o->shapes[o->nshapes++];
                *s = *g;
                s->kv_dtype = o->kv.nkv ? o->kv.kv[k] : s->dtype;
                s->page = o->kv.npage ? o->kv.page[p] : 0;
                if (s->kv_dtype == s->dtype)
                    snprintf(s->dtname, sizeof s->dtname, "%s", sdpa_dtype_name(s->dtype));
                else
                    snprintf(s->dtname, sizeof s->dtname, "%s/%s", sdpa_dtype_name(s->dtype),
                             sdpa_dtype_name(s->kv_dtype));
            }
    }
    return 1;
}

/* ---- one backend on one shape ------------------------------------------------------ */

enum { BQ, BK, BV, BOUT, BLSE, BSTATS, BDOUT, BDQ, BDK, BDV, BTABLE, BKVLEN, BALIBI, BSINKS };

static void job_fail(job *j, sdpa_status st, const char *what)
{
    if (j->status != SDPA_OK)
        return;
    j->status = st;
    sdpa_error_info info;
    memset(&info, 0, sizeof info);
    const char *msg = "";
    if (j->ctx && sdpa_context_last_error(j->ctx, &info) == SDPA_OK && info.message)
        msg = info.message;
    snprintf(j->error, sizeof j->error, "%s: %s%s%s", what, sdpa_status_name(st),
             *msg ? ": " : "", msg);
}

/* Makes buffer b with the given shape, filled from host data (or left
 * undefined for outputs when host is NULL). */
static int make_buffer(job *j, int b, sdpa_dtype dt, const int64_t sh[4], const void *host,
                       sdpa_tensor *t)
{
    size_t n = 1, bytes;
    /* storage units: the last axis in blocks for q8_0 / q4_0 */
    const int64_t u[4] = {sh[0], sh[1], sh[2], sh[3] / sdpa_dtype_block_elems(dt)};
    for (int a = 0; a < 4; a++)
        if (!tu_mul_size(n, (size_t)u[a], &n)) {
            job_fail(j, SDPA_ERR_SHAPE, "tensor size overflows");
            return 0;
        }
    if (!tu_mul_size(n, sdpa_dtype_size(dt), &bytes)) {
        job_fail(j, SDPA_ERR_SHAPE, "tensor size overflows");
        return 0;
    }
    sdpa_status st = sdpa_buffer_create(j->ctx, bytes, &j->buf[b]);
    if (st != SDPA_OK) {
        job_fail(j, st, "sdpa_buffer_create");
        return 0;
    }
    if (host && (st = sdpa_buffer_write(j->buf[b], 0, host, bytes)) != SDPA_OK) {
        job_fail(j, st, "sdpa_buffer_write");
        return 0;
    }
    j->mem_bytes += bytes;
    *t = sdpa_tensor_buffer(j->buf[b], 0, dt, sh[0], sh[1], sh[2], sh[3]);
    return 1;
}

/* Host inputs shared by all backends of one shape. */
typedef struct host_inputs {
    void *q, *k, *v, *dout;
    int32_t *table, *kv_len; /* --page-size */
    float *slopes, *sinks;   /* --alibi, --sinks */
    int64_t pages, maxp;     /* pool pages, block-table entries per batch */
} host_inputs;

static void *random_array(size_t n, sdpa_dtype dt, uint64_t seed)
{
    size_t bytes;
    const size_t blk = (size_t)sdpa_dtype_block_elems(dt);
    if (!tu_mul_size(n / blk, sdpa_dtype_size(dt), &bytes))
        return NULL;
    void *p = malloc(bytes ? bytes : 1);
    if (!p)
        return NULL;
    tu_rng r;
    tu_rng_seed(&r, seed);
    if (blk > 1) { /* q8_0 / q4_0: random blocks (scale d ~ 0.05 as f16, random q) */
        unsigned char *u = p;
        const size_t ub = sdpa_dtype_size(dt);
        for (size_t b = 0; b < n / blk; b++) {
            tu_store(u + b * ub, SDPA_DTYPE_F16, 0, 0.05 * (1.0 + 0.1 * tu_rng_normal(&r)));
            for (size_t t = 2; t < ub; t++)
                u[b * ub + t] = (unsigned char)(256.0 * tu_rng_uniform(&r));
        }
        return p;
    }
    for (size_t i = 0; i < n; i++)
        tu_store(p, dt, i, tu_rng_normal(&r));
    return p;
}

static size_t count4(int64_t a, int64_t b, int64_t c, int64_t d)
{
    size_t n = 1;
    const int64_t e[4] = {a, b, c, d};
    for (int i = 0; i < 4; i++)
        if (!tu_mul_size(n, (size_t)e[i], &n))
            return 0;
    return n;
}

static int host_inputs_make(host_inputs *h, const shape *s, const options *o)
{
    memset(h, 0, sizeof *h);
    size_t nq = count4(s->B, s->Hq, s->Sq, s->D), nk = count4(s->B, s->Hkv, s->Skv, s->D);
    size_t nv = count4(s->B, s->Hkv, s->Skv, s->Dv), no = count4(s->B, s->Hq, s->Sq, s->Dv);
    if (!nq || !nk || !nv || !no)
        return 0;
    if (s->page > 0) { /* a pool of B * max_pages pages, shuffled into the table */
        h->maxp = (s->Skv + s->page - 1) / s->page;
        h->pages = s->B * h->maxp;
        nk = count4(h->pages, s->Hkv, s->page, s->D);
        nv = count4(h->pages, s->Hkv, s->page, s->Dv);
        h->table = malloc((size_t)h->pages * sizeof(int32_t));
        h->kv_len = malloc((size_t)s->B * sizeof(int32_t));
        if (!nk || !nv || !h->table || !h->kv_len)
            return 0;
        tu_rng r;
        tu_rng_seed(&r, 5);
        for (int64_t i = 0; i < h->pages; i++)
            h->table[i] = (int32_t)i;
        for (int64_t i = h->pages - 1; i > 0; i--) {
            const int64_t j = (int64_t)(tu_rng_uniform(&r) * (double)(i + 1));
            const int32_t t = h->table[i];
            h->table[i] = h->table[j];
            h->table[j] = t;
        }
        for (int64_t b = 0; b < s->B; b++)
            h->kv_len[b] = (int32_t)s->Skv;
    }
    h->slopes = malloc((size_t)s->Hq * sizeof(float));
    h->sinks = malloc((size_t)s->Hq * sizeof(float));
    if (!h->slopes || !h->sinks)
        return 0;
    for (int64_t i = 0; i < s->Hq; i++) {
        h->slopes[i] = (float)pow(2.0, -8.0 * (double)(i + 1) / (double)s->Hq);
        h->sinks[i] = 0.5f;
    }
    h->q = random_array(nq, s->dtype, 1);
    h->k = random_array(nk, s->kv_dtype, 2);
    h->v = random_array(nv, s->kv_dtype, 3);
    if (o->backward)
        h->dout = random_array(no, s->dtype, 4);
    return h->q && h->k && h->v && (!o->backward || h->dout);
}

static void host_inputs_free(host_inputs *h)
{
    free(h->q);
    free(h->k);
    free(h->v);
    free(h->dout);
    free(h->table);
    free(h->kv_len);
    free(h->slopes);
    free(h->sinks);
}

static void job_setup(job *j, const shape *s, const options *o, const host_inputs *h)
{
    sdpa_attention_desc desc;
    sdpa_attention_desc_init(&desc);
    desc.diagonal = s->diagonal;
    desc.window_left = s->wl;
    desc.window_right = s->wr;
    sdpa_forward_tensors *t = &j->fwd;
    memset(t, 0, sizeof *t);
    memset(&j->bwd, 0, sizeof j->bwd);
    sdpa_dtype dt = s->dtype;
    const int64_t sq[4] = {s->B, s->Hq, s->Sq, s->D}, sk[4] = {s->B, s->Hkv, s->Skv, s->D};
    const int64_t sv[4] = {s->B, s->Hkv, s->Skv, s->Dv}, so[4] = {s->B, s->Hq, s->Sq, s->Dv};
    const int64_t sl[4] = {s->B, s->Hq, s->Sq, 1}, ss[4] = {s->B, s->Hq, 1, SDPA_STAT_COUNT};
    const sdpa_dtype kdt = s->kv_dtype;
    const int64_t one[4] = {1, s->Hq, 1, 1};
    if (!make_buffer(j, BQ, dt, sq, h->q, &t->q) || !make_buffer(j, BOUT, dt, so, NULL, &t->out))
        return;
    if (s->page > 0) {
        const int64_t pk[4] = {h->pages, s->Hkv, s->page, s->D};
        const int64_t pv[4] = {h->pages, s->Hkv, s->page, s->Dv};
        const int64_t st[4] = {s->B, 1, 1, h->maxp}, sn[4] = {s->B, 1, 1, 1};
        if (!make_buffer(j, BK, kdt, pk, h->k, &t->k_pages) ||
            !make_buffer(j, BV, kdt, pv, h->v, &t->v_pages) ||
            !make_buffer(j, BTABLE, SDPA_DTYPE_I32, st, h->table, &t->block_table) ||
            !make_buffer(j, BKVLEN, SDPA_DTYPE_I32, sn, h->kv_len, &t->kv_len))
            return;
    } else if (!make_buffer(j, BK, kdt, sk, h->k, &t->k) ||
               !make_buffer(j, BV, kdt, sv, h->v, &t->v)) {
        return;
    }
    if (s->alibi && !make_buffer(j, BALIBI, SDPA_DTYPE_F32, one, h->slopes, &t->alibi_slopes))
        return;
    if (s->sinks && !make_buffer(j, BSINKS, SDPA_DTYPE_F32, one, h->sinks, &t->sinks))
        return;
    if (o->backward && !make_buffer(j, BLSE, SDPA_DTYPE_F32, sl, NULL, &t->lse))
        return;
    if (o->stats && !make_buffer(j, BSTATS, SDPA_DTYPE_F32, ss, NULL, &t->stats))
        return;
    if (o->backward &&
        (!make_buffer(j, BDOUT, dt, so, h->dout, &j->bwd.dout) ||
         !make_buffer(j, BDQ, dt, sq, NULL, &j->bwd.dq) ||
         !make_buffer(j, BDK, kdt, sk, NULL, &j->bwd.dk) ||
         !make_buffer(j, BDV, kdt, sv, NULL, &j->bwd.dv)))
        return;
    desc.tensors = *t;
    sdpa_plan_options po;
    sdpa_plan_options_init(&po);
    sdpa_tile_config tile;
    sdpa_tile_config_init(&tile);
    if (j->unfused) {
        /* forward only: no backward flag, bwd rows say so */
        sdpa_tile_config_set(&tile, SDPA_TILE_UNFUSED, 1);
        /* the OpenCL backend's parameter, found by name (no sdpa_opencl.h) */
        sdpa_tile_param gemm;
        if (sdpa_tile_param_from_name("gemm_params", &gemm) == SDPA_OK)
            sdpa_tile_config_set(&tile, gemm, o->gemm_params);
        po.tile = &tile;
    } else if (o->backward) {
        po.flags |= SDPA_PLAN_BACKWARD;
    }
    double t0 = tu_now();
    sdpa_status st = sdpa_plan_create(j->ctx, &desc, &po, &j->plan);
    j->plan_ms = 1e3 * (tu_now() - t0);
    if (st != SDPA_OK) {
        job_fail(j, st, "sdpa_plan_create");
        return;
    }
    j->mem_bytes += sdpa_plan_workspace_size(j->plan);
    sdpa_plan_info pi;
    memset(&pi, 0, sizeof pi);
    pi.struct_size = sizeof pi;
    if (sdpa_plan_get_info(j->plan, &pi) == SDPA_OK) {
        pi.kernel[sizeof pi.kernel - 1] = '\0';
        pi.config[sizeof pi.config - 1] = '\0';
        pi.source[sizeof pi.source - 1] = '\0';
        snprintf(j->kernel, sizeof j->kernel, "%s", pi.kernel);
        snprintf(j->config, sizeof j->config, "%s", pi.config);
        snprintf(j->source, sizeof j->source, "%s", pi.source);
    }
}

static void job_teardown(job *j)
{
    sdpa_plan_destroy(j->plan);
    j->plan = NULL;
    for (int b = 0; b < 14; b++) {
        sdpa_buffer_destroy(j->buf[b]);
        j->buf[b] = NULL;
    }
}

/* --gap-ms: the pause before a call, outside the timed interval. */
static void gap_sleep(const options *o)
{
    if (o->gap_ms <= 0)
        return;
    struct timespec ts;
    ts.tv_sec = (time_t)(o->gap_ms / 1000.0);
    ts.tv_nsec = (long)((o->gap_ms - 1000.0 * (double)ts.tv_sec) * 1e6);
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* --gap-touch: reads the chosen inputs of the coming call (dout only before a
 * backward) on this thread, 64 KiB at a time into a scratch block, so they
 * sit in the caches as their producer would leave them; the bytes read in
 * *bytes. 0 with the job failed. */
static int gap_touch(job *j, const options *o, int backward, size_t *bytes)
{
    static unsigned char scratch[64 << 10];
    const struct { unsigned bit; int buf; } inputs[] = {
        {TOUCH_Q, BQ}, {TOUCH_K, BK}, {TOUCH_V, BV}, {TOUCH_DOUT, BDOUT}};
    size_t total = 0;
    for (size_t i = 0; i < sizeof inputs / sizeof inputs[0]; i++) {
        sdpa_buffer *b = j->buf[inputs[i].buf];
        if (!(o->gap_touch & inputs[i].bit) || !b || (inputs[i].bit == TOUCH_DOUT && !backward))
            continue;
        const size_t size = sdpa_buffer_size(b);
        for (size_t off = 0; off < size; off += sizeof scratch) {
            const size_t n = size - off < sizeof scratch ? size - off : sizeof scratch;
            const sdpa_status st = sdpa_buffer_read(b, off, scratch, n);
            if (st != SDPA_OK) {
                job_fail(j, st, "sdpa_buffer_read (--gap-touch)");
                return 0;
            }
        }
        total += size;
    }
    *bytes = total;
    return 1;
}

/* One forward (and backward), each after the --gap-ms pause; times in ms, or
 * -1 on failure. */
static void job_run(job *j, const options *o, double *fwd_ms, double *bwd_ms)
{
    *fwd_ms = *bwd_ms = -1;
    if (j->status != SDPA_OK)
        return;
    gap_sleep(o);
    if (o->gap_touch && !gap_touch(j, o, 0, &j->touch_fwd))
        return;
    double t0 = tu_now();
    sdpa_status st = sdpa_plan_forward(j->plan, &j->fwd);
    if (st == SDPA_OK)
        st = sdpa_context_finish(j->ctx);
    if (st != SDPA_OK) {
        job_fail(j, st, "sdpa_plan_forward");
        return;
    }
    *fwd_ms = 1e3 * (tu_now() - t0);
    if (!o->backward || j->unfused)
        return;
    gap_sleep(o);
    if (o->gap_touch && !gap_touch(j, o, 1, &j->touch_bwd))
        return;
    t0 = tu_now();
    st = sdpa_plan_backward(j->plan, &j->fwd, &j->bwd);
    if (st == SDPA_OK)
        st = sdpa_context_finish(j->ctx);
    if (st != SDPA_OK) {
        job_fail(j, st, "sdpa_plan_backward");
        return;
    }
    *bwd_ms = 1e3 * (tu_now() - t0);
}

/* ---- results ------------------------------------------------------------------------- */

typedef struct row {
    const char *backend;
    const char *device;
    const char *op;
    char shape[96];
    char band[48];
    const char *dtype;
    const char *status;      /* "ok", "unsupported", "error" */
    char error[256];
    char kernel[96];
    char config[256];        /* the plan's parameters (sdpa_plan_info.config) */
    char source[64];         /* default, profile, shipped profile, forced */
    double plan_ms, med, min, max, gflops, speedup, mem_mib, peak, peak_frac;
    double kv_gbps, bw, bw_frac; /* decode rows: K/V bytes read per second, of bandwidth */
    double gap_ms;           /* --gap-ms: pause before each call */
    double touch_bytes;      /* --gap-touch: input bytes read before each call, NAN = none */
    double read_ms, vs_read; /* --read-ref: the read reference's median, med / read_ms */
    int64_t skv;
    int has_speedup;
    int peak_suspect;        /* above 100 % even against a re-measured peak */
    int bindex;              /* into the --backend list */
    int runs;                /* timed runs behind the statistics */
    const double *round_ms;  /* --interleave, ok rows: the time in each round, NAN
                                where it sat out (repeat entries); else NULL */
    double vs_base, vs_base_q1, vs_base_q3; /* --interleave: paired ratios to the base row */
} row;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void summarize(double *t, int n, double *med, double *mn, double *mx)
{
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    *mn = t[0];
    *mx = t[n - 1];
    *med = n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

static void fmt(char *b, size_t cap, const char *f, double v)
{
    if (isnan(v))
        snprintf(b, cap, "-");
    else
        snprintf(b, cap, f, v);
}

/* The table or CSV. Columns shown only sometimes: peak_suspect (CSV only;
 * the table shows it as >100?), read_ms, vs_read (with --read-ref), vs base
 * (with --interleave; its quartiles in CSV only), touch_bytes (CSV only,
 * empty without --gap-touch; the table says it in a note). CSV columns keep one order
 * and header, new ones at the end (empty when not measured); the table puts
 * `vs base` beside `vs first`. */
static void print_table(const row *rows, int n, int csv, int read_ref, int interleave)
{
    enum { SUSPECT = 16, READ = 18, BASE = 25, NCOL = 29 };
    const char *head[NCOL] = {"backend", "device", "op", "shape B,Hq,Hkv,Sq,Skv,D,Dv", "mask",
                              "dtype", "plan ms", "gap ms", "runs", "median ms", "min ms",
                              "max ms", "GFLOP/s", "GB/s", "% bw", "% peak", "", "vs first",
                              "read ms", "vs read", "mem MiB", "kernel", "config", "source",
                              "status", "vs base", "", "", ""};
    const char *head_csv[NCOL] = {"backend", "device", "op", "shape", "mask", "dtype", "plan_ms",
                                  "gap_ms", "runs", "median_ms", "min_ms", "max_ms", "gflops",
                                  "kv_gbps", "bw_frac", "peak_frac", "peak_suspect", "vs_first",
                                  "read_ms", "vs_read", "mem_mib", "kernel", "config", "source",
                                  "status", "vs_base", "vs_base_q1", "vs_base_q3",
                                  "touch_bytes"};
    const int right[NCOL] = {0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,
                             1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1};
    /* column order: the CSV's as listed, the table's with vs base after vs first */
    const int table_order[NCOL] = {0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13,
                                   14, 15, 16, 17, 25, 18, 19, 20, 21, 22, 23, 24, 26, 27, 28};
    int keep[NCOL], nkeep = 0, col_of[NCOL];
    const char *kh[NCOL];
    int kr[NCOL];
    for (int p = 0; p < NCOL; p++) {
        const int c = csv ? p : table_order[p];
        keep[c] = (c != SUSPECT || csv) && ((c != READ && c != READ + 1) || read_ref) &&
                  (c != BASE || csv || interleave) && (c <= BASE || csv);
        if (keep[c]) {
            col_of[nkeep] = c;
            kh[nkeep] = csv ? head_csv[c] : head[c];
            kr[nkeep++] = right[c];
        }
    }
    tu_table t;
    tu_table_init(&t, nkeep, kh, kr);
    for (int i = 0; i < n; i++) {
        const row *r = &rows[i];
        char c[9][48], bw[2][48], rd[2][48], vb[3][48], dev[48], st[300], pk[48], runs[16],
            gap[32], touch[32];
        if (!csv && strlen(r->device) > 28)
            snprintf(dev, sizeof dev, "%.25s...", r->device);
        else
            snprintf(dev, sizeof dev, "%s", r->device);
        fmt(c[0], 48, "%.2f", r->plan_ms);
        fmt(c[1], 48, "%.3f", r->med);
        fmt(c[2], 48, "%.3f", r->min);
        fmt(c[3], 48, "%.3f", r->max);
        fmt(c[4], 48, "%.1f", r->gflops);
        fmt(c[5], 48, csv ? "%.3f" : "%.2fx", r->has_speedup ? r->speedup : NAN);
        fmt(c[6], 48, "%.1f", r->mem_mib);
        fmt(bw[0], 48, "%.1f", r->kv_gbps);
        fmt(bw[1], 48, csv ? "%.4f" : "%.1f", csv ? r->bw_frac : 100.0 * r->bw_frac);
        fmt(rd[0], 48, "%.3f", r->read_ms);
        fmt(rd[1], 48, csv ? "%.3f" : "%.2fx", r->vs_read);
        const double base[3] = {r->vs_base, r->vs_base_q1, r->vs_base_q3};
        for (int k = 0; k < 3; k++) { /* without --interleave: empty CSV cells */
            vb[k][0] = '\0';
            if (interleave)
                fmt(vb[k], 48, "%.3f", base[k]);
        }
        snprintf(runs, sizeof runs, "%d", r->runs);
        snprintf(gap, sizeof gap, "%g", r->gap_ms);
        touch[0] = '\0'; /* without --gap-touch: an empty CSV cell */
        if (!isnan(r->touch_bytes))
            snprintf(touch, sizeof touch, "%.0f", r->touch_bytes);
        fmt(pk, 48, csv ? "%.4f" : "%.1f", csv ? r->peak_frac : 100.0 * r->peak_frac);
        if (r->peak_suspect && !csv)
            snprintf(pk, sizeof pk, ">100?");
        if (r->error[0])
            snprintf(st, sizeof st, "%s: %s", r->status, r->error);
        else
            snprintf(st, sizeof st, "%s", r->status);
        const char *cells[NCOL] = {r->backend, dev, r->op, r->shape, r->band, r->dtype, c[0],
                                   gap, runs, c[1], c[2], c[3], c[4], bw[0], bw[1], pk,
                                   r->peak_suspect ? "1" : "0", c[5], rd[0], rd[1], c[6],
                                   r->kernel[0] ? r->kernel : "-",
                                   r->config[0] ? r->config : "-",
                                   r->source[0] ? r->source : "-", st, vb[0], vb[1], vb[2],
                                   touch};
        const char *kc[NCOL];
        for (int k = 0; k < nkeep; k++)
            kc[k] = cells[col_of[k]];
        tu_table_add(&t, kc);
    }
    if (csv)
        tu_table_print_csv(&t, stdout);
    else
        tu_table_print(&t, stdout);
    tu_table_free(&t);
}

static void add_num(cJSON *o, const char *k, double v, int ok)
{
    if (ok && isfinite(v))
        cJSON_AddNumberToObject(o, k, v);
    else
        cJSON_AddNullToObject(o, k);
}

/* One backend's device peak (sdpa_context_peak). */
typedef struct peak_entry {
    int index;               /* into the --backend list */
    const char *backend, *device;
    sdpa_status status;      /* SDPA_OK when info is valid */
    sdpa_peak_info info;
    int remeasured;          /* measured again because a row was above 100 % */
    sdpa_status bw_status;   /* SDPA_OK when bw is valid (read bandwidth, decode rows) */
    sdpa_bandwidth_info bw;
    /* --refresh-peak: both measured again after the rows (status
     * SDPA_ERR_UNSUPPORTED where not measured) */
    sdpa_status after_status, bw_after_status;
    sdpa_peak_info after;
    sdpa_bandwidth_info bw_after;
} peak_entry;

/* The change from a measurement before the rows to one after, in percent. */
static double drift_pct(double before, double after) { return 100.0 * (after / before - 1.0); }

/* order (--interleave, else NULL): per round, width entries, the results
 * index of the row each timed call was made for (its forward row), -1 where
 * a row sat out. */
static int print_json(const row *rows, int n, const options *o, const peak_entry *pk, int npk,
                      const int *order, int width)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "version", sdpa_version_string());
    cJSON_AddNumberToObject(root, "repeat", o->repeat);
    cJSON_AddNumberToObject(root, "warmup", o->warmup);
    cJSON_AddNumberToObject(root, "gap_ms", o->gap_ms);
    if (o->gap_touch)
        cJSON_AddStringToObject(root, "gap_touch", o->gap_touch_list);
    else
        cJSON_AddNullToObject(root, "gap_touch");
    cJSON_AddBoolToObject(root, "read_ref", o->read_ref);
    cJSON_AddBoolToObject(root, "interleave", o->interleave);
    if (order) { /* the call order of the timed rounds */
        cJSON *oa = cJSON_AddArrayToObject(root, "order");
        for (int r = 0; r < o->repeat; r++) {
            cJSON *ra = cJSON_CreateArray();
            for (int k = 0; k < width; k++)
                if (order[r * width + k] >= 0)
                    cJSON_AddItemToArray(ra, cJSON_CreateNumber(order[r * width + k]));
            cJSON_AddItemToArray(oa, ra);
        }
    }
    if (o->threads == SDPA_AUTO)
        cJSON_AddNullToObject(root, "threads");
    else
        cJSON_AddNumberToObject(root, "threads", o->threads);
    if (o->no_peak) {
        cJSON_AddNullToObject(root, "peaks");
    } else {
        cJSON *pa = cJSON_AddArrayToObject(root, "peaks");
        for (int i = 0; i < npk; i++) {
            cJSON *p = cJSON_CreateObject();
            cJSON_AddStringToObject(p, "backend", pk[i].backend);
            cJSON_AddStringToObject(p, "device", pk[i].device);
            add_num(p, "gflops", pk[i].info.gflops, pk[i].status == SDPA_OK);
            if (pk[i].status == SDPA_OK) {
                cJSON_AddStringToObject(p, "method", pk[i].info.method);
                cJSON_AddBoolToObject(p, "cached", pk[i].info.cached);
                cJSON_AddBoolToObject(p, "remeasured", pk[i].remeasured);
                add_num(p, "gflops_after", pk[i].after.gflops, pk[i].after_status == SDPA_OK);
            } else {
                cJSON_AddStringToObject(p, "error", sdpa_status_name(pk[i].status));
            }
            cJSON_AddItemToArray(pa, p);
        }
        cJSON *ba = cJSON_AddArrayToObject(root, "bandwidths");
        for (int i = 0; i < npk; i++) {
            if (pk[i].bw_status == SDPA_ERR_UNSUPPORTED) /* or not asked: no decode row */
                continue;
            cJSON *p = cJSON_CreateObject();
            cJSON_AddStringToObject(p, "backend", pk[i].backend);
            cJSON_AddStringToObject(p, "device", pk[i].device);
            add_num(p, "gbps", pk[i].bw.gbps, pk[i].bw_status == SDPA_OK);
            if (pk[i].bw_status == SDPA_OK) {
                cJSON_AddStringToObject(p, "method", pk[i].bw.method);
                cJSON_AddBoolToObject(p, "cached", pk[i].bw.cached);
                add_num(p, "gbps_after", pk[i].bw_after.gbps, pk[i].bw_after_status == SDPA_OK);
            } else {
                cJSON_AddStringToObject(p, "error", sdpa_status_name(pk[i].bw_status));
            }
            cJSON_AddItemToArray(ba, p);
        }
    }
    cJSON *arr = cJSON_AddArrayToObject(root, "results");
    for (int i = 0; i < n; i++) {
        const row *r = &rows[i];
        cJSON *x = cJSON_CreateObject();
        cJSON_AddStringToObject(x, "backend", r->backend);
        cJSON_AddStringToObject(x, "device", r->device);
        cJSON_AddStringToObject(x, "op", r->op);
        cJSON_AddStringToObject(x, "shape", r->shape);
        cJSON_AddStringToObject(x, "mask", r->band);
        cJSON_AddStringToObject(x, "dtype", r->dtype);
        cJSON_AddStringToObject(x, "status", r->status);
        if (r->error[0])
            cJSON_AddStringToObject(x, "error", r->error);
        cJSON_AddStringToObject(x, "kernel", r->kernel);
        cJSON_AddStringToObject(x, "config", r->config);
        cJSON_AddStringToObject(x, "source", r->source);
        add_num(x, "plan_ms", r->plan_ms, 1);
        cJSON_AddNumberToObject(x, "gap_ms", r->gap_ms);
        if (o->gap_touch)
            add_num(x, "touch_bytes", r->touch_bytes, 1);
        cJSON_AddNumberToObject(x, "runs", r->runs);
        add_num(x, "median_ms", r->med, 1);
        add_num(x, "min_ms", r->min, 1);
        add_num(x, "max_ms", r->max, 1);
        add_num(x, "gflops", r->gflops, 1);
        add_num(x, "kv_gbps", r->kv_gbps, 1);
        add_num(x, "bandwidth_gbps", r->bw, 1);
        add_num(x, "bw_frac", r->bw_frac, 1);
        add_num(x, "peak_gflops", r->peak, 1);
        add_num(x, "peak_frac", r->peak_frac, 1);
        cJSON_AddBoolToObject(x, "peak_suspect", r->peak_suspect);
        add_num(x, "vs_first", r->speedup, r->has_speedup);
        if (o->read_ref) {
            add_num(x, "read_ms", r->read_ms, 1);
            add_num(x, "vs_read", r->vs_read, 1);
        }
        add_num(x, "mem_mib", r->mem_mib, 1);
        if (o->interleave) {
            add_num(x, "vs_base", r->vs_base, 1);
            add_num(x, "vs_base_q1", r->vs_base_q1, 1);
            add_num(x, "vs_base_q3", r->vs_base_q3, 1);
            cJSON *ra = cJSON_AddArrayToObject(x, "rounds_ms");
            for (int k = 0; r->round_ms && k < o->repeat; k++) {
                cJSON *v = isfinite(r->round_ms[k]) ? cJSON_CreateNumber(r->round_ms[k])
                                                    : cJSON_CreateNull();
                cJSON_AddItemToArray(ra, v);
            }
        }
        cJSON_AddItemToArray(arr, x);
    }
    char *s = cJSON_Print(root);
    cJSON_Delete(root);
    if (!s)
        return 0;
    printf("%s\n", s);
    cJSON_free(s);
    return 1;
}

/* A plot series' name: "backend op", then the dtype when the rows have
 * several, then +pagedN for paged rows (--page-size 0,16 gives two lines). */
static void series_name(const row *r, int mixed, char *buf, size_t cap)
{
    const char *paged = strstr(r->band, "+paged");
    snprintf(buf, cap, "%s %s%s%s%s%s", r->backend, r->op, mixed ? " " : "",
             mixed ? r->dtype : "", paged ? " " : "", paged ? paged : "");
}

/* GFLOP/s against Skv, one series per (backend, op, dtype when mixed, page size). */
static int write_plot(const char *path, const row *rows, int n, const options *o)
{
    tp_series ser[2 * MAX_BACKENDS];
    char names[2 * MAX_BACKENDS][64];
    double *xs = calloc((size_t)n + 1, sizeof *xs), *ys = calloc((size_t)n + 1, sizeof *ys);
    int ns = 0, used = 0, mixed = 0;
    for (int i = 1; i < n; i++)
        mixed |= strcmp(rows[i].dtype, rows[0].dtype) != 0;
    if (!xs || !ys) {
        free(xs);
        free(ys);
        fprintf(stderr, "sdpa-bench: out of memory\n");
        return 0;
    }
    for (int i = 0; i < n; i++) {
        char name[64];
        series_name(&rows[i], mixed, name, sizeof name);
        int k = 0;
        while (k < ns && strcmp(names[k], name) != 0)
            k++;
        if (k < ns || ns >= 2 * MAX_BACKENDS)
            continue;
        /* a new series: gather its points sorted by Skv */
        snprintf(names[ns], sizeof names[ns], "%s", name);
        int start = used;
        for (int j = i; j < n; j++) {
            char nj[64];
            series_name(&rows[j], mixed, nj, sizeof nj);
            if (strcmp(nj, name) != 0)
                continue;
            int p = used++;
            while (p > start && xs[p - 1] > (double)rows[j].skv) {
                xs[p] = xs[p - 1];
                ys[p] = ys[p - 1];
                p--;
            }
            xs[p] = (double)rows[j].skv;
            ys[p] = rows[j].gflops;
        }
        ser[ns].name = names[ns];
        ser[ns].n = used - start;
        ser[ns].x = xs + start;
        ser[ns].y = ys + start;
        ns++;
    }
    char title[128], err[256];
    snprintf(title, sizeof title, "sdpa-bench: attention %s, %s", o->backward ? "fwd/bwd" : "forward",
             n == 0 || mixed ? "dtype per line" : rows[0].dtype);
    int ok = tp_plot_svg(path, title, "sequence length (keys, Skv)", "GFLOP/s", 1, ser, ns, err,
                         sizeof err);
    if (!ok)
        fprintf(stderr, "sdpa-bench: --plot: %s\n", err);
    free(xs);
    free(ys);
    return ok;
}

/* A row above 100 % of its device's peak is a measurement error: of the
 * timing, or of the cached peak (measured on a loaded machine, it reads low).
 * Such a backend's peak is measured again (sdpa_context_peak, refresh = 1,
 * which also replaces the cached record) and its rows are recomputed; rows
 * still above 100 % are flagged (`>100?`, peak_suspect) with a warning. */
static void recheck_peaks(row *rows, int n, peak_entry *pk, int npk, sdpa_context *const *ctx)
{
    for (int e = 0; e < npk; e++) {
        double worst = 0;
        for (int i = 0; i < n; i++)
            if (rows[i].bindex == pk[e].index && rows[i].peak_frac > worst)
                worst = rows[i].peak_frac;
        if (pk[e].status != SDPA_OK || !(worst > 1.0))
            continue;
        fprintf(stderr, "sdpa-bench: %s: a row reads %.0f %% of the %s peak of %.1f GFLOP/s, "
                        "which cannot be: measuring the peak again\n", pk[e].backend,
                100.0 * worst, pk[e].info.cached ? "cached" : "measured", pk[e].info.gflops);
        sdpa_peak_info again = {.struct_size = sizeof again};
        sdpa_status st = sdpa_context_peak(ctx[pk[e].index], 1, &again);
        if (st == SDPA_OK) {
            pk[e].info = again;
            pk[e].remeasured = 1;
        } else {
            fprintf(stderr, "sdpa-bench: %s: measuring the peak again failed (%s)\n",
                    pk[e].backend, sdpa_status_name(st));
        }
        int suspect = 0;
        for (int i = 0; i < n; i++) {
            row *r = &rows[i];
            if (r->bindex != pk[e].index)
                continue;
            r->peak = pk[e].info.gflops;
            r->peak_frac = r->gflops / r->peak;
            r->peak_suspect = r->peak_frac > 1.0;
            suspect += r->peak_suspect;
        }
        if (suspect)
            fprintf(stderr, "sdpa-bench: warning: %s: %d row(s) above 100 %% of the %s peak "
                            "of %.1f GFLOP/s, shown as >100?: the timing or the peak is wrong\n",
                    pk[e].backend, suspect, pk[e].remeasured ? "re-measured" : "cached",
                    pk[e].info.gflops);
    }
}

/* --refresh-peak: every peak (and read bandwidth) that was measured before
 * the rows is measured again after them, into after / bw_after (the cache
 * keeps the later measurement). A change of 10 % or more is said on stderr:
 * the machine's speed moved during the run, and % peak / % bw, which use the
 * first measurement, are uncertain by about that much. */
static void say_after(const char *backend, const char *what, const char *unit, double before,
                      sdpa_status st, double after)
{
    if (st == SDPA_OK && fabs(drift_pct(before, after)) >= 10.0)
        fprintf(stderr, "sdpa-bench: %s: the %s measured %.1f %s before the rows and %.1f after "
                        "(%+.0f %%): the machine's speed moved during the run\n",
                backend, what, before, unit, after, drift_pct(before, after));
    else if (st != SDPA_OK && st != SDPA_ERR_UNSUPPORTED)
        fprintf(stderr, "sdpa-bench: %s: measuring the %s after the rows failed (%s)\n", backend,
                what, sdpa_status_name(st));
}

static void measure_after(peak_entry *pk, int npk, sdpa_context *const *ctx)
{
    for (int e = 0; e < npk; e++) {
        peak_entry *x = &pk[e];
        x->after_status = x->bw_after_status = SDPA_ERR_UNSUPPORTED;
        if (x->status == SDPA_OK) {
            x->after.struct_size = sizeof x->after;
            x->after_status = sdpa_context_peak(ctx[x->index], 1, &x->after);
        }
        if (x->bw_status == SDPA_OK) {
            x->bw_after.struct_size = sizeof x->bw_after;
            x->bw_after_status = sdpa_context_bandwidth(ctx[x->index], 1, &x->bw_after);
        }
        say_after(x->backend, "peak", "GFLOP/s", x->info.gflops, x->after_status,
                  x->after.gflops);
        say_after(x->backend, "read bandwidth", "GB/s", x->bw.gbps, x->bw_after_status,
                  x->bw_after.gbps);
    }
}

/* The name rows give backend b: the context's backend (AUTO resolved), or
 * opencl-unfused. */
static const char *backend_label(const options *o, sdpa_context *const *ctx, int b)
{
    return o->unfused[b] ? "opencl-unfused"
                         : sdpa_backend_name(ctx[b] ? sdpa_context_backend(ctx[b])
                                                    : o->backends[b]);
}

/* --read-ref: the read reference of backend b's forward on shape s (after
 * its timed runs, as many reads): j->read_ms, or NAN with *st the reason
 * (SDPA_ERR_UNSUPPORTED on OpenCL and Vulkan). The first method seen is
 * kept in method[64] for the note under the table. */
static void read_reference(job *j, const shape *s, const options *o, sdpa_status *st,
                           char *method)
{
    j->read_ms = NAN;
    const double bytes = kv_bytes(s);
    if (!o->read_ref || j->status != SDPA_OK || j->nrun < 1 || !(bytes >= 1))
        return;
    sdpa_read_time_info info = {.struct_size = sizeof info};
    sdpa_status rs = bytes < 0x1p62 ? sdpa_context_read_time(j->ctx, (size_t)bytes, o->gap_ms,
                                                             j->nrun, &info)
                                    : SDPA_ERR_INVALID_ARG;
    if (rs == SDPA_OK) {
        j->read_ms = info.median_ms;
        if (!method[0])
            snprintf(method, 64, "%.63s", info.method);
    } else if (rs != SDPA_ERR_UNSUPPORTED && *st == SDPA_OK) {
        sdpa_error_info e;
        sdpa_context_last_error(j->ctx, &e);
        fprintf(stderr, "sdpa-bench: %s: no read reference (%s: %s)\n",
                sdpa_backend_name(j->kind), sdpa_status_name(rs), e.message);
    }
    if (*st == SDPA_OK || *st == SDPA_ERR_UNSUPPORTED)
        *st = rs;
}

/* ---- rounds ----------------------------------------------------------------------------- */

/* Backend b's job on shape s, set up (buffers, plan), or failed with the
 * reason when b has no context or h is NULL (no host inputs). Its samples
 * are the 4 * repeat doubles at samples (t_fwd, t_bwd, r_fwd, r_bwd). */
static void job_init(job *j, int b, const shape *s, const options *o, sdpa_context *const *ctx,
                     const char (*ctx_err)[256], const host_inputs *h, double *samples)
{
    memset(j, 0, sizeof *j);
    j->kind = o->backends[b];
    j->unfused = o->unfused[b];
    j->ctx = ctx[b];
    j->t_fwd = samples;
    j->t_bwd = samples + o->repeat;
    j->r_fwd = samples + 2 * (size_t)o->repeat;
    j->r_bwd = samples + 3 * (size_t)o->repeat;
    for (int k = 0; k < o->repeat; k++)
        j->r_fwd[k] = j->r_bwd[k] = NAN;
    if (!ctx[b]) {
        j->status = SDPA_ERR_NO_DEVICE;
        snprintf(j->error, sizeof j->error, "%s", ctx_err[b]);
    } else if (!h) {
        j->status = SDPA_ERR_OUT_OF_MEMORY;
        snprintf(j->error, sizeof j->error, "cannot allocate host inputs");
    } else {
        job_setup(j, s, o, h);
    }
}

/* The jobs of shape s, one per backend (js[b]), from host inputs made for
 * them and freed once written; their samples from `samples` on (4 * repeat
 * doubles each). */
static void shape_setup(job *js, const shape *s, const options *o, sdpa_context *const *ctx,
                        const char (*ctx_err)[256], double *samples)
{
    host_inputs h;
    int have_inputs = host_inputs_make(&h, s, o);
    for (int b = 0; b < o->nbackends; b++)
        job_init(&js[b], b, s, o, ctx, ctx_err, have_inputs ? &h : NULL,
                 samples + (size_t)b * 4 * (size_t)o->repeat);
    host_inputs_free(&h);
}

/* The warm-ups, then the timed repetitions of n jobs, in rounds: a round
 * calls every job once (its forward, then its backward), from job 0 on, or
 * with rotate (--interleave) round r from job r mod n on, so that no job
 * always follows the same one. A job whose runs took --max-seconds sits out
 * the rest (it always gets one timed run); the others go on. Timed samples
 * go to t_fwd/t_bwd in run order and to r_fwd/r_bwd by round. order, when
 * not NULL, receives n entries per timed round: the job called at each
 * position, -1 where none was. what: the progress line's start, NULL for
 * none. */
static void run_rounds(job *jobs, int n, const options *o, int rotate, int *order,
                       const char *what)
{
    for (int rep = 0; rep < o->warmup + o->repeat; rep++) {
        const int timed = rep >= o->warmup, round = rep - o->warmup;
        if (what)
            fprintf(stderr, "\r%s: %s %d/%d   ", what, timed ? "repeat" : "warm-up",
                    timed ? round + 1 : rep + 1, timed ? o->repeat : o->warmup);
        for (int k = 0; k < n; k++) {
            const int i = rotate ? ((timed ? round : rep) + k) % n : k;
            job *j = &jobs[i];
            double f, g;
            if (timed && order)
                order[round * n + k] = -1;
            if (j->status != SDPA_OK)
                continue; /* failed or refused: no call */
            if (o->max_seconds > 0 && j->spent >= o->max_seconds && !(timed && j->nrun == 0))
                continue; /* over budget: keep what we have */
            if (timed && order)
                order[round * n + k] = i;
            job_run(j, o, &f, &g);
            j->spent += 1e-3 * ((f > 0 ? f : 0) + (g > 0 ? g : 0));
            if (timed && f >= 0) {
                j->t_fwd[j->nrun] = j->r_fwd[round] = f;
                j->t_bwd[j->nrun] = j->r_bwd[round] = g;
                j->nrun++;
            }
        }
    }
}

/* The p-quantile of n sorted values (linear between the closest ranks, so
 * p = 0.5 is the usual median). */
static double quantile(const double *v, int n, double p)
{
    const double x = p * (double)(n - 1);
    const int lo = (int)x, hi = lo + 1 < n ? lo + 1 : lo;
    return v[lo] + (x - (double)lo) * (v[hi] - v[lo]);
}

/* --interleave: each row's `vs base`, the median (and quartiles) over the
 * rounds where both ran of (the base row's time / this row's time), the
 * base row being the first row of the same shape (B..Dv), op and backend:
 * ratios of calls made a few milliseconds apart, which the machine's drift
 * does not separate. The base row's own is 1; NAN without a base result. */
static void vs_base(row *rows, int n, int repeat)
{
    double *q = malloc((size_t)repeat * sizeof *q);
    for (int i = 0; q && i < n; i++) {
        row *r = &rows[i];
        int b = 0;
        while (rows[b].bindex != r->bindex || strcmp(rows[b].op, r->op) != 0 ||
               strcmp(rows[b].shape, r->shape) != 0)
            b++; /* ends at i at the latest */
        if (!r->round_ms || !rows[b].round_ms)
            continue;
        int m = 0;
        for (int k = 0; k < repeat; k++)
            if (rows[b].round_ms[k] > 0 && r->round_ms[k] > 0)
                q[m++] = rows[b].round_ms[k] / r->round_ms[k];
        if (m == 0)
            continue;
        qsort(q, (size_t)m, sizeof *q, cmp_double);
        r->vs_base = quantile(q, m, 0.5);
        r->vs_base_q1 = quantile(q, m, 0.25);
        r->vs_base_q3 = quantile(q, m, 0.75);
    }
    if (!q)
        fprintf(stderr, "sdpa-bench: out of memory: no vs base\n");
    free(q);
}

/* ---- main ------------------------------------------------------------------------------ */

int main(int argc, char **argv)
{
    options o;
    int help;
    if (!parse_args(&o, argc, argv, &help))
        return TA_EXIT_USAGE;
    if (help) {
        usage(stdout);
        return TA_EXIT_OK;
    }

    sdpa_context *ctx[MAX_BACKENDS] = {0};
    char ctx_err[MAX_BACKENDS][256];
    const char *devname[MAX_BACKENDS];
    for (int b = 0; b < o.nbackends; b++) {
        sdpa_context_options co;
        sdpa_context_options_init(&co);
        co.backend = o.backends[b];
        co.device = o.device;
        co.threads = o.threads;
        co.profile_dir = o.profile_dir;
        ctx_err[b][0] = '\0';
        sdpa_status st = sdpa_context_create(&co, &ctx[b]);
        if (st != SDPA_OK) {
            snprintf(ctx_err[b], sizeof ctx_err[b], "sdpa_context_create: %s", sdpa_status_name(st));
            fprintf(stderr, "sdpa-bench: %s: %s\n", sdpa_backend_name(o.backends[b]), ctx_err[b]);
            ctx[b] = NULL;
        }
        devname[b] = ctx[b] ? sdpa_context_device_name(ctx[b]) : "-";
    }

    /* Every shape must fit before anything is allocated: the host inputs,
     * plus each backend's buffers (in host memory unless on a GPU). */
    for (int si = 0; si < o.nshapes; si++) {
        const shape *s = &o.shapes[si];
        tps_shape t = {s->B, s->Hq, s->Hkv, s->Sq, s->Skv, s->D, s->Dv, 0, s->dtype};
        char msg[512];
        if (!tps_check_memory(&t, tps_bytes(&t, s->dtype, o.backward, 0, 1),
                              tps_bytes(&t, s->dtype, o.backward, o.stats, 0), ctx, o.nbackends,
                              msg, sizeof msg)) {
            fprintf(stderr, "sdpa-bench: shape %d: %s; refused before allocating\n", si + 1,
                    msg);
            for (int b = 0; b < o.nbackends; b++)
                sdpa_context_destroy(ctx[b]);
            free(o.shapes);
            return TA_EXIT_USAGE;
        }
    }
    /* --interleave holds every shape's buffers at once (and one shape's host
     * inputs at a time, freed once written): their sum must fit too */
    if (o.interleave) {
        double host = 0, per_context = 0;
        for (int si = 0; si < o.nshapes; si++) {
            const shape *s = &o.shapes[si];
            tps_shape t = {s->B, s->Hq, s->Hkv, s->Sq, s->Skv, s->D, s->Dv, 0, s->dtype};
            const double in = tps_bytes(&t, s->dtype, o.backward, 0, 1);
            host = in > host ? in : host;
            per_context += tps_bytes(&t, s->dtype, o.backward, o.stats, 0);
        }
        char msg[512];
        if (!tps_check_memory(NULL, host, per_context, ctx, o.nbackends, msg, sizeof msg)) {
            fprintf(stderr, "sdpa-bench: --interleave sets up all %d shapes at once: %s; "
                            "refused before allocating\n", o.nshapes, msg);
            for (int b = 0; b < o.nbackends; b++)
                sdpa_context_destroy(ctx[b]);
            free(o.shapes);
            return TA_EXIT_USAGE;
        }
    }

    /* Each backend's device peak: cached in the profile dir, or measured
     * once (sdpa_context_peak). */
    peak_entry pk[MAX_BACKENDS];
    int npk = 0;
    for (int b = 0; b < o.nbackends && !o.no_peak; b++) {
        if (!ctx[b])
            continue;
        peak_entry *e = &pk[npk++];
        memset(e, 0, sizeof *e);
        e->after_status = e->bw_after_status = SDPA_ERR_UNSUPPORTED;
        e->index = b;
        e->backend = backend_label(&o, ctx, b);
        e->device = devname[b];
        e->info.struct_size = sizeof e->info;
        e->status = sdpa_context_peak(ctx[b], o.refresh_peak, &e->info);
        if (e->status != SDPA_OK) {
            e->info.gflops = 0;
            fprintf(stderr, "sdpa-bench: %s: no device peak (%s)\n", e->backend,
                    sdpa_status_name(e->status));
        }
        /* the read bandwidth, for decode rows only (backends without a
         * probe say SDPA_ERR_UNSUPPORTED: their rows show no % bw) */
        e->bw_status = SDPA_ERR_UNSUPPORTED;
        for (int si = 0; si < o.nshapes; si++)
            if (o.shapes[si].Sq <= DECODE_MAX_SQ) {
                e->bw.struct_size = sizeof e->bw;
                e->bw_status = sdpa_context_bandwidth(ctx[b], o.refresh_peak, &e->bw);
                if (e->bw_status != SDPA_OK && e->bw_status != SDPA_ERR_UNSUPPORTED)
                    fprintf(stderr, "sdpa-bench: %s: no read bandwidth (%s)\n", e->backend,
                            sdpa_status_name(e->bw_status));
                break;
            }
    }

    int nops = o.backward ? 2 : 1;
    int maxrows = o.nshapes * o.nbackends * nops;
    /* --interleave: a job per shape and backend, all set up at once; else the
     * backends' jobs of one shape at a time */
    const int njobs = o.interleave ? o.nshapes * o.nbackends : o.nbackends;
    row *rows = calloc((size_t)maxrows, sizeof *rows);
    job *jobs = calloc((size_t)njobs, sizeof *jobs);
    double *samples = calloc((size_t)njobs * 4 * (size_t)o.repeat, sizeof *samples);
    int *order = o.interleave ? calloc((size_t)njobs * (size_t)o.repeat, sizeof *order) : NULL;
    int *job_row = o.interleave ? calloc((size_t)njobs, sizeof *job_row) : NULL;
    if (!rows || !jobs || !samples || (o.interleave && (!order || !job_row))) {
        fprintf(stderr, "sdpa-bench: out of memory\n");
        return TA_EXIT_FAIL;
    }
    int nrows = 0, any_error = 0;
    int progress = !o.json && !o.csv && isatty(STDERR_FILENO);
    /* --read-ref: per backend, how the references went and how they read */
    sdpa_status read_st[MAX_BACKENDS];
    char read_method[MAX_BACKENDS][64];
    for (int b = 0; b < MAX_BACKENDS; b++) {
        read_st[b] = SDPA_OK;
        read_method[b][0] = '\0';
    }

    if (o.interleave) { /* every row set up, then rounds over all of them */
        for (int si = 0; si < o.nshapes; si++) {
            if (progress)
                fprintf(stderr, "\rsetting up shape %d/%d   ", si + 1, o.nshapes);
            const size_t first = (size_t)si * (size_t)o.nbackends;
            shape_setup(jobs + first, &o.shapes[si], &o, ctx, ctx_err,
                        samples + first * 4 * (size_t)o.repeat);
        }
        char what[64];
        snprintf(what, sizeof what, "%d rows interleaved", njobs);
        run_rounds(jobs, njobs, &o, 1, order, progress ? what : NULL);
    }
    for (int si = 0; si < o.nshapes; si++) {
        const shape *s = &o.shapes[si];
        char sstr[96];
        shape_str(s, sstr, sizeof sstr);
        job *js = o.interleave ? jobs + (size_t)si * (size_t)o.nbackends : jobs;
        if (!o.interleave) { /* set up, then warm-up and timed rounds, backends in turn */
            shape_setup(js, s, &o, ctx, ctx_err, samples);
            char what[160];
            snprintf(what, sizeof what, "shape %d/%d %s", si + 1, o.nshapes, sstr);
            run_rounds(js, o.nbackends, &o, 0, NULL, progress ? what : NULL);
        }
        for (int b = 0; b < o.nbackends && o.read_ref; b++) {
            if (progress)
                fprintf(stderr, "\rshape %d/%d %s: read reference %d/%d   ", si + 1, o.nshapes,
                        sstr, b + 1, o.nbackends);
            read_reference(&js[b], s, &o, &read_st[b], read_method[b]);
        }
        if (progress)
            fprintf(stderr, "\r%*s\r", 70, "");
        double flops = forward_flops(s);
        for (int op = 0; op < nops; op++) {
            double base = NAN;
            for (int b = 0; b < o.nbackends; b++) {
                job *j = &js[b];
                if (op == 0 && job_row)
                    job_row[si * o.nbackends + b] = nrows;
                row *r = &rows[nrows++];
                r->backend = backend_label(&o, ctx, b);
                r->device = devname[b] ? devname[b] : "-";
                r->op = op ? "bwd" : "fwd";
                r->bindex = b;
                snprintf(r->shape, sizeof r->shape, "%s", sstr);
                band_str(s, r->band, sizeof r->band);
                r->dtype = s->dtname;
                snprintf(r->kernel, sizeof r->kernel, "%s", j->kernel);
                snprintf(r->config, sizeof r->config, "%s", j->config);
                snprintf(r->source, sizeof r->source, "%s", j->source);
                r->plan_ms = j->plan ? j->plan_ms : NAN;
                r->gap_ms = o.gap_ms;
                r->touch_bytes = o.gap_touch ? (double)(op ? j->touch_bwd : j->touch_fwd) : NAN;
                r->mem_mib = j->plan ? (double)j->mem_bytes / 1048576.0 : NAN;
                r->med = r->min = r->max = r->gflops = r->peak_frac = NAN;
                r->peak = r->kv_gbps = r->bw = r->bw_frac = NAN;
                r->read_ms = r->vs_read = NAN;
                r->vs_base = r->vs_base_q1 = r->vs_base_q3 = NAN;
                for (int e = 0; e < npk; e++) {
                    if (pk[e].index == b && pk[e].status == SDPA_OK)
                        r->peak = pk[e].info.gflops;
                    if (pk[e].index == b && pk[e].bw_status == SDPA_OK)
                        r->bw = pk[e].bw.gbps;
                }
                r->skv = s->Skv;
                if (j->status != SDPA_OK) {
                    /* a path the backend does not offer, or one that would
                     * exceed the plan's workspace limit (the unfused path at
                     * long sequences), is a result, not a failure */
                    int refused = j->status == SDPA_ERR_UNSUPPORTED ||
                                  j->status == SDPA_ERR_WORKSPACE;
                    r->status = refused ? "unsupported" : "error";
                    if (!refused)
                        any_error = 1;
                    snprintf(r->error, sizeof r->error, "%s", j->error);
                    if (b == 0)
                        base = NAN;
                    continue;
                }
                if (op == 1 && j->unfused) {
                    r->status = "unsupported";
                    snprintf(r->error, sizeof r->error,
                             "the unfused path is forward only (the fused backward is "
                             "the opencl row)");
                    if (b == 0)
                        base = NAN;
                    continue;
                }
                r->status = "ok";
                r->runs = j->nrun;
                r->round_ms = o.interleave ? (op ? j->r_bwd : j->r_fwd) : NULL;
                summarize(op ? j->t_bwd : j->t_fwd, j->nrun, &r->med, &r->min, &r->max);
                r->gflops = (op ? 2.5 : 1.0) * flops / (r->med * 1e-3) / 1e9;
                r->peak_frac = r->gflops / r->peak;
                if (op == 0 && s->Sq <= DECODE_MAX_SQ) {
                    r->kv_gbps = kv_bytes(s) / (r->med * 1e-3) / 1e9;
                    r->bw_frac = r->kv_gbps / r->bw;
                }
                if (op == 0 && !isnan(j->read_ms)) {
                    r->read_ms = j->read_ms;
                    r->vs_read = r->med / r->read_ms;
                }
                if (b == 0)
                    base = r->med;
                if (!isnan(base)) {
                    r->speedup = base / r->med;
                    r->has_speedup = 1;
                }
            }
        }
        for (int b = 0; b < o.nbackends && !o.interleave; b++)
            job_teardown(&js[b]);
    }
    if (o.interleave) {
        vs_base(rows, nrows, o.repeat);
        for (int i = 0; i < njobs * o.repeat; i++) /* job indices into row indices */
            order[i] = order[i] >= 0 ? job_row[order[i]] : -1;
        for (int i = 0; i < njobs; i++)
            job_teardown(&jobs[i]);
    }

    if (o.refresh_peak)
        measure_after(pk, npk, ctx);
    recheck_peaks(rows, nrows, pk, npk, ctx);
    if (o.json) {
        print_json(rows, nrows, &o, pk, npk, order, njobs);
    } else {
        print_table(rows, nrows, o.csv, o.read_ref, o.interleave);
        for (int e = 0; !o.csv && e < npk; e++) {
            if (e == 0)
                printf("%% peak: of each device's fp32 FMA peak (%s)\n",
                       o.refresh_peak ? "measured before the rows, the figure used, and after "
                                        "them: --refresh-peak"
                                      : "measured once, cached in the profile dir");
            if (pk[e].status == SDPA_OK) {
                printf("  %-9s %8.1f GFLOP/s  %s; %s", pk[e].backend, pk[e].info.gflops,
                       pk[e].info.method,
                       pk[e].remeasured ? "measured again (a row was above 100 %)"
                       : pk[e].info.cached ? "cached" : "measured now");
                if (pk[e].after_status == SDPA_OK)
                    printf("; %.1f after the rows (%+.1f %%)", pk[e].after.gflops,
                           drift_pct(pk[e].info.gflops, pk[e].after.gflops));
                printf("\n");
            }
            else
                printf("  %-9s        - GFLOP/s  %s\n", pk[e].backend,
                       sdpa_status_name(pk[e].status));
        }
        for (int e = 0, first = 1; !o.csv && e < npk; e++) {
            if (pk[e].bw_status == SDPA_ERR_UNSUPPORTED)
                continue;
            if (first)
                printf("%% bw: decode rows (Sq <= %d), K/V bytes read per second (GB/s) over "
                       "the read bandwidth (%s)\n", DECODE_MAX_SQ,
                       o.refresh_peak ? "measured before the rows, the figure used, and after "
                                        "them: --refresh-peak"
                                      : "measured once, cached");
            first = 0;
            if (pk[e].bw_status == SDPA_OK) {
                printf("  %-9s %8.1f GB/s     %s; %s", pk[e].backend, pk[e].bw.gbps,
                       pk[e].bw.method, pk[e].bw.cached ? "cached" : "measured now");
                if (pk[e].bw_after_status == SDPA_OK)
                    printf("; %.1f after the rows (%+.1f %%)", pk[e].bw_after.gbps,
                           drift_pct(pk[e].bw.gbps, pk[e].bw_after.gbps));
                printf("\n");
            }
            else
                printf("  %-9s        - GB/s     %s\n", pk[e].backend,
                       sdpa_status_name(pk[e].bw_status));
        }
    }
    if (o.gap_touch && !o.json && !o.csv)
        printf("after each %g ms pause the calling thread read %s before the timed call "
               "(--gap-touch): those inputs were in the caches, as their producer leaves "
               "them\n", o.gap_ms, o.gap_touch_list);
    for (int b = 0; o.read_ref && !o.json && !o.csv && b < o.nbackends; b++) {
        if (b == 0 && o.gap_ms > 0)
            printf("vs read: forward rows, median over the median of a plain read of the row's "
                   "K/V bytes after the same %g ms pause (each thread sleeps, then all start "
                   "together: cold caches, no wake-up)\n", o.gap_ms);
        else if (b == 0)
            printf("vs read: forward rows, median over the median of a plain read of the row's "
                   "K/V bytes, back to back like the calls (the threads start together)\n");
        if (read_method[b][0])
            printf("  %-9s %s\n", backend_label(&o, ctx, b), read_method[b]);
        else
            printf("  %-9s -  %s\n", backend_label(&o, ctx, b),
                   read_st[b] == SDPA_OK ? "no forward row ran" : sdpa_status_name(read_st[b]));
    }
    if (o.plot && !write_plot(o.plot, rows, nrows, &o))
        any_error = 1;

    for (int b = 0; b < o.nbackends; b++)
        sdpa_context_destroy(ctx[b]);
    free(rows);
    free(jobs);
    free(samples);
    free(order);
    free(job_row);
    free(o.shapes);
    return any_error ? TA_EXIT_FAIL : TA_EXIT_OK;
}
