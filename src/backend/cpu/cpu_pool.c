/*
 * cpu_pool.c — the fast CPU backend's thread pool: n-1 worker threads plus
 * the calling thread as worker 0.
 *
 * sdpa__cpu_pool_run(pool, job, arg) calls job(arg, tid, n) once for every
 * tid in [0, n) (tid 0 on the caller) and returns when all calls have
 * returned. Jobs split their work themselves (static interleaving or an atomic
 * counter), so the pool allocates nothing per run. One run at a time: a
 * context is used by one thread at a time (sdpa.h), so runs never overlap.
 * Created by cpu_backend.c at context init, destroyed at context free.
 *
 * Short calls (about a millisecond) are the common case (a ViT layer, one
 * decode step), and a thread woken from a condition variable can start later
 * than such a call lasts. So after a run each worker spins for a bounded time
 * (spin_us, default 200 us; SDPA_CPU_SPIN_US, 0 = never spin) watching an
 * atomic generation counter, with a pause instruction, and only then sleeps on
 * the condition variable; the caller publishes a run by bumping the counter
 * and broadcasts only when some worker sleeps, before it starts its own share.
 * The caller likewise spins up to spin_us for the workers to finish before it
 * sleeps, when every worker has started the run (one that has not may be
 * waiting for the caller's core). The spin never yields (sched_yield would
 * hand the core to any background process and the worker would start a time
 * slice late); a spinner that finds it was descheduled mid-spin twice within
 * 32 runs (fewer free cores than threads) turns spinning off for the next 64
 * runs instead. A stall is a gap of over 50 us between two looks at the
 * clock; where the system counts a thread's involuntary context switches
 * (Linux), only a stall of at least 0.5 ms during which the scheduler
 * switched the spinner out for another thread counts, and the others (the
 * hypervisor taking the vCPU for a moment, an interrupt, a kernel thread's
 * moment: common in a VM, and nothing to do with the threads) are waited
 * out. Turning spinning off after one such stall cost the 64 calls that
 * followed every worker's wake-up: short calls ran at one thread's speed
 * (ViT-B at 2x a context's first calls), and calls after pauses lost
 * wake-ahead, whose windows need spinning.
 *
 * sdpa__cpu_pool_run_any is the same for jobs that take their work from a
 * shared counter (the forward): a worker that has not picked up the run by
 * the time the caller's own share returns is not waited for. Each worker
 * claims its seat of a run by a compare-and-swap of its `seat` word from an
 * older generation to this one; the caller, done, marks every unclaimed
 * seat cancelled (generation | SEAT_CANCELLED) by the same compare-and-swap,
 * so exactly one of them wins. A cancelled worker skips the job and touches
 * nothing of the run (the job and its arguments may be gone), and the caller
 * waits only for workers that claimed. On a machine with fewer free cores
 * than threads, or after a pause long enough that a worker wakes later than
 * the call lasts, the call then costs what the caller alone takes, not that
 * plus the late worker's wake-up.
 *
 * Calls spaced by regular pauses longer than the spin (a decode step per
 * layer with other work in between) would find every worker asleep, and a
 * woken thread (a halted vCPU) can start later than the call lasts. So the
 * caller keeps the last PREDICT_HISTORY pauses before a call (the idle time
 * from the end of a run to the next, when longer than the spin) and, when
 * they are regular (sdpa__cpu_pool_predict), publishes with each call the
 * window, counted from the end of that call, in which it expects the next
 * one: a worker about to sleep then waits on the condition variable with a
 * timeout (shortened by the timer lateness the workers measured) and spins
 * from the window's start to its end, at most 5 % of the pause per call,
 * before it sleeps plainly. Pauses, not call starts, because the call's own
 * length varies (with the worker's arrival, among others) where the
 * application's work between calls keeps its pace. Irregular calls get no
 * window; SDPA_CPU_SPIN_US=0 turns this off with the spin; Windows does
 * without (predict_allowed).
 *
 * A new thread often starts on its creator's CPU, and while another CPU is
 * busy (with work of lower priority, even) the scheduler may take 50 ms to
 * move one of the two: the first calls then ran both on one core, at half
 * speed (19 of a context's first 20 calls of B1 H12 S192 D64, in 2 of 5
 * runs beside a background job). So a worker that starts there leaves it
 * once: its affinity mask without that CPU, then the mask as it was
 * (sdpa__cpu_leave; Linux; nothing where the mask has no other CPU). It is
 * a placement at start, not a pinning: the scheduler moves it as it likes.
 *
 * Lost wake-ups are ruled out by a Dekker pair: a worker registers in
 * `sleepers` then rereads `generation` (both under the mutex), the caller
 * stores `generation` then reads `sleepers` (all sequentially consistent), so
 * at least one of them sees the other; `pending` and `caller_waits` pair the
 * same way for the caller's sleep.
 */
