/* Collectives: rgex-shmem's C test of section 9.9 (team and active-set
 * forms, every reduction operator, the generic forms). */
#include "check.h"
#include <complex.h>
#include <string.h>

#define N 8
long psync[SHMEM_REDUCE_SYNC_SIZE]; /* static: symmetric */
long pwrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE];

int main(void) {
    shmem_init();
    banner();
    int me, n, right, left;
    neighbours(&me, &n, &right, &left);
    (void)right;
    (void)left;
    long *src = shmem_calloc(N * 64, sizeof(long));
    long *dst = shmem_calloc(N * 64, sizeof(long));

    for (int root = 0; root < n; root++) {
        for (int i = 0; i < N; i++) src[i] = root * 100 + i + (me == root ? 0 : 50);
        memset(dst, 0, N * sizeof(long));
        CHECK(shmem_long_broadcast(SHMEM_TEAM_WORLD, dst, src, N, root) == 0, "broadcast");
        for (int i = 0; i < N; i++) CHECK(dst[i] == root * 100 + i, "root %d dst[%d] %ld", root, i, dst[i]);
    }
    ok("broadcast from every root, the root's dest written too");

    for (int i = 0; i < N; i++) src[i] = me * N + i;
    shmem_long_fcollect(SHMEM_TEAM_WORLD, dst, src, N);
    for (int i = 0; i < N * n; i++) CHECK(dst[i] == i, "fcollect dst[%d] %ld", i, dst[i]);
    /* collect: PE p gives p + 1 elements. */
    for (int i = 0; i <= me; i++) src[i] = me;
    shmem_long_collect(SHMEM_TEAM_WORLD, dst, src, (size_t)me + 1);
    int k = 0;
    for (int p = 0; p < n; p++)
        for (int i = 0; i <= p; i++, k++) CHECK(dst[k] == p, "collect dst[%d] %ld", k, dst[k]);
    ok("fcollect and collect in team order");

    for (int p = 0; p < n; p++)
        for (int i = 0; i < 2; i++) src[p * 2 + i] = me * 1000 + p * 10 + i;
    shmem_long_alltoall(SHMEM_TEAM_WORLD, dst, src, 2);
    for (int p = 0; p < n; p++)
        for (int i = 0; i < 2; i++)
            CHECK(dst[p * 2 + i] == p * 1000 + me * 10 + i, "alltoall from %d", p);
    memset(dst, 0, N * 64 * sizeof(long));
    for (int e = 0; e < 2 * n; e++) src[e * 3] = me * 1000 + e;
    shmem_long_alltoalls(SHMEM_TEAM_WORLD, dst, src, 2, 3, 2);
    for (int p = 0; p < n; p++)
        for (int i = 0; i < 2; i++)
            CHECK(dst[(p * 2 + i) * 2] == p * 1000 + me * 2 + i, "alltoalls from %d: %ld", p,
                  dst[(p * 2 + i) * 2]);
    ok("alltoall and alltoalls (strides 2 and 3)");

    /* Every operator on int; and, or, xor on unsigned. */
    int *is = shmem_malloc(4 * sizeof(int)), *id = shmem_malloc(4 * sizeof(int));
    for (int i = 0; i < 4; i++) is[i] = me + i + 1;
    int sum = 0, prod = 1;
    for (int p = 0; p < n; p++) sum += p + 1, prod *= p + 1;
    shmem_int_sum_reduce(SHMEM_TEAM_WORLD, id, is, 4);
    CHECK(id[0] == sum && id[3] == sum + 3 * n, "sum %d", id[0]);
    shmem_int_prod_reduce(SHMEM_TEAM_WORLD, id, is, 1);
    CHECK(id[0] == prod, "prod %d", id[0]);
    shmem_int_max_reduce(SHMEM_TEAM_WORLD, id, is, 1);
    CHECK(id[0] == n, "max %d", id[0]);
    shmem_int_min_reduce(SHMEM_TEAM_WORLD, id, is, 1);
    CHECK(id[0] == 1, "min %d", id[0]);
    unsigned *us = shmem_malloc(sizeof(unsigned)), *ud = shmem_malloc(sizeof(unsigned));
    *us = 1u << me | 1u << 31;
    shmem_uint_or_reduce(SHMEM_TEAM_WORLD, ud, us, 1);
    CHECK(*ud == (((1u << n) - 1) | 1u << 31), "or %x", *ud);
    shmem_uint_and_reduce(SHMEM_TEAM_WORLD, ud, us, 1);
    CHECK(*ud == (n == 1 ? (1u | 1u << 31) : 1u << 31), "and %x", *ud);
    shmem_uint_xor_reduce(SHMEM_TEAM_WORLD, ud, us, 1);
    CHECK(*ud == (((1u << n) - 1) | (n % 2 ? 1u << 31 : 0)), "xor %x", *ud);
    ok("int sum, prod, max, min; uint and, or, xor");

    double *ds = shmem_malloc(sizeof(double)), *dd = shmem_malloc(sizeof(double));
    *ds = me + 0.5;
    shmem_sum_reduce(SHMEM_TEAM_WORLD, dd, ds, 1); /* generic */
    CHECK(*dd == n * n / 2.0, "double sum %f", *dd);
    long double *ls = shmem_malloc(sizeof(long double)), *ld = shmem_malloc(sizeof(long double));
    *ls = me + 0.25L;
    shmem_longdouble_max_reduce(SHMEM_TEAM_WORLD, ld, ls, 1);
    CHECK(*ld == n - 0.75L, "long double max %Lf", *ld);
    double _Complex *cs = shmem_malloc(sizeof(double _Complex)), *cd = shmem_malloc(sizeof(double _Complex));
    *cs = 1.0 * me + 1.0 * _Complex_I;
    shmem_complexd_sum_reduce(SHMEM_TEAM_WORLD, cd, cs, 1);
    CHECK(__real__ *cd == n * (n - 1) / 2.0 && __imag__ *cd == n, "complex sum");
    ok("double (generic), long double and double complex reductions");

    /* An in-place reduction on a split team. */
    shmem_team_t half;
    shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (n + 1) / 2, NULL, 0, &half);
    if (half != SHMEM_TEAM_INVALID) {
        is[0] = me;
        shmem_int_sum_reduce(half, is, is, 1);
        int want = 0;
        for (int p = 0; p < n; p += 2) want += p;
        CHECK(is[0] == want, "even sum %d, want %d", is[0], want);
        shmem_team_destroy(half);
    }
    ok("an in-place sum on the even PEs' team");

    /* The deprecated active-set forms, on the whole job and on the PEs
     * from 1 (a set without a team: RMA and AMOs on pSync). */
    for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++) psync[i] = SHMEM_SYNC_VALUE;
    shmem_barrier_all();
    for (int first = 0; first < (n > 1 ? 2 : 1); first++) {
        int size = n - first;
        if (me < first) continue;
        for (int rep = 0; rep < 3; rep++) {
            is[0] = me + rep;
            shmem_int_sum_to_all(id, is, 1, first, 0, size, (int *)pwrk, psync);
            int want = 0;
            for (int p = first; p < n; p++) want += p + rep;
            CHECK(id[0] == want, "to_all from %d: %d, want %d", first, id[0], want);
            /* Members write into each other's dest at any time during a
             * call: each PE is done with dest (a barrier) before the next. */
            memset(dst, 0, 64 * sizeof(long));
            src[0] = me;
            shmem_barrier(first, 0, size, psync);
            shmem_fcollect64(dst, src, 1, first, 0, size, psync);
            for (int p = 0; p < size; p++) CHECK(dst[p] == first + p, "fcollect64 from %d", first);
            for (int i = 0; i <= me; i++) src[i] = me;
            shmem_barrier(first, 0, size, psync);
            shmem_collect64(dst, src, (size_t)me + 1, first, 0, size, psync);
            k = 0;
            for (int p = first; p < n; p++)
                for (int i = 0; i <= p; i++, k++) CHECK(dst[k] == p, "collect64 from %d", first);
            src[0] = 7 + rep;
            dst[0] = -1;
            shmem_barrier(first, 0, size, psync);
            shmem_broadcast64(dst, src, 1, 0, first, 0, size, psync);
            CHECK(me == first ? dst[0] == -1 : dst[0] == 7 + rep, "broadcast64 %ld", dst[0]);
            for (int p = 0; p < size; p++) src[p] = me * 100 + p;
            shmem_barrier(first, 0, size, psync);
            shmem_alltoall64(dst, src, 1, first, 0, size, psync);
            for (int p = 0; p < size; p++)
                CHECK(dst[p] == (first + p) * 100 + (me - first), "alltoall64 %ld", dst[p]);
            shmem_barrier(first, 0, size, psync);
            shmem_sync(first, 0, size, psync);
        }
    }
    /* Once every PE is done with the sets (a PE may start the next set's
     * barrier on a slower member's pSync while that member still ends
     * the previous one), pSync is back to SHMEM_SYNC_VALUE. */
    shmem_sync(SHMEM_TEAM_WORLD);
    for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++)
        CHECK(psync[i] == SHMEM_SYNC_VALUE, "pSync[%d] = %ld after the calls", i, psync[i]);
    ok("active sets: to_all, fcollect64, collect64, broadcast64, alltoall64, barrier, sync");
    done();
    shmem_finalize();
    return 0;
}
