/* Distributed locks: rgex-shmem's C test of section 9.12. */
#include "check.h"

static long lock;          /* static: symmetric, 0 at start */
static long counter;
static long order[64];     /* who held the lock, in turn, on PE 0 */
static long next_slot;

int main(void) {
    shmem_init();
    banner();
    int me = shmem_my_pe(), n = shmem_n_pes();
    const int rounds = 200;
    for (int i = 0; i < rounds; i++) {
        shmem_set_lock(&lock);
        long v = shmem_long_g(&counter, 0);
        shmem_long_p(&counter, v + 1, 0);
        shmem_clear_lock(&lock);
    }
    shmem_barrier_all();
    CHECK(shmem_long_g(&counter, 0) == (long)rounds * n, "counter %ld", shmem_long_g(&counter, 0));
    ok("set_lock and clear_lock exclude: every read-modify-write of the counter kept");

    /* test_lock: taken by PE 0, refused to the others, then free again. */
    if (me == 0) CHECK(shmem_test_lock(&lock) == 0, "PE 0 takes the free lock");
    shmem_barrier_all();
    if (me != 0) CHECK(shmem_test_lock(&lock) == 1, "a held lock is refused");
    shmem_barrier_all();
    if (me == 0) shmem_clear_lock(&lock);
    shmem_barrier_all();
    /* One PE at a time takes it: each tries until it gets it (bounded). */
    int got = 0;
    for (long tries = 0; tries < 100000000L && !got; tries++) got = shmem_test_lock(&lock) == 0;
    CHECK(got, "test_lock never took the lock");
    shmem_clear_lock(&lock);
    ok("test_lock takes a free lock and refuses a held one");

    /* Fairness: while PE 0 holds the lock, everyone else queues; each
     * records its arrival, then its turn: the turns follow the tickets. */
    if (n > 1) {
        if (me == 0) shmem_set_lock(&lock);
        shmem_barrier_all();
        if (me != 0) {
            shmem_set_lock(&lock);
            long slot = shmem_long_atomic_fetch_inc(&next_slot, 0);
            shmem_long_p(&order[slot], me, 0);
            shmem_quiet();
            shmem_clear_lock(&lock);
        } else {
            shmem_clear_lock(&lock);
        }
        shmem_barrier_all();
        CHECK(shmem_long_g(&next_slot, 0) == n - 1, "every PE took its turn");
        if (me == 0) {
            long seen = 0;
            for (int i = 0; i < n - 1; i++) seen |= 1L << order[i];
            CHECK(seen == ((1L << n) - 2), "the turns were PEs %lx", seen);
        }
    }
    ok("every queued PE gets the lock once released");
    done();
    shmem_finalize();
    return 0;
}