#define _GNU_SOURCE /* RUSAGE_THREAD */
#include "cpu_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef _WIN32
#include <windows.h>
#else
#include <sched.h>
#include <sys/resource.h>
#endif

enum { PREDICT_HISTORY = 8 };

struct sdpa__cpu_pool {
    int n;                    /* threads including the caller */
    int64_t spin_ns;          /* how long an idle thread spins before sleeping */
    pthread_t *threads;       /* n - 1 workers */
    pthread_mutex_t mu;
    pthread_cond_t wake, done;
    atomic_ullong generation; /* bumped for every run */
    atomic_int pending;       /* workers still running the current job */
    atomic_int started;       /* workers that have picked up the current job */
    atomic_int sleepers;      /* workers waiting (or about to) on `wake` */
    atomic_int caller_waits;  /* the caller waits (or is about to) on `done` */
    atomic_bool quit;
    atomic_llong sleeps;      /* times a worker stopped spinning to sleep */
    atomic_int nospin;        /* runs left with spinning off (oversubscribed) */
    atomic_ullong strike;     /* generation of the last descheduled spin + 1
                                 (0: none yet) */
    atomic_ullong *seat;      /* per worker: the generation it claimed, or
                                 generation | SEAT_CANCELLED (run_any) */
    sdpa__cpu_job job;        /* written before `generation`, read after */
    void *arg;
    /* Wake-ahead: the caller's history (touched by the caller only), what it
     * publishes (monotonic ns) and the workers' timer lateness (ns). */
    bool predict;             /* off with spin_ns 0 (and in tests) */
    int64_t last_end;         /* when the caller's last run returned */
    int64_t iv[PREDICT_HISTORY];  /* pauses before the last calls, oldest first */
    int niv;
    atomic_llong pub_at, end_at;  /* the last run's publication and return */
    atomic_llong wake_off, spin_off; /* the next call's window after the last
                                        one's end (spin_off 0: none) */
    atomic_llong late_ns;
    atomic_llong wakeups;     /* runs that found a worker asleep and woke it */
    atomic_llong timed_waits; /* pauses a worker slept through with a window */
    atomic_llong descheduled; /* spins that found their thread descheduled */
    atomic_llong stalls;      /* stalls of a spin without a switch to another
                                 thread (waited out) */
};

#define SEAT_CANCELLED (1ull << 63)

typedef struct worker_arg {
    sdpa__cpu_pool *pool;
    int tid;
    int creator_cpu; /* the CPU the creating thread ran on (-1: unknown) */
} worker_arg;

/* The CPU the calling thread runs on, or -1 where the system does not say. */
static int current_cpu(void)
{
#if defined(__linux__)
    return sched_getcpu();
#else
    return -1;
#endif
}

