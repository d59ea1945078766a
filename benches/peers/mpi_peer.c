/*
 * mpi_peer: Open MPI as a peer of the rgex benches (BENCHMARKS.md, issue 31).
 *
 * Build: mpicc -O2 -o mpi_peer benches/peers/mpi_peer.c   (ci/bench.sh does)
 * Run:   mpirun -np 2 --bind-to core --mca btl self,vader --mca pml ob1
 *               --mca osc sm|rdma mpi_peer [-n ITERS] [-r REPS] TEST...
 *        (rgex_benches::mpi runs it so, loopback and shared memory only)
 *
 * TEST is one of:
 *   pingpong  MPI_Send/MPI_Recv ping-pong of 8 bytes, ns per round trip
 *             (rgex's AM round trip);
 *   put_lat   MPI_Put of 8 bytes from a static source + MPI_Win_flush,
 *             ns per operation (osu_put_latency's semantics);
 *   put_bw    MPI_Put flood, GB/s (10^9 B/s), a flush every 64 puts
 *             (osu_put_bw's window) and at the end, at 8 B, 4 KiB,
 *             64 KiB and 4 MiB;
 *   fop_lat   MPI_Fetch_and_op(MPI_SUM, uint64) + MPI_Win_flush, ns per op;
 *   fop_hot   every rank issues ITERS fetch-and-adds on one uint64 of rank
 *             0, flushing each; aggregate ops/s including the final
 *             barrier (the final value is checked).
 * One-sided tests use a window from MPI_Win_allocate under passive target
 * (MPI_Win_lock_all once); the target rank waits in MPI_Barrier meanwhile.
 *
 * Output: one line per repetition, "mpi TEST SIZE VALUE UNIT ITERS",
 * printed by rank 0; errors go to stderr with a non-zero exit.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WINDOW 64
#define MAX_BW (4u << 20)

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int rank, nranks;

static void fail(const char *what) {
    fprintf(stderr, "mpi_peer: rank %d: %s\n", rank, what);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

static void report(const char *test, long size, double value, const char *unit, long iters) {
    if (rank == 0) {
        printf("mpi %s %ld %.6g %s %ld\n", test, size, value, unit, iters);
        fflush(stdout);
    }
}

static void pingpong(long iters, int reps) {
    char buf[8] = "mpi-8B!";
    int peer = 1 - rank;
    for (int r = -1; r < reps; r++) {
        long n = r < 0 ? iters / 10 + 1 : iters; /* r < 0: warm-up */
        MPI_Barrier(MPI_COMM_WORLD);
        double t = now();
        if (rank < 2) {
            for (long i = 0; i < n; i++) {
                if (rank == 0) {
                    MPI_Send(buf, 8, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
                    MPI_Recv(buf, 8, MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                } else {
                    MPI_Recv(buf, 8, MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    MPI_Send(buf, 8, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
                }
            }
        }
        t = now() - t;
        if (r >= 0)
            report("pingpong", 8, 1e9 * t / (double)n, "ns", n);
    }
}

/* Passive-target window of `bytes` on every rank, locked for all. */
static MPI_Win window(MPI_Aint bytes, void **base) {
    MPI_Win win;
    if (MPI_Win_allocate(bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, base, &win) != MPI_SUCCESS)
        fail("MPI_Win_allocate failed");
    memset(*base, 0, (size_t)bytes);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock_all(0, win);
    return win;
}

static void unwindow(MPI_Win *win) {
    MPI_Win_unlock_all(*win);
    MPI_Win_free(win);
}

static void put_lat(long iters, int reps) {
    static const char src[8] = "mpi-8B!";
    void *base;
    MPI_Win win = window(8, &base);
    for (int r = -1; r < reps; r++) {
        long n = r < 0 ? iters / 10 + 1 : iters;
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
            double t = now();
            for (long i = 0; i < n; i++) {
                MPI_Put(src, 8, MPI_BYTE, 1, 0, 8, MPI_BYTE, win);
                MPI_Win_flush(1, win);
            }
            t = now() - t;
            if (r >= 0)
                report("put_lat", 8, 1e9 * t / (double)n, "ns", n);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    unwindow(&win);
}

static void put_bw(long iters, int reps) {
    static const long sizes[] = {8, 4096, 65536, MAX_BW};
    char *src = malloc(MAX_BW);
    if (!src)
        fail("out of memory");
    for (long i = 0; i < MAX_BW; i++)
        src[i] = (char)(i * 131 % 251);
    void *base;
    MPI_Win win = window(MAX_BW, &base);
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        long size = sizes[k];
        /* About 256 MiB per repetition, between 64 and 4 x ITERS puts. */
        long n = (256L << 20) / size;
        if (n > 4 * iters)
            n = 4 * iters;
        if (n < WINDOW)
            n = WINDOW;
        for (int r = -1; r < reps; r++) {
            MPI_Barrier(MPI_COMM_WORLD);
            if (rank == 0) {
                long m = r < 0 ? n / 10 + 1 : n;
                double t = now();
                for (long i = 0; i < m; i++) {
                    MPI_Put(src, (int)size, MPI_BYTE, 1, 0, (int)size, MPI_BYTE, win);
                    if ((i + 1) % WINDOW == 0)
                        MPI_Win_flush(1, win);
                }
                MPI_Win_flush(1, win);
                t = now() - t;
                if (r >= 0)
                    report("put_bw", size, (double)size * (double)m / t / 1e9, "GB/s", m);
            }
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1 && memcmp(base, src, MAX_BW) != 0)
        fail("put_bw: the target's window does not hold what was put");
    MPI_Barrier(MPI_COMM_WORLD);
    unwindow(&win);
    free(src);
}

static void fop_lat(long iters, int reps) {
    uint64_t one = 1, old = 0;
    void *base;
    MPI_Win win = window(8, &base);
    for (int r = -1; r < reps; r++) {
        long n = r < 0 ? iters / 10 + 1 : iters;
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
            double t = now();
            for (long i = 0; i < n; i++) {
                MPI_Fetch_and_op(&one, &old, MPI_UINT64_T, 1, 0, MPI_SUM, win);
                MPI_Win_flush(1, win);
            }
            t = now() - t;
            if (r >= 0)
                report("fop_lat", 8, 1e9 * t / (double)n, "ns", n);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    unwindow(&win);
}

static void fop_hot(long iters, int reps) {
    uint64_t one = 1, old = 0;
    void *base;
    MPI_Win win = window(8, &base);
    uint64_t expect = 0;
    for (int r = -1; r < reps; r++) {
        long n = r < 0 ? iters / 10 + 1 : iters;
        MPI_Barrier(MPI_COMM_WORLD);
        double t = now();
        for (long i = 0; i < n; i++) {
            MPI_Fetch_and_op(&one, &old, MPI_UINT64_T, 0, 0, MPI_SUM, win);
            MPI_Win_flush(0, win);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        t = now() - t;
        expect += (uint64_t)n * (uint64_t)nranks;
        if (r >= 0)
            report("fop_hot", 8, (double)n * nranks / t, "ops/s", n);
    }
    if (rank == 0) {
        uint64_t got = 0;
        MPI_Fetch_and_op(NULL, &got, MPI_UINT64_T, 0, 0, MPI_NO_OP, win);
        MPI_Win_flush(0, win);
        if (got != expect) {
            char msg[160];
            snprintf(msg, sizeof msg, "fop_hot: rank 0's counter holds %llu, expected %llu",
                     (unsigned long long)got, (unsigned long long)expect);
            fail(msg);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    unwindow(&win);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (nranks < 2)
        fail("needs at least two ranks (mpirun -np 2)");
    long iters = 100000;
    int reps = 5, tests = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-n") && i + 1 < argc) {
            iters = atol(argv[++i]);
            if (iters < 1)
                fail("-n needs a positive number");
        } else if (!strcmp(argv[i], "-r") && i + 1 < argc) {
            reps = atoi(argv[++i]);
            if (reps < 1)
                fail("-r needs a positive number");
        } else if (!strcmp(argv[i], "pingpong")) {
            pingpong(iters, reps), tests++;
        } else if (!strcmp(argv[i], "put_lat")) {
            put_lat(iters, reps), tests++;
        } else if (!strcmp(argv[i], "put_bw")) {
            put_bw(iters, reps), tests++;
        } else if (!strcmp(argv[i], "fop_lat")) {
            fop_lat(iters, reps), tests++;
        } else if (!strcmp(argv[i], "fop_hot")) {
            fop_hot(iters, reps), tests++;
        } else {
            char msg[200];
            snprintf(msg, sizeof msg,
                     "unknown argument \"%.100s\" (tests: pingpong put_lat put_bw fop_lat fop_hot; -n ITERS, -r REPS)",
                     argv[i]);
            fail(msg);
        }
    }
    if (tests == 0)
        fail("no test named (pingpong put_lat put_bw fop_lat fop_hot)");
    MPI_Finalize();
    return 0;
}
