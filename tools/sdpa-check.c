/*
 * sdpa-check — runs conformance cases (sdpa-case/1, tests/conformance/README.md) on one
 * backend and prints one line per case, then `N passed, N failed, N unsupported`.
 *
 *   sdpa-check [--backend NAME] [--device SEL] [--unfused] [--tile SPEC]
 *              [--allow-unsupported] [-v] [--help] PATH...
 *
 * PATH is a case folder (holding case.json) or a folder of case folders
 * (searched a few levels deep, in name order, symlinks below PATH not
 * followed). Exit status: 0 when nothing failed, 1 when a case failed (a
 * malformed case, an unreadable PATH or a library error counts as a failure)
 * or no context can be created on the requested backend (e.g. no such
 * device), 2 for usage errors. An UNSUPPORTED case (the backend answered
 * SDPA_ERR_UNSUPPORTED: it does not implement what the case needs, named in
 * the line) is a failure too, unless --allow-unsupported is given; it is
 * never counted as passed.
 * Thin program over sdpa.h and tools/common (case.c, case_run.c, args.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "case.h"
#include "sdpa.h"
#include "tiles.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: sdpa-check [--backend NAME] [--device SEL] [--unfused] [--tile SPEC]\n"
            "                  [--allow-unsupported] [-v] [--help] PATH...\n"
            "\n"
            "Runs sdpa-case/1 conformance cases and compares every expected output.\n"
            "PATH is a case folder (with case.json) or a folder of case folders\n"
            "(searched 4 levels deep; symlinks below PATH are not followed). A case\n"
            "reads files only from inside its folder, regular files only.\n"
            "\n"
            "  --backend NAME  auto|reference|cpu|opencl|vulkan (default: $SDPA_BACKEND,\n"
            "                  else auto)\n"
            "  --device SEL    device index or name substring (default: $SDPA_DEVICE,\n"
            "                  else the first)\n"
            "  --unfused       force the materialised-scores path (tile.unfused = 1: the\n"
            "                  OpenCL backend's CLBlast path); it is forward only, so\n"
            "                  backward cases come out UNSUPPORTED\n"
            "  --tile SPEC     force a kernel configuration, e.g. q_tile=32,k_tile=64\n"
            "                  (names and ranges: sdpa-info --tiles); a value outside the\n"
            "                  backend's range makes every case UNSUPPORTED\n"
            "  --allow-unsupported  do not count UNSUPPORTED cases as failures (they are\n"
            "                  still printed and counted as unsupported, never as passed)\n"
            "  -v, --verbose   print the backend and device, each case's folder, its\n"
            "                  tolerance and run time, and the library's INFO log\n"
            "  -h, --help      this text\n"
            "\n"
            "Output: one line per case, `PASS|FAIL|UNSUPPORTED name  out\n"
            "max_abs=.. rel_l2=..  lse ...` (a reason in parentheses unless PASS), then\n"
            "`N passed, N failed, N unsupported`. UNSUPPORTED: the backend refused the\n"
            "case (SDPA_ERR_UNSUPPORTED, e.g. a feature it does not implement, named in\n"
            "the reason); it fails the run unless --allow-unsupported.\n"
            "Exit status: 0 all passed (or unsupported with --allow-unsupported), 1 a case\n"
            "failed or no context (e.g. no such device), 2 usage error.\n");
}

static const char *verdict_name(sc_verdict v)
{
    return v == SC_PASS ? "PASS" : v == SC_UNSUPPORTED ? "UNSUPPORTED" : "FAIL";
}

static void print_result(const sc_result *r, int verbose)
{
    printf("%s %s", verdict_name(r->verdict), r->name);
    for (int i = 0; i < r->ncmp; i++) {
        const sc_compare *c = &r->cmp[i];
        printf("  %s max_abs=%.2e rel_l2=%.2e", sc_key_name(c->which), c->max_abs,
               c->rel_l2);
        if (c->bad_nonfinite)
            printf(" nonfinite_mismatch=%zu", c->bad_nonfinite);
    }
    if (r->verdict != SC_PASS && r->reason[0])
        printf("  (%s)", r->reason);
    if (verbose) {
        if (r->tol_max_abs > 0 || r->tol_rel_l2 > 0)
            printf("  [tolerance max_abs=%.1e rel_l2=%.1e, %.3g ms]", r->tol_max_abs,
                   r->tol_rel_l2, 1e3 * r->seconds);
        else
            printf("  [%.3g ms]", 1e3 * r->seconds);
    }
    printf("\n");
    fflush(stdout);
}

int main(int argc, char **argv)
{
    const char *backend = NULL, *device = NULL;
    int verbose = 0, help = 0, forced = 0, allow_unsupported = 0;
    sdpa_tile_config tile; /* --unfused, --tile */
    sdpa_tile_config_init(&tile);
    const char **paths = calloc((size_t)argc + 1, sizeof *paths);
    int npaths = 0;
    if (!paths)
        return TA_EXIT_FAIL;

    ta_args a;
    ta_init(&a, argc, argv);
    while (ta_next(&a)) {
        const char *val;
        if (a.positional)
            paths[npaths++] = a.arg;
        else if (ta_flag(&a, "--help") || ta_flag(&a, "-h"))
            help = 1;
        else if (ta_flag(&a, "-v") || ta_flag(&a, "--verbose"))
            verbose = 1;
        else if (ta_flag(&a, "--allow-unsupported"))
            allow_unsupported = 1;
        else if (ta_flag(&a, "--unfused"))
            forced = sdpa_tile_config_set(&tile, SDPA_TILE_UNFUSED, 1) == SDPA_OK;
        else if (ta_value(&a, "--tile", &val)) {
            char why[160];
            if (val && !tt_tile_parse(val, &tile, why, sizeof why))
                ta_fail(&a, "--tile: %s", why);
            forced = 1;
        } else if (ta_value(&a, "--backend", &val))
            backend = val;
        else if (ta_value(&a, "--device", &val))
            device = val;
        else
            ta_fail(&a, "unknown option %s", a.arg);
        if (a.error)
            break;
    }
    if (help && !a.error) {
        usage(stdout);
        free(paths);
        return TA_EXIT_OK;
    }
    sdpa_backend_kind kind = SDPA_BACKEND_DEFAULT;
    if (!a.error && backend && sdpa_backend_parse(backend, &kind) != SDPA_OK)
        ta_fail(&a, "unknown backend \"%s\" (auto, reference, cpu, opencl, vulkan)", backend);
    if (!a.error && device && !*device)
        ta_fail(&a, "--device needs a non-empty value");
    if (!a.error && npaths == 0)
        ta_fail(&a, "no PATH given");
    if (a.error) {
        fprintf(stderr, "sdpa-check: %s\n", a.message);
        fprintf(stderr, "Try 'sdpa-check --help'.\n");
        free(paths);
        return TA_EXIT_USAGE;
    }

    sdpa_context_options opt;
    sdpa_context_options_init(&opt);
    opt.backend = kind;
    opt.device = device;
    if (verbose)
        opt.log_level = SDPA_LOG_INFO;
    sdpa_context *ctx = NULL;
    sdpa_status st = sdpa_context_create(&opt, &ctx);
    if (st != SDPA_OK) {
        fprintf(stderr, "sdpa-check: cannot create a context on backend %s: %s (%s)\n",
                backend ? backend : "default", sdpa_status_name(st), sdpa_status_string(st));
        free(paths);
        return TA_EXIT_FAIL;
    }
    if (verbose)
        printf("# backend %s, device %s, libsdpa %s\n",
               sdpa_backend_name(sdpa_context_backend(ctx)), sdpa_context_device_name(ctx),
               sdpa_version_string());

    int passed = 0, failed = 0, unsupported = 0;
    for (int p = 0; p < npaths; p++) {
        sc_list list = {0};
        char err[512];
        sc_result r;
        if (!sc_find(paths[p], &list, err, sizeof err) || list.n == 0) {
            memset(&r, 0, sizeof r);
            snprintf(r.name, sizeof r.name, "%s", paths[p]);
            r.verdict = SC_FAIL;
            snprintf(r.reason, sizeof r.reason, "%s", list.n == 0 && !err[0]
                                                          ? "no case.json found here or below"
                                                          : err);
            print_result(&r, verbose);
            failed++;
            sc_list_free(&list);
            continue;
        }
        for (size_t i = 0; i < list.n; i++) {
            if (verbose)
                printf("# %s\n", list.paths[i]);
            sc_check_dir_tile(ctx, list.paths[i], forced ? &tile : NULL, &r);
            print_result(&r, verbose);
            if (r.verdict == SC_PASS)
                passed++;
            else if (r.verdict == SC_UNSUPPORTED)
                unsupported++;
            else
                failed++;
        }
        sc_list_free(&list);
    }
    printf("%d passed, %d failed, %d unsupported%s\n", passed, failed, unsupported,
           unsupported && allow_unsupported ? " (allowed)" : "");
    sdpa_context_destroy(ctx);
    free(paths);
    return failed || (unsupported && !allow_unsupported) ? TA_EXIT_FAIL : TA_EXIT_OK;
}
