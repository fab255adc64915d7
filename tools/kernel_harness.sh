#!/usr/bin/env bash
# Build tools/kernel_harness.c against the kernel library, with the package's flags
# (setup.py: -O3 -std=c99 -ffp-contract=off, each variant with its own ISA flags, no
# OpenMP), for the variants named:
#   tools/kernel_harness.sh CC OUTPUT "ISA ..." [LINK FLAGS ...]
# e.g.  tools/kernel_harness.sh gcc /tmp/kh "avx512 avx2 sse2 generic"
#       tools/kernel_harness.sh aarch64-linux-gnu-gcc /tmp/kh-a64 "neon generic" -static
# Set KERNELS to build from another copy of cyrbm/_kernels (the perturbed tree of .ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
cc="$1"; out="$2"; isas="$3"; shift 3
kernels="${KERNELS:-cyrbm/_kernels}"
flags=(-O3 -std=c99 -ffp-contract=off -Wall -Wextra -Werror -Iinclude -I"$kernels")
obj="$(mktemp -d)"
have=()
for isa in $isas; do
    case "$isa" in
        avx512) isaflags=(-mavx512f -mavx2 -mfma) ;;
        avx2) isaflags=(-mavx2 -mfma) ;;
        *) isaflags=() ;;
    esac
    ISA="$(echo "$isa" | tr a-z A-Z)"
    have+=(-DCYRBM_HAVE_$ISA)
    for family in table gibbs anneal chib; do
        "$cc" "${flags[@]}" "${isaflags[@]}" -DCYRBM_ISA_$ISA -c "$kernels/$family.c" \
            -o "$obj/${family}_$isa.o" &
    done
done
"$cc" "${flags[@]}" "${have[@]}" -c "$kernels/dispatch.c" -o "$obj/dispatch.o" &
"$cc" "${flags[@]}" -c "$kernels/common.c" -o "$obj/common.o" &
"$cc" "${flags[@]}" -c tools/kernel_harness.c -o "$obj/harness.o" &
wait_all=0
for job in $(jobs -p); do wait "$job" || wait_all=1; done
[ "$wait_all" = 0 ] || { echo "kernel_harness: a compile failed" >&2; exit 1; }
"$cc" "$obj/harness.o" "$obj/dispatch.o" "$obj"/table_*.o "$obj"/gibbs_*.o \
    "$obj"/anneal_*.o "$obj"/chib_*.o "$obj/common.o" -lm "$@" -o "$out"
rm -rf "$obj"
