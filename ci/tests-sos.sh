#!/usr/bin/env bash
# OpenSHMEM's public test suite (openshmem-org/tests-sos) against
# rgex-shmem: `bash ci/tests-sos.sh DIR [SUBDIR...]`, DIR a checkout of
# the suite fetched elsewhere (never vendored here). Builds every C
# program of test/unit, test/spec-example, test/apps and the two folders
# of test/performance (or the SUBDIRs named) with shmem/bin/oshcc, runs each under
# shmem/bin/oshrun on 2 and 4 PEs (on the conduit RGEX_CONDUIT and the
# rest of the environment name), and prints a table per directory:
# built, passed, failed, with each failure's name, and not applicable
# (a program that includes mpi.h: a hybrid MPI job, and there is no MPI
# here; a C++ or Fortran program). Programs are found as the suite's
# Makefile.am builds them: PROG.c, or PROG_SOURCES with PROG_CFLAGS's
# -D definitions and OpenMP. test/shmemx (SOS's own extensions) is not OpenSHMEM 1.5 and is
# not run. Needs `cargo build
# -p rgex-shmem -p rgex` first.
set -uo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
sos=${1:?usage: ci/tests-sos.sh DIR [SUBDIR...] (DIR: a tests-sos checkout)}
shift
dirs=("$@")
[ ${#dirs[@]} -gt 0 ] || dirs=(unit spec-example apps performance/shmem_perf_suite performance/tests)
out=${TESTS_SOS_OUT:-$(mktemp -d /tmp/tests-sos.XXXXXX)}
timeout=${TESTS_SOS_TIMEOUT:-120}
oshcc="$here/shmem/bin/oshcc"
oshrun="$here/shmem/bin/oshrun"
export FI_TCP_IFACE=${FI_TCP_IFACE:-lo} FI_SOCKETS_IFACE=${FI_SOCKETS_IFACE:-lo}
printf '%-14s %6s %6s %6s %6s %6s  %s\n' directory built np2ok np4ok failed n/a 'failures; not applicable' 
status=0
for d in "${dirs[@]}"; do
    src="$sos/test/$d"
    [ -d "$src" ] || { echo "no $src"; status=1; continue; }
    mkdir -p "$out/$d"
    built=0 ok2=0 ok4=0 fails=() na=()
    # The programs: each PROG.c, and each PROG that Makefile.am builds
    # from other sources (PROG_SOURCES: a second build of one file with
    # other flags, such as performance's _nb variants).
    progs=$( {
        for c in "$src"/*.c; do basename "$c" .c; done
        sed -n 's/^\([A-Za-z0-9_]*\)_SOURCES *=.*/\1/p' "$src/Makefile.am" 2>/dev/null
    } | sort -u)
    for t in $progs; do
        c="$src/$t.c"
        # The program's sources: PROG_SOURCES's .c files, or PROG.c.
        srcs=() other=
        for f in $(sed -n "s/^${t}_SOURCES *= *//p" "$src/Makefile.am" 2>/dev/null); do
            case $f in
            *.c) srcs+=("$src/$f") ;;
            *.cpp | *.cc) other=C++ ;;
            *.f90 | *.f | *.F90) other=Fortran ;;
            esac
        done
        # A C++ or Fortran program: not for a C library's oshcc.
        if [ ${#srcs[@]} -eq 0 ] && [ -n "$other" ]; then
            na+=("$t($other)")
            continue
        fi
        [ ${#srcs[@]} -gt 0 ] || srcs=("$c")
        if grep -q '#include *<mpi.h>' "${srcs[@]}"; then
            na+=("$t(mpi)")
            continue
        fi
        # A source that is another program's part (another PROG_SOURCES
        # lists it, and it has no main) is built into that program, not
        # on its own.
        if [ -f "$c" ] && grep -Eq "^[A-Za-z0-9_]+_SOURCES *=.*[ =]$t\.c( |\$)" "$src/Makefile.am" 2>/dev/null &&
            ! grep -Eq '\<main *\(' "$c"; then
            continue
        fi
        # PROG_CFLAGS: OpenMP's flag for $(AM_OPENMP_CFLAGS), the -D
        # definitions as they are, other make variables dropped.
        cflags=()
        for f in $(sed -n "s/^${t}_CFLAGS *= *//p" "$src/Makefile.am" 2>/dev/null); do
            case $f in
            '$(AM_OPENMP_CFLAGS)') cflags+=(-fopenmp) ;;
            -D*) cflags+=("$f") ;;
            esac
        done
        if ! "$oshcc" -O1 -pthread "${cflags[@]}" -I"$sos/test/include" -I"$src" "${srcs[@]}" -o "$out/$d/$t" -lm \
            >"$out/$d/$t.build" 2>&1; then
            fails+=("$t(build)")
            continue
        fi
        built=$((built + 1))
        for n in 2 4; do
            if "$oshrun" -np "$n" --timeout "$timeout" "$out/$d/$t" \
                >"$out/$d/$t.np$n" 2>&1 </dev/null; then
                if [ "$n" = 2 ]; then ok2=$((ok2 + 1)); else ok4=$((ok4 + 1)); fi
            else
                fails+=("$t(np$n:$?)")
            fi
        done
    done
    [ ${#fails[@]} -eq 0 ] || status=1
    printf '%-14s %6d %6d %6d %6d %6d  %s; %s\n' "$d" "$built" "$ok2" "$ok4" "${#fails[@]}" \
        "${#na[@]}" "${fails[*]:-}" "${na[*]:-}"
done
echo "logs: $out"
exit $status
