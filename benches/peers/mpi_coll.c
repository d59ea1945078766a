/*
 * mpi_coll: Open MPI's collectives as the peer of rgex's testcoll bench
 * (issue 40).
 *
 * Build: mpicc -O2 -o mpi_coll benches/peers/mpi_coll.c   (ci/bench.sh does)
 * Run:   mpirun -np N --mca pml ob1 --mca btl self,vader mpi_coll
 *               [-n ITERS] [-r REPS]
 *        (testcoll runs it so, shared memory only, interleaved with
 *        rgex's own runs)
 *
 * Tests, each ITERS calls back to back per repetition (a tenth of them
 * at 64 KiB), after one repetition of warm-up:
 *   barrier    MPI_Ibarrier + MPI_Wait;
 *   bcast      MPI_Bcast from rank 0 of 8 bytes and of 64 KiB;
 *   allreduce  MPI_Allreduce(MPI_SUM) of 1 and of 8192 uint64 (8 B, 64 KiB);
 *   alltoall   MPI_Alltoall of 1 KiB per pair.
 * A repetition's figure is the slowest rank's time per call (MPI_Reduce
 * MAX after it, not timed).
 *
 * Output: one line per repetition, "mpi TEST SIZE NS_PER_CALL ITERS",
 * printed by rank 0; errors go to stderr with a non-zero exit.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int rank, nranks;
static uint64_t *a, *b;
static char *s, *r;

enum test { BARRIER, BCAST, ALLREDUCE, ALLTOALL };

static void one(enum test t, long size) {
    MPI_Request req;
    switch (t) {
    case BARRIER:
        MPI_Ibarrier(MPI_COMM_WORLD, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        break;
    case BCAST:
        MPI_Bcast(s, (int)size, MPI_BYTE, 0, MPI_COMM_WORLD);
        break;
    case ALLREDUCE:
        MPI_Allreduce(a, b, (int)(size / 8), MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
        break;
    case ALLTOALL:
        MPI_Alltoall(s, (int)size, MPI_BYTE, r, (int)size, MPI_BYTE, MPI_COMM_WORLD);
        break;
    }
}

static void run(const char *name, enum test t, long size, long iters, int reps) {
    for (int rep = -1; rep < reps; rep++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = now();
        for (long i = 0; i < iters; i++)
            one(t, size);
        double mine = (now() - t0) / (double)iters * 1e9, worst = 0;
        MPI_Reduce(&mine, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        if (rep >= 0 && rank == 0) {
            printf("mpi %s %ld %.1f ns %ld\n", name, size, worst, iters);
            fflush(stdout);
        }
    }
}

int main(int argc, char **argv) {
    long iters = 2000;
    int reps = 5;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "-n"))
            iters = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "-r"))
            reps = atoi(argv[i + 1]);
    }
    if (iters < 10 || reps < 1) {
        fprintf(stderr, "mpi_coll: rank %d: -n must be at least 10, -r at least 1\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    a = calloc(8192, 8);
    b = calloc(8192, 8);
    s = calloc((size_t)nranks, 65536);
    r = calloc((size_t)nranks, 65536);
    if (!a || !b || !s || !r) {
        fprintf(stderr, "mpi_coll: rank %d: out of memory\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (int i = 0; i < 8192; i++)
        a[i] = (uint64_t)(rank + i);
    run("barrier", BARRIER, 0, iters, reps);
    run("bcast", BCAST, 8, iters, reps);
    run("bcast", BCAST, 65536, iters / 10, reps);
    run("allreduce", ALLREDUCE, 8, iters, reps);
    run("allreduce", ALLREDUCE, 65536, iters / 10, reps);
    run("alltoall", ALLTOALL, 1024, iters, reps);
    MPI_Finalize();
    return 0;
}
