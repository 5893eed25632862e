/*
 * cpu_pool.c — the fast CPU backend's thread pool: n-1 worker threads that
 * sleep on a condition variable, plus the calling thread as worker 0.
 *
 * sdpa__cpu_pool_run(pool, job, arg) calls job(arg, tid, n) once for every
 * tid in [0, n) (tid 0 on the caller) and returns when all calls have
 * returned. Jobs split their work themselves (static interleaving or an atomic
 * counter), so the pool allocates nothing per run. One run at a time: a
 * context is used by one thread at a time (sdpa.h), so runs never overlap.
 * Created by cpu_backend.c at context init, destroyed at context free.
 */
#include "cpu_internal.h"

#include <pthread.h>
#include <stdlib.h>

struct sdpa__cpu_pool {
    int n;                    /* threads including the caller */
    pthread_t *threads;       /* n - 1 workers */
    pthread_mutex_t mu;
    pthread_cond_t wake, done;
    uint64_t generation;      /* bumped for every run */
    int pending;              /* workers still running the current job */
    bool quit;
    sdpa__cpu_job job;
    void *arg;
};

typedef struct worker_arg {
    sdpa__cpu_pool *pool;
    int tid;
} worker_arg;

static void *worker_main(void *p)
{
    worker_arg wa = *(worker_arg *)p;
    free(p);
    sdpa__cpu_pool *pool = wa.pool;
    uint64_t seen = 0;
    pthread_mutex_lock(&pool->mu);
    for (;;) {
        while (!pool->quit && pool->generation == seen)
            pthread_cond_wait(&pool->wake, &pool->mu);
        if (pool->quit) break;
        seen = pool->generation;
        sdpa__cpu_job job = pool->job;
        void *arg = pool->arg;
        pthread_mutex_unlock(&pool->mu);
        job(arg, wa.tid, pool->n);
        pthread_mutex_lock(&pool->mu);
        if (--pool->pending == 0) pthread_cond_signal(&pool->done);
    }
    pthread_mutex_unlock(&pool->mu);
    return NULL;
}

sdpa_status sdpa__cpu_pool_create(sdpa_context *ctx, int nthreads,
                                  sdpa__cpu_pool **out)
{
    *out = NULL;
    if (nthreads < 1) nthreads = 1;
    sdpa__cpu_pool *pool = sdpa__calloc(1, sizeof *pool);
    SDPA__CHECK(ctx, pool, SDPA_ERR_OUT_OF_MEMORY, "cpu: thread pool");
    pool->n = 1;
    pthread_mutex_init(&pool->mu, NULL);
    pthread_cond_init(&pool->wake, NULL);
    pthread_cond_init(&pool->done, NULL);
    if (nthreads > 1) {
        pool->threads = sdpa__calloc((size_t)nthreads - 1, sizeof(pthread_t));
        if (!pool->threads) {
            sdpa__cpu_pool_destroy(pool);
            return SDPA__FAIL(ctx, SDPA_ERR_OUT_OF_MEMORY, "cpu: thread pool");
        }
    }
    for (int t = 1; t < nthreads; t++) {
        worker_arg *wa = sdpa__malloc(sizeof *wa);
        if (!wa) { /* out of memory is an error, like every other allocation */
            sdpa__cpu_pool_destroy(pool);
            return SDPA__FAIL(ctx, SDPA_ERR_OUT_OF_MEMORY, "cpu: thread pool");
        }
        wa->pool = pool;
        wa->tid = t;
        int rc = pthread_create(&pool->threads[t - 1], NULL, worker_main, wa);
        if (rc != 0) {
            free(wa);
            /* The system refused a thread: run with the threads we have. */
            sdpa__log(ctx, SDPA_LOG_WARN,
                      "cpu: could start only %d of %d threads", pool->n, nthreads);
            break;
        }
        pool->n++;
    }
    *out = pool;
    return SDPA_OK;
}

void sdpa__cpu_pool_destroy(sdpa__cpu_pool *pool)
{
    if (!pool) return;
    pthread_mutex_lock(&pool->mu);
    pool->quit = true;
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->mu);
    for (int t = 1; t < pool->n; t++) pthread_join(pool->threads[t - 1], NULL);
    pthread_mutex_destroy(&pool->mu);
    pthread_cond_destroy(&pool->wake);
    pthread_cond_destroy(&pool->done);
    free(pool->threads);
    free(pool);
}

int sdpa__cpu_pool_size(const sdpa__cpu_pool *pool)
{
    return pool ? pool->n : 1;
}

void sdpa__cpu_pool_run(sdpa__cpu_pool *pool, sdpa__cpu_job job, void *arg)
{
    if (!pool || pool->n == 1) {
        job(arg, 0, 1);
        return;
    }
    pthread_mutex_lock(&pool->mu);
    pool->job = job;
    pool->arg = arg;
    pool->pending = pool->n - 1;
    pool->generation++;
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->mu);
    job(arg, 0, pool->n);
    pthread_mutex_lock(&pool->mu);
    while (pool->pending > 0) pthread_cond_wait(&pool->done, &pool->mu);
    pthread_mutex_unlock(&pool->mu);
}