bool sdpa__cpu_leave(int cpu)
{
#if defined(__linux__)
    cpu_set_t all, others;
    /* pid 0: the calling thread (Linux keeps affinity per thread; these are
     * in glibc, musl and bionic alike, unlike pthread_setaffinity_np) */
    if (cpu < 0 || cpu >= CPU_SETSIZE || sched_getcpu() != cpu ||
        sched_getaffinity(0, sizeof all, &all) != 0 || !CPU_ISSET(cpu, &all))
        return false;
    others = all;
    CPU_CLR(cpu, &others);
    if (CPU_COUNT(&others) == 0 || sched_setaffinity(0, sizeof others, &others) != 0)
        return false;
    sched_setaffinity(0, sizeof all, &all); /* the mask as it was */
    return true;
#else
    (void)cpu;
    return false;
#endif
}

/* Monotonic ns. On Windows from the performance counter itself: a program
 * may link its own clock_gettime (Check's MinGW build has a stub that
 * returns 0, which would make every spin last until the next run). */
static int64_t now_ns(void)
{
#ifdef _WIN32
    static LONGLONG freq; /* fixed at boot: read once (a benign race, same value) */
    LARGE_INTEGER c;
    if (!freq) {
        LARGE_INTEGER f;
        QueryPerformanceFrequency(&f);
        freq = f.QuadPart;
    }
    QueryPerformanceCounter(&c);
    return (int64_t)(c.QuadPart / freq * 1000000000 + c.QuadPart % freq * 1000000000 / freq);
#else
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
#endif
}

/* Spin predicates: a new run (or quit) since generation `old`; the workers
 * done with the current run. */
static bool new_run(sdpa__cpu_pool *pool, unsigned long long old)
{
    return atomic_load_explicit(&pool->generation, memory_order_acquire) != old ||
           atomic_load_explicit(&pool->quit, memory_order_relaxed);
}

static bool workers_done(sdpa__cpu_pool *pool, unsigned long long old)
{
    (void)old;
    return atomic_load_explicit(&pool->pending, memory_order_acquire) == 0;
}

/* The calling thread's involuntary context switches so far (the scheduler
 * took its core for another thread), or -1 where the system does not count
 * them per thread. */
static long preemptions(void)
{
#if defined(__linux__) && defined(RUSAGE_THREAD)
    struct rusage ru;
    if (getrusage(RUSAGE_THREAD, &ru) == 0) return ru.ru_nivcsw;
#endif
    return -1;
}

/* Spins until ready(pool, old) or the monotonic time `end`; returns whether
 * it came in time. A spinner that finds it was descheduled between two
 * looks at the clock (the machine has fewer free cores than threads:
 * spinning only takes the core from the thread it waits for, or, before a
 * call, from the caller waking up) stops; the second such spin within
 * STRIKE_RUNS runs turns spinning off for the next NOSPIN_RUNS runs, after
 * which the pool tries again (sdpa__cpu_pool_strike). A gap shorter than
 * PREEMPTED_NS, or where preemptions() counts one without a switch to
 * another thread, is a stall of the machine, not of the threads: counted,
 * and the spin goes on (sdpa__cpu_pool_gap_strikes). */
enum { NOSPIN_RUNS = 64, STRIKE_RUNS = 32 };
#define DESCHEDULED_NS 50000
/* A strike lasts at least this long: a share of the core for another
 * runnable thread (a time slice, 0.75-3 ms), not a kernel thread's moment
 * (100-250 us gaps with a switch came a few times in most runs on an idle
 * VM, and as strikes they turned spinning off) nor the hypervisor's (50-170
 * us without one), which a VM's guest meets on every system, including
 * those that do not count switches */
#define PREEMPTED_NS 500000

bool sdpa__cpu_pool_gap_strikes(int64_t gap_ns, long switches)
{
    return gap_ns >= PREEMPTED_NS && switches != 0;
}

bool sdpa__cpu_pool_strike(unsigned long long *last, unsigned long long gen)
{
    const bool again = *last && gen + 1 - *last <= STRIKE_RUNS;
    *last = gen + 1;
    return again;
}

