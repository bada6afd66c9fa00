#!/usr/bin/env bash
# Run every built peer program RUNS times (default 3) and print a table of medians (the programs
# all three peers have; seed 000's Erlang-only programs run from pcml-bench).
#
# Usage: measure.sh [small|paper|all] [RUNS]      (default: paper 3)
#   small: quick sizes, to check the programs; paper: the sizes of the papers (BENCHMARKS.md).
#
# Each run is one `run.sh` (bounded by `timeout 60`); a run whose check is not ok, or that
# fails, is reported on stderr and makes the script exit 1. Peers that are not built are
# skipped with a note. Columns: the median seconds of the runs, and the rate at that median
# (count per second; the count is N for spawn and the messages for the ping-pongs).
set -u
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SIZES="${1:-paper}"
RUNS="${2:-3}"

small=(
    "spawn 10000" "pingpong 10000" "parpingpong 10000" "primes 100"
    "skynet 1000 10" "skynet 729 3"
)
paper=(
    "spawn 1000000" "pingpong 1000000" "pingpong 10000000" "parpingpong 1000000"
    "parpingpong 10000000" "primes 2000" "skynet 1000000 10" "skynet 729 3"
)
case "$SIZES" in
    small) cases=("${small[@]}") ;;
    paper) cases=("${paper[@]}") ;;
    all) cases=("${small[@]}" "${paper[@]}") ;;
    *) echo "usage: measure.sh [small|paper|all] [RUNS]" >&2; exit 2 ;;
esac

# median of the numbers on stdin
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.6f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# the value of key $1 in the RESULT line $2
field() { tr ' ' '\n' <<<"$2" | sed -n "s/^$1=//p"; }

status=0
printf '| %-6s | %-11s | %5s | %-12s | %10s | %16s | %-9s |\n' \
    peer program procs n seconds rate unit
printf '| %-6s | %-11s | %5s | %-12s | %10s | %16s | %-9s |\n' \
    --- --- --- --- --- --- ---
for peer in cml go erlang; do
    case "$peer" in
        cml) procs_list=(1) ;;
        *) procs_list=(1 2) ;;
    esac
    for procs in "${procs_list[@]}"; do
        for c in "${cases[@]}"; do
            read -r prog n branch <<<"$c"
            secs=()
            line=""
            for ((r = 0; r < RUNS; r++)); do
                line="$(timeout 60 "$HERE/run.sh" "$peer" "$prog" "$n" "$procs" ${branch:+"$branch"})"
                rc=$?
                if [ $rc -eq 3 ]; then
                    break
                fi
                if [ $rc -ne 0 ] || [ "$(field check "$line")" != ok ]; then
                    echo "measure.sh: $peer $prog $n procs=$procs failed (exit $rc): $line" >&2
                    status=1
                    continue
                fi
                secs+=("$(field seconds "$line")")
            done
            if [ $rc -eq 3 ]; then
                echo "measure.sh: $peer not built; skipped" >&2
                continue 3
            fi
            [ ${#secs[@]} -gt 0 ] || continue
            med="$(printf '%s\n' "${secs[@]}" | median)"
            case "$prog" in
                spawn) count="$n"; unit="threads/s" ;;
                pingpong|parpingpong) count="$(field msgs "$line")"; unit="msgs/s" ;;
                primes) count="$n"; unit="primes/s" ;;
                skynet) count="$(field threads "$line")"; unit="threads/s" ;;
            esac
            rate="$(awk -v c="$count" -v s="$med" 'BEGIN { if (s > 0) printf "%.0f", c / s; else print "inf" }')"
            label="$n"
            [ -n "${branch:-}" ] && label="$n/$branch"
            printf '| %-6s | %-11s | %5s | %-12s | %10s | %16s | %-9s |\n' \
                "$peer" "$prog" "$procs" "$label" "$med" "$rate" "$unit"
        done
    done
done
exit $status
