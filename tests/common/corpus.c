/*
 * corpus.c — see corpus.h.
 */
#include "corpus.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#ifndef SDPA_TEST_CORPUS
#define SDPA_TEST_CORPUS "tests/conformance"
#endif

const char *tcorpus_main(void)
{
    const char *d = getenv("SDPA_CORPUS_DIR");
    return d && *d ? d : SDPA_TEST_CORPUS;
}

int tcorpus_dirs(char dirs[][1024], int cap)
{
    int n = 0;
    snprintf(dirs[n++], 1024, "%s", tcorpus_main());
    const char *list = getenv("SDPA_CONFORMANCE_DIR");
    while (list && *list && n < cap) {
        const char *e = strchr(list, ':');
        size_t len = e ? (size_t)(e - list) : strlen(list);
        struct stat st;
        if (len > 0 && len < 1024) {
            memcpy(dirs[n], list, len);
            dirs[n][len] = '\0';
            if (stat(dirs[n], &st) == 0 && S_ISDIR(st.st_mode))
                n++;
            else
                fprintf(stderr, "note: extra conformance corpus %s is absent; not run\n", dirs[n]);
        }
        list = e ? e + 1 : NULL;
    }
    return n;
}