/* A spinner found itself descheduled during run `gen`'s spin. */
static void note_descheduled(sdpa__cpu_pool *pool)
{
    atomic_fetch_add_explicit(&pool->descheduled, 1, memory_order_relaxed);
    const unsigned long long gen = atomic_load_explicit(&pool->generation, memory_order_relaxed);
    unsigned long long last = atomic_load_explicit(&pool->strike, memory_order_relaxed);
    /* the caller and a worker may both strike at once: whichever stores last
     * wins; at worst one strike is counted once, not twice */
    const bool off = sdpa__cpu_pool_strike(&last, gen);
    atomic_store_explicit(&pool->strike, last, memory_order_relaxed);
    if (off) atomic_store_explicit(&pool->nospin, NOSPIN_RUNS, memory_order_relaxed);
}

static bool spin_until(sdpa__cpu_pool *pool,
                       bool (*ready)(sdpa__cpu_pool *, unsigned long long),
                       unsigned long long old, int64_t end)
{
    int64_t t = now_ns();
    const long switched = preemptions();
    for (;;) {
        bool ok = false;
        for (int i = 0; i < 16 && !(ok = ready(pool, old)); i++) sdpa__cpu_relax();
        const int64_t prev = t;
        t = now_ns();
        bool descheduled = false;
        if (t - prev > DESCHEDULED_NS) {
            descheduled = sdpa__cpu_pool_gap_strikes(
                t - prev, switched < 0 ? -1 : preemptions() - switched);
            if (descheduled)
                note_descheduled(pool);
            else
                atomic_fetch_add_explicit(&pool->stalls, 1, memory_order_relaxed);
        }
        if (ok) return true;
        if (t >= end || descheduled) return ready(pool, old);
    }
}

/* Spins up to spin_ns (none when 0). */
static bool spin(sdpa__cpu_pool *pool, bool (*ready)(sdpa__cpu_pool *, unsigned long long),
                 unsigned long long old)
{
    if (pool->spin_ns <= 0 || atomic_load_explicit(&pool->nospin, memory_order_relaxed) > 0)
        return false;
    return spin_until(pool, ready, old, now_ns() + pool->spin_ns);
}

/* ---- wake-ahead ------------------------------------------------------------ */
enum { PREDICT_MIN = 4 };
#define PREDICT_MAX_NS 100000000 /* pauses over 100 ms: no window */
#define PREDICT_MARGIN_NS 50000  /* the window covers at least this beyond the pauses */

bool sdpa__cpu_pool_predict(const int64_t *iv, int n, int64_t *wake, int64_t *end)
{
    if (n < PREDICT_MIN) return false;
    if (n > PREDICT_HISTORY) {
        iv += n - PREDICT_HISTORY;
        n = PREDICT_HISTORY;
    }
    int64_t v[PREDICT_HISTORY]; /* sorted */
    for (int i = 0; i < n; i++) {
        int j = i;
        for (; j > 0 && v[j - 1] > iv[i]; j--) v[j] = v[j - 1];
        v[j] = iv[i];
    }
    /* regular: all but a quarter (at least PREDICT_MIN) within 1/8 of the
     * shortest of them (then all that are); the others (a hiccup of the
     * application) ignored */
    int k = n - n / 4 > PREDICT_MIN ? n - n / 4 : PREDICT_MIN;
    int c = -1;
    for (int i = 0; i + k <= n; i++)
        if (v[i] > 0 && (v[i + k - 1] - v[i]) * 8 <= v[i] &&
            (c < 0 || v[i + k - 1] - v[i] < v[c + k - 1] - v[c]))
            c = i;
    if (c < 0) return false;
    for (; c + k < n && (v[c + k] - v[c]) * 8 <= v[c]; k++) {
    }
    if (v[c + k - 1] > PREDICT_MAX_NS) return false;
    const int64_t *r = v + c; /* the regular ones, r[0] .. r[k-1] */
    int64_t sum = 0;
    for (int i = 0; i < k; i++) sum += r[i];
    const int64_t mean = sum / k;
    const int64_t margin = mean / 100 > PREDICT_MARGIN_NS ? mean / 100 : PREDICT_MARGIN_NS;
    const int64_t budget = mean / 20; /* spin per call: at most 5 % of the pause */
    if (budget < 2 * margin) return false; /* pauses under 2 ms: nothing to win */
    /* the span that catches most of them (the earliest of equals), from
     * `margin` before one of them, ends the window; it starts a budget
     * before its end (the lead covers late wake-ups) */
    int first = 0;
    for (int i = 0, most = 0; i < k; i++) {
        int caught = 0;
        while (i + caught < k && r[i + caught] <= r[i] - margin + budget) caught++;
        if (caught > most) {
            most = caught;
            first = i;
        }
    }
    const int64_t begin = r[first] - margin;
    *end = r[k - 1] + margin < begin + budget ? r[k - 1] + margin : begin + budget;
    *wake = *end - budget;
    return true;
}

