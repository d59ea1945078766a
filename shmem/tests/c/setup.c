/* Setup, exit and query routines: rgex-shmem's C test of section 9.1.
 * Usage: setup N (the number of PEs the job has). */
#include "check.h"
#include <string.h>

int main(int argc, char **argv) {
    int major = 0, minor = 0;
    char name[SHMEM_MAX_NAME_LEN];
    /* The info routines work before init. */
    shmem_info_get_version(&major, &minor);
    shmem_info_get_name(name);
    int provided = -1;
    CHECK(shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided) == 0, "init_thread failed");
    banner();
    CHECK(major == SHMEM_MAJOR_VERSION && minor == SHMEM_MINOR_VERSION && major == 1 &&
              minor == 5,
          "version %d.%d", major, minor);
    CHECK(strcmp(name, SHMEM_VENDOR_STRING) == 0, "name %s", name);
    ok("info_get_version is 1.5 and info_get_name is SHMEM_VENDOR_STRING");

    int level = -1;
    shmem_query_thread(&level);
    CHECK(provided == SHMEM_THREAD_MULTIPLE && level == provided, "provided %d, query %d",
          provided, level);
    shmem_init(); /* a second init while running changes nothing */
    ok("init_thread provides MULTIPLE as asked; query_thread says so");

    int me = shmem_my_pe(), n = shmem_n_pes();
    int want = argc > 1 ? atoi(argv[1]) : -1;
    CHECK(n == want && me >= 0 && me < n, "PE %d of %d, the job has %d", me, n, want);
    ok("my_pe and n_pes match the job");

    for (int pe = 0; pe < n; pe++) CHECK(shmem_pe_accessible(pe) == 1, "PE %d", pe);
    CHECK(!shmem_pe_accessible(-1) && !shmem_pe_accessible(n), "PEs out of range");
    ok("pe_accessible: every PE of the job, none outside it");

    long *sym = shmem_malloc(4 * sizeof(long));
    long local = 0;
    for (int pe = 0; pe < n; pe++) {
        CHECK(shmem_addr_accessible(sym, pe) == 1, "heap on PE %d", pe);
        CHECK(shmem_addr_accessible(&sym[3], pe) == 1, "heap end on PE %d", pe);
        CHECK(shmem_addr_accessible(&local, pe) == 0, "stack on PE %d", pe);
    }
    CHECK(shmem_addr_accessible(sym, n) == 0, "PE n");
    ok("addr_accessible: the heap, not the stack");

    CHECK(shmem_ptr(sym, me) == (void *)sym, "shmem_ptr to myself");
    CHECK(shmem_ptr(&local, me) == NULL, "shmem_ptr of the stack");
    ok("shmem_ptr of this PE's own heap is the pointer itself");

    /* Through shmem_ptr, each PE stores into its right neighbour. */
    int right = (me + 1) % n, left = (me + n - 1) % n;
    long *there = shmem_ptr(sym, right);
    int reachable = n == 1 || there != NULL;
    sym[0] = -1;
    shmem_barrier_all();
    if (there) there[0] = 1000 + me;
    shmem_barrier_all();
    if (reachable) {
        CHECK(sym[0] == 1000 + left, "stored through shmem_ptr: %ld", sym[0]);
    }
    /* Every PE reports whether its peer was reachable to PE 0. */
    int *flags = shmem_calloc((size_t)n, sizeof(int));
    shmem_int_p(&flags[me], reachable, 0);
    shmem_barrier_all();
    int count = 0;
    for (int pe = 0; pe < n; pe++) count += shmem_int_g(&flags[pe], 0);
    if (n == 1 || count == n)
        ok("shmem_ptr reaches node-local peers' heaps: stores through it land");
    else if (count == 0)
        skip("shmem_ptr reaches node-local peers' heaps",
             "no peer's heap is mapped in this process (scc, or a network conduit without the shared-memory bypass)");
    else
        FAIL("shmem_ptr reached %d of %d peers", count, n);
    shmem_free(flags);
    shmem_free(sym);
    done();
    shmem_finalize();
    return 0;
}
