/* SHMEM_THREAD_MULTIPLE: several threads of every PE put, get, run AMOs
 * and put-with-signals at once, each completing its own with
 * shmem_quiet; rgex-shmem's C test of shmem_init_thread's promise. */
#include "check.h"
#include <pthread.h>
#include <stdint.h>

enum { THREADS = 4, ROUNDS = 200, SLICE = 64 };
static int me, npes, right, left;
static long *data;       /* THREADS * SLICE, written by the left neighbour */
static long *counter;    /* on PE 0: THREADS * ROUNDS * npes */
static uint64_t *signals; /* THREADS words, one per thread of the left neighbour */

static void *work(void *arg) {
    int t = (int)(intptr_t)arg;
    long src[SLICE];
    for (int r = 0; r < ROUNDS; r++) {
        for (int i = 0; i < SLICE; i++) src[i] = (long)me * 1000000 + t * 10000 + r;
        shmem_long_put(&data[t * SLICE], src, SLICE, right);
        shmem_long_atomic_add(counter, 1, 0);
        long back[SLICE];
        shmem_long_get(back, &data[t * SLICE], SLICE, left);
        /* The left neighbour's thread t is writing this slice meanwhile:
         * each element is one of the values it puts (or still 0). */
        long base = (long)((left + npes - 1) % npes) * 1000000 + t * 10000;
        for (int i = 0; i < SLICE; i++)
            CHECK(back[i] == 0 || (back[i] >= base && back[i] <= base + ROUNDS),
                  "thread %d: got %ld", t, back[i]);
    }
    shmem_quiet();
    long last = (long)me * 1000000 + t * 10000 + ROUNDS;
    shmem_long_put_signal(&data[t * SLICE], &last, 1, &signals[t], 1, SHMEM_SIGNAL_ADD, right);
    shmem_quiet();
    return NULL;
}

int main(void) {
    int provided = -1;
    shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided);
    banner();
    CHECK(provided == SHMEM_THREAD_MULTIPLE, "provided %d", provided);
    neighbours(&me, &npes, &right, &left);
    data = shmem_calloc(THREADS * SLICE, sizeof(long));
    counter = shmem_calloc(1, sizeof(long));
    signals = shmem_calloc(THREADS, sizeof(uint64_t));
    pthread_t th[THREADS];
    for (int t = 0; t < THREADS; t++)
        CHECK(pthread_create(&th[t], NULL, work, (void *)(intptr_t)t) == 0, "pthread_create");
    for (int t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
    for (int t = 0; t < THREADS; t++) {
        shmem_signal_wait_until(&signals[t], SHMEM_CMP_EQ, 1);
        CHECK(data[t * SLICE] == (long)left * 1000000 + t * 10000 + ROUNDS,
              "thread %d's last put-with-signal: %ld", t, data[t * SLICE]);
    }
    ok("put-with-signal from 4 threads per PE: each signal after its data");
    CHECK(shmem_long_atomic_fetch(counter, 0) == (long)THREADS * ROUNDS * npes, "counter %ld",
          shmem_long_atomic_fetch(counter, 0));
    ok("AMOs from 4 threads per PE, all counted");
    for (int t = 0; t < THREADS; t++)
        CHECK(data[t * SLICE + 1] == (long)left * 1000000 + t * 10000 + ROUNDS - 1,
              "thread %d's slice: %ld", t, data[t * SLICE + 1]);
    ok("puts from 4 threads per PE, each quieted by its thread, all there");
    done();
    shmem_finalize();
    return 0;
}