/* At a run's publication (before `generation` is bumped): a run after an
 * idle time longer than the spin starts a call; record that pause and
 * publish the window of the next call (relative to the end of this one), or
 * none. */
static void note_publish(sdpa__cpu_pool *pool, int64_t t)
{
    if (!pool->predict) return;
    atomic_store_explicit(&pool->pub_at, t, memory_order_relaxed);
    if (!pool->last_end || t - pool->last_end <= pool->spin_ns) return;
    if (pool->niv == PREDICT_HISTORY) {
        memmove(pool->iv, pool->iv + 1, (PREDICT_HISTORY - 1) * sizeof pool->iv[0]);
        pool->niv--;
    }
    pool->iv[pool->niv++] = t - pool->last_end;
    int64_t wake = 0, end = 0;
    if (!sdpa__cpu_pool_predict(pool->iv, pool->niv, &wake, &end)) wake = end = 0;
    atomic_store_explicit(&pool->wake_off, wake, memory_order_relaxed);
    atomic_store_explicit(&pool->spin_off, end, memory_order_relaxed);
}

/* Whether wake-ahead may run: not with spinning off (SDPA_CPU_SPIN_US=0) or
 * no workers, nor on Windows, where a timed wait has the system timer's
 * granularity (15.6 ms unless a process asked for finer; under Wine it came
 * 1-4 ms late), far coarser than the window. */
static bool predict_allowed(const sdpa__cpu_pool *pool)
{
#ifdef _WIN32
    (void)pool;
    return false;
#else
    return pool->spin_ns > 0 && pool->n > 1;
#endif
}

/* After a run: when it ended, the base of the next call's window. */
static void note_end(sdpa__cpu_pool *pool)
{
    if (!pool || !pool->predict) return;
    pool->last_end = now_ns();
    atomic_store_explicit(&pool->end_at, pool->last_end, memory_order_relaxed);
}

/* The condition variable's wait with a monotonic deadline (it times out on
 * CLOCK_REALTIME, set by setclock nowhere portable: converted). */
static int wait_until(sdpa__cpu_pool *pool, int64_t deadline)
{
    const int64_t d = deadline - now_ns();
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    const int64_t ns = ts.tv_nsec + (d > 0 ? d : 0);
    ts.tv_sec += (time_t)(ns / 1000000000);
    ts.tv_nsec = (long)(ns % 1000000000);
    return pthread_cond_timedwait(&pool->wake, &pool->mu, &ts);
}

/* The next call's window [*wake, *end) for a worker that finished its part
 * of the last run at `done`, or false when there is none (or it is over).
 * The window counts from the end of the last run, which the caller may not
 * have stored yet (it may still be waking from its wait for the workers):
 * from `done` until it has. (Values read as the caller publishes the next
 * run may be mixed: bounded here, and the caller's generation check ends the
 * wait.) */
