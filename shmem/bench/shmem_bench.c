/*
 * shmem_bench: point-to-point and collective figures of an OpenSHMEM
 * library on 2 PEs (issue 41), built unchanged with rgex's bin/oshcc and
 * with Open MPI's oshcc, so both libraries run the same loops.
 *
 *   shmem_bench [--quick] [--reps N]
 *
 * Only calls both OpenSHMEM 1.4 (Open MPI 4.1's oshmem) and 1.5 (rgex)
 * offer: no teams, the active-set collectives with pSync arrays.
 *
 * PE 0 prints one line per row, flushed at once:
 *
 *   shmem_bench NAME SIZE VALUE UNIT
 *
 * VALUE the median over the repetitions; NAME one of put_lat, get_lat,
 * put_bw, get_bw, put_nbi_rate, fadd_lat, cswap_lat, barrier_all,
 * broadcast, fcollect, alltoall. Latencies in ns per call (put: putmem
 * then quiet, the time to remote completion; get: a blocking getmem;
 * AMOs: fetching, so a round trip); bandwidths in MB/s (10^6 bytes per
 * second: windows of 64 putmem_nbi / getmem_nbi then a quiet); the rate
 * in million messages per second (windows of 256 putmem_nbi of 8 B, then
 * a quiet); collectives in ns per call, each PE's loop over 8 pSync
 * arrays in turn with a barrier_all after every 8 calls (the 1.4 rule
 * for reusing a pSync), that barrier's share included. The last line is
 * "shmem_bench done"; shmem_finalize comes after it (Open MPI's crashes
 * there with UCX 1.13: the figures are out before).
 */
#define _POSIX_C_SOURCE 200809L
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_MSG (1L << 20)
#define WINDOW 64
#define RATE_WINDOW 256
#define NSYNC 8
#define MAX_REPS 64
#define A2A_ELEMS 128 /* 1 KiB of 64-bit elements per pair */

static long bcast_sync[NSYNC][SHMEM_BCAST_SYNC_SIZE];
static long collect_sync[NSYNC][SHMEM_COLLECT_SYNC_SIZE];
static long a2a_sync[NSYNC][SHMEM_ALLTOALL_SYNC_SIZE];
static long amo_target;

static int me, npes, reps = 5;
static long lat_iters = 20000, coll_iters = 5000;
static long bw_bytes = 256L << 20, rate_msgs = 1L << 20;

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void row(const char *name, long size, double *samples, int n,
                const char *unit) {
    if (me != 0)
        return;
    qsort(samples, (size_t)n, sizeof samples[0], cmp_double);
    printf("shmem_bench %s %ld %.3f %s\n", name, size, samples[n / 2], unit);
    fflush(stdout);
}

/* One repetition of a point-to-point test: PE 0 runs it, PE 1 waits in
 * the barriers around it. Returns PE 0's elapsed ns. */
typedef void (*p2p_fn)(char *dst, char *src, long size, long iters);

static double p2p_rep(p2p_fn f, char *dst, char *src, long size, long iters) {
    double t = 0;
    shmem_barrier_all();
    if (me == 0) {
        double t0 = now_ns();
        f(dst, src, size, iters);
        t = now_ns() - t0;
    }
    shmem_barrier_all();
    return t;
}

static void put_lat(char *dst, char *src, long size, long iters) {
    for (long i = 0; i < iters; i++) {
        shmem_putmem(dst, src, (size_t)size, 1);
        shmem_quiet();
    }
}

static void get_lat(char *dst, char *src, long size, long iters) {
    for (long i = 0; i < iters; i++)
        shmem_getmem(src, dst, (size_t)size, 1);
}

static void put_bw(char *dst, char *src, long size, long iters) {
    for (long i = 0; i < iters; i += WINDOW) {
        for (int w = 0; w < WINDOW; w++)
            shmem_putmem_nbi(dst, src, (size_t)size, 1);
        shmem_quiet();
    }
}

static void get_bw(char *dst, char *src, long size, long iters) {
    for (long i = 0; i < iters; i += WINDOW) {
        for (int w = 0; w < WINDOW; w++)
            shmem_getmem_nbi(src, dst, (size_t)size, 1);
        shmem_quiet();
    }
}

static void put_rate(char *dst, char *src, long size, long iters) {
    for (long i = 0; i < iters; i += RATE_WINDOW) {
        for (int w = 0; w < RATE_WINDOW; w++)
            shmem_putmem_nbi(dst, src, (size_t)size, 1);
        shmem_quiet();
    }
}

static void fadd_lat(char *dst, char *src, long size, long iters) {
    (void)dst, (void)src, (void)size;
    long sink = 0;
    for (long i = 0; i < iters; i++)
        sink += shmem_long_atomic_fetch_add(&amo_target, 1, 1);
    if (sink < 0)
        printf("impossible\n");
}

static void cswap_lat(char *dst, char *src, long size, long iters) {
    (void)dst, (void)src, (void)size;
    long v = 0;
    for (long i = 0; i < iters; i++)
        v = shmem_long_atomic_compare_swap(&amo_target, v, v + 1, 1);
}

/* Latency rows: ns per call. */
static void latency(const char *name, p2p_fn f, char *dst, char *src,
                    long size) {
    double s[MAX_REPS];
    p2p_rep(f, dst, src, size, lat_iters / 10 + 1); /* warm-up */
    for (int r = 0; r < reps; r++)
        s[r] = p2p_rep(f, dst, src, size, lat_iters) / (double)lat_iters;
    row(name, size, s, reps, "ns");
}

