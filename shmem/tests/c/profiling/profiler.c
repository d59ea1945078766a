/* A profiling library over the pshmem_ interface, as a tool such as TAU
 * or mpiP builds one: it defines the shmem_ routines it measures, counts
 * each call and forwards it to the pshmem_ routine, and at shmem_finalize
 * prints one line per PE with its counts. shmem/tests/c.rs builds it as a
 * shared library, links it before librgex_shmem.so (or LD_PRELOADs it),
 * and checks the counts that profiled.c's calls must give: a call the
 * library makes to itself must not reach the profiler. */
#include <pshmem.h>
#include <stdio.h>

static unsigned long n_malloc, n_putmem, n_long_p, n_fetch_add, n_barrier;

void *shmem_malloc(size_t size) {
    n_malloc++;
    return pshmem_malloc(size);
}

void shmem_putmem(void *dest, const void *source, size_t nelems, int pe) {
    n_putmem++;
    pshmem_putmem(dest, source, nelems, pe);
}

void shmem_long_p(long *dest, long value, int pe) {
    n_long_p++;
    pshmem_long_p(dest, value, pe);
}

long shmem_long_atomic_fetch_add(long *dest, long value, int pe) {
    n_fetch_add++;
    return pshmem_long_atomic_fetch_add(dest, value, pe);
}

void shmem_barrier_all(void) {
    n_barrier++;
    pshmem_barrier_all();
}

void shmem_finalize(void) {
    printf("profiler PE %d: malloc %lu putmem %lu long_p %lu "
           "long_atomic_fetch_add %lu barrier_all %lu\n",
           pshmem_my_pe(), n_malloc, n_putmem, n_long_p, n_fetch_add,
           n_barrier);
    fflush(stdout);
    pshmem_finalize();
}