static bool next_window(sdpa__cpu_pool *pool, int64_t done, int64_t *wake, int64_t *end)
{
    const int64_t off = atomic_load_explicit(&pool->spin_off, memory_order_relaxed);
    const int64_t ended = atomic_load_explicit(&pool->end_at, memory_order_relaxed);
    const int64_t base =
        ended >= atomic_load_explicit(&pool->pub_at, memory_order_relaxed) ? ended : done;
    *wake = base + atomic_load_explicit(&pool->wake_off, memory_order_relaxed);
    *end = base + off;
    return off > 0 && *end > now_ns() && *end - *wake <= PREDICT_MAX_NS / 20 &&
           atomic_load_explicit(&pool->nospin, memory_order_relaxed) == 0;
}

/* A worker with no run since `seen` after its spin (it finished its part of
 * the last run at `done`): sleeps until one is published (or quit); when the
 * next call is predicted, spins once from its window's start to its end
 * first, having asked the timer for the start less the lateness the workers
 * measured (woken still early, it waits the rest: it never spins outside the
 * window). */
static void await_run(sdpa__cpu_pool *pool, unsigned long long seen, int64_t done)
{
    atomic_fetch_add_explicit(&pool->sleeps, 1, memory_order_relaxed);
    bool spun = false, asked = false;
    for (;;) {
        int64_t wake = 0, end = 0;
        bool ahead = false;
        pthread_mutex_lock(&pool->mu);
        atomic_fetch_add(&pool->sleepers, 1);
        while (!atomic_load(&pool->quit) && atomic_load(&pool->generation) == seen) {
            ahead = !spun && next_window(pool, done, &wake, &end);
            if (!ahead) {
                pthread_cond_wait(&pool->wake, &pool->mu);
                continue;
            }
            if (now_ns() >= wake) break;
            if (!asked) atomic_fetch_add_explicit(&pool->timed_waits, 1, memory_order_relaxed);
            const int64_t ask =
                asked ? wake : wake - atomic_load_explicit(&pool->late_ns, memory_order_relaxed);
            asked = true;
            if (wait_until(pool, ask) == ETIMEDOUT) {
                /* how late the timer woke us: later asks come that much
                 * earlier (a peak fades by 1/8 a sample) */
                int64_t late = now_ns() - ask, old = atomic_load_explicit(
                                                      &pool->late_ns, memory_order_relaxed);
                if (late < old - old / 8) late = old - old / 8;
                atomic_store_explicit(&pool->late_ns, late, memory_order_relaxed);
            }
        }
        atomic_fetch_sub(&pool->sleepers, 1);
        pthread_mutex_unlock(&pool->mu);
        if (!ahead || atomic_load(&pool->quit) || atomic_load(&pool->generation) != seen ||
            spin_until(pool, new_run, seen, end))
            return;
        spun = true; /* the call did not come in its window: sleep */
    }
}

static void *worker_main(void *p)
{
    worker_arg wa = *(worker_arg *)p;
    free(p);
    sdpa__cpu_leave(wa.creator_cpu);
    sdpa__cpu_pool *pool = wa.pool;
    unsigned long long seen = 0;
    int64_t done = now_ns(); /* when this worker's part of run `seen` ended */
    for (;;) {
        if (!spin(pool, new_run, seen)) await_run(pool, seen, done);
        if (atomic_load(&pool->quit)) break;
        seen = atomic_load_explicit(&pool->generation, memory_order_acquire);
        /* Claim the seat of run `seen`; the caller may have cancelled it
         * (run_any), and then nothing of that run may be touched. */
        atomic_ullong *seat = &pool->seat[wa.tid - 1];
        unsigned long long s = atomic_load(seat);
        /* a seat at `seen` or later was cancelled (this worker never claims
         * ahead of the generation it read) */
        if ((s & ~SEAT_CANCELLED) >= seen || !atomic_compare_exchange_strong(seat, &s, seen)) {
            done = now_ns();
            continue; /* cancelled: wait for the next run */
        }
        atomic_fetch_add_explicit(&pool->started, 1, memory_order_relaxed);
        pool->job(pool->arg, wa.tid, pool->n);
        done = now_ns();
        if (atomic_fetch_sub(&pool->pending, 1) == 1 &&
            atomic_load(&pool->caller_waits)) {
            pthread_mutex_lock(&pool->mu);
            pthread_cond_signal(&pool->done);
            pthread_mutex_unlock(&pool->mu);
        }
    }
    return NULL;
}