/* Bandwidth rows: MB/s (bytes per ns times 1000). */
static void bandwidth(const char *name, p2p_fn f, char *dst, char *src,
                      long size) {
    double s[MAX_REPS];
    long iters = bw_bytes / size;
    if (iters < WINDOW)
        iters = WINDOW;
    iters -= iters % WINDOW;
    p2p_rep(f, dst, src, size, WINDOW);
    for (int r = 0; r < reps; r++)
        s[r] = (double)size * (double)iters * 1e3 /
               p2p_rep(f, dst, src, size, iters);
    row(name, size, s, reps, "MB/s");
}

static void rate(char *dst, char *src) {
    double s[MAX_REPS];
    long iters = rate_msgs - rate_msgs % RATE_WINDOW;
    if (iters < RATE_WINDOW)
        iters = RATE_WINDOW;
    p2p_rep(put_rate, dst, src, 8, RATE_WINDOW);
    for (int r = 0; r < reps; r++)
        s[r] = (double)iters * 1e3 / p2p_rep(put_rate, dst, src, 8, iters);
    row("put_nbi_rate", 8, s, reps, "Mmsg/s");
}

/* One collective call on pSync set k. */
enum coll { BARRIER, BCAST, FCOLLECT, ALLTOALL };

static void coll_call(enum coll c, int k, long *dst, long *src) {
    switch (c) {
    case BARRIER:
        shmem_barrier_all();
        break;
    case BCAST:
        shmem_broadcast64(dst, src, 1, 0, 0, 0, npes, bcast_sync[k]);
        break;
    case FCOLLECT:
        shmem_fcollect64(dst, src, 1, 0, 0, npes, collect_sync[k]);
        break;
    case ALLTOALL:
        shmem_alltoall64(dst, src, A2A_ELEMS, 0, 0, npes, a2a_sync[k]);
        break;
    }
}

static double coll_rep(enum coll c, long *dst, long *src, long iters) {
    shmem_barrier_all();
    double t0 = now_ns();
    for (long i = 0; i < iters; i++) {
        int k = (int)(i % NSYNC);
        coll_call(c, k, dst, src);
        if (c != BARRIER && k == NSYNC - 1)
            shmem_barrier_all();
    }
    if (c != BARRIER && iters % NSYNC != 0)
        shmem_barrier_all();
    return (now_ns() - t0) / (double)iters;
}

static void collective(const char *name, enum coll c, long size, long *dst,
                       long *src) {
    double s[MAX_REPS];
    coll_rep(c, dst, src, coll_iters / 10 + NSYNC);
    for (int r = 0; r < reps; r++)
        s[r] = coll_rep(c, dst, src, coll_iters);
    row(name, size, s, reps, "ns");
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            reps = 1;
            lat_iters = 200;
            coll_iters = 100;
            bw_bytes = 4L << 20;
            rate_msgs = 4096;
        } else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
            reps = atoi(argv[++i]);
            if (reps < 1 || reps > MAX_REPS) {
                fprintf(stderr, "shmem_bench: --reps wants 1 to %d\n", MAX_REPS);
                return 2;
            }
        } else {
            fprintf(stderr, "usage: shmem_bench [--quick] [--reps N]\n");
            return 2;
        }
    }
    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();
    if (npes != 2) {
        if (me == 0)
            fprintf(stderr, "shmem_bench: runs on 2 PEs, not %d\n", npes);
        shmem_finalize();
        return 2;
    }
    for (int k = 0; k < NSYNC; k++) {
        for (int j = 0; j < SHMEM_BCAST_SYNC_SIZE; j++)
            bcast_sync[k][j] = SHMEM_SYNC_VALUE;
        for (int j = 0; j < SHMEM_COLLECT_SYNC_SIZE; j++)
            collect_sync[k][j] = SHMEM_SYNC_VALUE;
        for (int j = 0; j < SHMEM_ALLTOALL_SYNC_SIZE; j++)
            a2a_sync[k][j] = SHMEM_SYNC_VALUE;
    }
    char *dst = shmem_malloc(MAX_MSG);
    char *src = shmem_malloc(MAX_MSG);
    long *cdst = shmem_malloc(sizeof(long) * A2A_ELEMS * 2);
    long *csrc = shmem_malloc(sizeof(long) * A2A_ELEMS * 2);
    if (!dst || !src || !cdst || !csrc) {
        fprintf(stderr, "shmem_bench: PE %d: shmem_malloc of %ld bytes failed\n",
                me, MAX_MSG);
        shmem_global_exit(1);
    }
    memset(src, me + 1, MAX_MSG);
    memset(dst, 0, MAX_MSG);
    for (int i = 0; i < A2A_ELEMS * 2; i++)
        csrc[i] = me * 1000 + i;
    shmem_barrier_all();

    latency("put_lat", put_lat, dst, src, 8);
    latency("get_lat", get_lat, dst, src, 8);
    static const long sizes[] = {4096, 65536, 1L << 20};
    for (int i = 0; i < 3; i++)
        bandwidth("put_bw", put_bw, dst, src, sizes[i]);
    for (int i = 0; i < 3; i++)
        bandwidth("get_bw", get_bw, dst, src, sizes[i]);
    rate(dst, src);
    latency("fadd_lat", fadd_lat, dst, src, 8);
    latency("cswap_lat", cswap_lat, dst, src, 8);
    collective("barrier_all", BARRIER, 0, cdst, csrc);
    collective("broadcast", BCAST, 8, cdst, csrc);
    collective("fcollect", FCOLLECT, 8, cdst, csrc);
    collective("alltoall", ALLTOALL, A2A_ELEMS * 8, cdst, csrc);

    shmem_barrier_all();
    if (me == 0) {
        printf("shmem_bench done\n");
        fflush(stdout);
    }
    shmem_free(csrc);
    shmem_free(cdst);
    shmem_free(src);
    shmem_free(dst);
    shmem_finalize();
    return 0;
}
