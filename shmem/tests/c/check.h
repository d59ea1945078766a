/* The checks of rgex-shmem's C tests: each PE checks, a failing PE ends
 * the job (non-zero), and PE 0 prints "ok: WHAT" per check made, "skip:
 * WHAT: WHY" per check not made, and a final count, as the Rust suite's
 * programs do (shmem/tests/c.rs counts them). */
#ifndef RGEX_SHMEM_TEST_CHECK_H
#define RGEX_SHMEM_TEST_CHECK_H

#include <shmem.h>
#include <shmemx.h>
#include <stdio.h>
#include <stdlib.h>

static int checks_passed, checks_skipped;

#define FAIL(...)                                                           \
    do {                                                                    \
        fprintf(stderr, "PE %d: check failed at %s:%d: ", shmem_my_pe(),   \
                __FILE__, __LINE__);                                        \
        fprintf(stderr, __VA_ARGS__);                                       \
        fprintf(stderr, "\n");                                              \
        fflush(stderr);                                                     \
        shmem_global_exit(1);                                               \
    } while (0)

/* Require COND on this PE. */
#define CHECK(cond, ...)                                                    \
    do {                                                                    \
        if (!(cond)) FAIL(__VA_ARGS__);                                     \
    } while (0)

/* A check made: every PE agrees it held (a barrier), PE 0 reports it. */
static inline void ok(const char *what) {
    shmem_barrier_all();
    checks_passed++;
    if (shmem_my_pe() == 0) printf("ok: %s\n", what);
}

/* A check not made here, and why. */
static inline void skip(const char *what, const char *why) {
    checks_skipped++;
    if (shmem_my_pe() == 0) printf("skip: %s: %s\n", what, why);
}

static inline void banner(void) {
    if (shmem_my_pe() == 0) printf("conduit: %s\n", shmemx_conduit_name());
}

/* This PE, the job's size and the PEs on either side in the ring. */
static inline void neighbours(int *me, int *npes, int *right, int *left) {
    *me = shmem_my_pe();
    *npes = shmem_n_pes();
    *right = (*me + 1) % *npes;
    *left = (*me + *npes - 1) % *npes;
}

static inline void done(void) {
    if (shmem_my_pe() == 0)
        printf("checks: %d passed, %d skipped\n", checks_passed, checks_skipped);
}

#endif