/* SDPA_CPU_SPIN_US: microseconds an idle thread spins (0..100000), default
 * 200; anything else is ignored with a warning. */
static int64_t spin_ns_from_env(sdpa_context *ctx)
{
    const char *env = getenv("SDPA_CPU_SPIN_US");
    if (!env || !*env) return 200 * 1000;
    char *end = NULL;
    errno = 0;
    long v = strtol(env, &end, 10);
    if (errno || *end || v < 0 || v > 100000) {
        sdpa__log(ctx, SDPA_LOG_WARN,
                  "cpu: SDPA_CPU_SPIN_US=%s is not 0..100000; using 200", env);
        return 200 * 1000;
    }
    return (int64_t)v * 1000;
}

sdpa_status sdpa__cpu_pool_create(sdpa_context *ctx, int nthreads,
                                  sdpa__cpu_pool **out)
{
    *out = NULL;
    if (nthreads < 1) nthreads = 1;
    sdpa__cpu_pool *pool = sdpa__calloc(1, sizeof *pool);
    SDPA__CHECK(ctx, pool, SDPA_ERR_OUT_OF_MEMORY, "cpu: thread pool");
    pool->n = 1;
    pool->spin_ns = spin_ns_from_env(ctx);
    atomic_init(&pool->generation, 0);
    atomic_init(&pool->pending, 0);
    atomic_init(&pool->started, 0);
    atomic_init(&pool->sleepers, 0);
    atomic_init(&pool->caller_waits, 0);
    atomic_init(&pool->quit, false);
    atomic_init(&pool->sleeps, 0);
    atomic_init(&pool->nospin, 0);
    atomic_init(&pool->strike, 0);
    atomic_init(&pool->pub_at, 0);
    atomic_init(&pool->end_at, 0);
    atomic_init(&pool->wake_off, 0);
    atomic_init(&pool->spin_off, 0);
    atomic_init(&pool->late_ns, 0);
    atomic_init(&pool->wakeups, 0);
    atomic_init(&pool->timed_waits, 0);
    atomic_init(&pool->descheduled, 0);
    atomic_init(&pool->stalls, 0);
    pthread_mutex_init(&pool->mu, NULL);
    pthread_cond_init(&pool->wake, NULL);
    pthread_cond_init(&pool->done, NULL);
    if (nthreads > 1) {
        pool->threads = sdpa__calloc((size_t)nthreads - 1, sizeof(pthread_t));
        pool->seat = sdpa__calloc((size_t)nthreads - 1, sizeof *pool->seat);
        if (!pool->threads || !pool->seat) {
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
        wa->creator_cpu = current_cpu();
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
    pool->predict = predict_allowed(pool);
    *out = pool;
    return SDPA_OK;
}

void sdpa__cpu_pool_destroy(sdpa__cpu_pool *pool)
{
    if (!pool) return;
    pthread_mutex_lock(&pool->mu);
    atomic_store(&pool->quit, true);
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->mu);
    for (int t = 1; t < pool->n; t++) pthread_join(pool->threads[t - 1], NULL);
    pthread_mutex_destroy(&pool->mu);
    pthread_cond_destroy(&pool->wake);
    pthread_cond_destroy(&pool->done);
    free(pool->threads);
    free(pool->seat);
    free(pool);
}

int sdpa__cpu_pool_size(const sdpa__cpu_pool *pool)
{
    return pool ? pool->n : 1;
}

long long sdpa__cpu_pool_sleeps(sdpa__cpu_pool *pool)
{
    return pool ? atomic_load_explicit(&pool->sleeps, memory_order_relaxed) : 0;
}

void sdpa__cpu_pool_counts_get(sdpa__cpu_pool *pool, sdpa__cpu_pool_counts *out)
{
    *out = (sdpa__cpu_pool_counts){0, 0, 0, 0, 0, 0};
    if (!pool) return;
    out->wakeups = atomic_load_explicit(&pool->wakeups, memory_order_relaxed);
    out->timed_waits = atomic_load_explicit(&pool->timed_waits, memory_order_relaxed);
    out->descheduled = atomic_load_explicit(&pool->descheduled, memory_order_relaxed);
    out->stalls = atomic_load_explicit(&pool->stalls, memory_order_relaxed);
    out->late_ns = atomic_load_explicit(&pool->late_ns, memory_order_relaxed);
    out->nospin = atomic_load_explicit(&pool->nospin, memory_order_relaxed);
}

void sdpa__cpu_pool_set_predict(sdpa__cpu_pool *pool, bool on)
{
    if (!pool) return;
    pool->predict = on && predict_allowed(pool);
    pool->niv = 0;
    pool->last_end = 0;
    atomic_store_explicit(&pool->spin_off, 0, memory_order_relaxed);
}

/* One run; with `any`, workers that have not claimed their seat when the
 * caller's share returns are cancelled instead of waited for. */
static void pool_run(sdpa__cpu_pool *pool, sdpa__cpu_job job, void *arg, bool any)
{
    if (!pool || pool->n == 1) {
        job(arg, 0, 1);
        return;
    }
    const int nospin = atomic_load_explicit(&pool->nospin, memory_order_relaxed);
    if (nospin > 0) atomic_store_explicit(&pool->nospin, nospin - 1, memory_order_relaxed);
    pool->job = job;
    pool->arg = arg;
    atomic_store_explicit(&pool->pending, pool->n - 1, memory_order_relaxed);
    atomic_store_explicit(&pool->started, 0, memory_order_relaxed);
    note_publish(pool, now_ns());
    /* Publish (release: job, arg, pending, the window), then wake sleepers
     * before doing our own share, so a call after a pause still gets every
     * thread. */
    const unsigned long long gen = atomic_fetch_add(&pool->generation, 1) + 1;
    if (atomic_load(&pool->sleepers) > 0) {
        atomic_fetch_add_explicit(&pool->wakeups, 1, memory_order_relaxed);
        pthread_mutex_lock(&pool->mu);
        pthread_cond_broadcast(&pool->wake);
        pthread_mutex_unlock(&pool->mu);
    }
    job(arg, 0, pool->n);
    int cancelled = 0;
    if (any)
        for (int t = 0; t < pool->n - 1; t++) {
            unsigned long long s = atomic_load(&pool->seat[t]);
            if (s != gen && atomic_compare_exchange_strong(&pool->seat[t], &s, gen | SEAT_CANCELLED))
                cancelled++;
        }
    if (cancelled && atomic_fetch_sub(&pool->pending, cancelled) == cancelled) return;
    /* Spin for the workers only when they all run: one that has not started
     * by now may be waiting for this very core. */
    if (atomic_load_explicit(&pool->started, memory_order_relaxed) == pool->n - 1 - cancelled &&
        spin(pool, workers_done, 0))
        return;
    pthread_mutex_lock(&pool->mu);
    atomic_store(&pool->caller_waits, 1);
    while (atomic_load(&pool->pending) > 0) pthread_cond_wait(&pool->done, &pool->mu);
    atomic_store(&pool->caller_waits, 0);
    pthread_mutex_unlock(&pool->mu);
}

void sdpa__cpu_pool_run(sdpa__cpu_pool *pool, sdpa__cpu_job job, void *arg)
{
    pool_run(pool, job, arg, false);
    note_end(pool);
}

void sdpa__cpu_pool_run_any(sdpa__cpu_pool *pool, sdpa__cpu_job job, void *arg)
{
    pool_run(pool, job, arg, true);
    note_end(pool);
}
