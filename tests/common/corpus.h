/*
 * corpus.h — which conformance corpora a suite runs (test_conformance,
 * test_tools, test_lab, test_clblast): the repository's own tests/conformance
 * always ($SDPA_CORPUS_DIR, else the source path compiled in), then each
 * folder named in $SDPA_CONFORMANCE_DIR (':'-separated; tests/meson.build puts
 * ../shared/conformance there) that exists. A missing extra folder is noted on
 * stderr and passed over: nothing needs one.
 */
#ifndef SDPA_TEST_CORPUS_H
#define SDPA_TEST_CORPUS_H

#include <stddef.h>

#define TCORPUS_MAX 8

/* The corpora to run, the repository's first; returns how many (>= 1). */
int tcorpus_dirs(char dirs[][1024], int cap);
/* The repository's corpus. */
const char *tcorpus_main(void);

#endif
