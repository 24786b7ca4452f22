#!/usr/bin/env bash
# World log benchmarks (issue 6): append throughput with 1 and 16 writer
# processes, and queries on a generated log against grep on the same file.
#
#   bench/worldlog/run.sh [LINES]      # default 1,000,000 lines
#
# Uses hyperfine when installed, else bash's time. CRA_BIN may name a cra
# binary to use instead of building one.
set -euo pipefail
lines=${1:-1000000}
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cra=${CRA_BIN:-$work/cra}
[ -n "${CRA_BIN:-}" ] || go build -o "$cra" "$root/cmd/cra"
go build -o "$work/worldlog" "$root/bench/worldlog"

# Output goes to a file, not /dev/null: GNU grep stops at the first match
# when its output is /dev/null.
run() { # run LABEL CMD...: time one command (after a warm-up run)
	local label=$1; shift
	if command -v hyperfine >/dev/null; then
		hyperfine --warmup 1 --runs 5 --style basic --output "$work/out" -n "$label" -- "$(printf '%q ' "$@")"
	else
		"$@" >"$work/out"
		local TIMEFORMAT="$label: %3R s real, %3U s user, %3S s sys"
		time { "$@" >"$work/out"; }
	fi
}

rate() { awk -v s="$1" -v e="$2" -v n="$3" 'BEGIN { printf "%.2f s = %d events/s", e - s, n / (e - s) }'; }

echo "== append throughput (events of 100 bytes, fsync policy agent: none for events)"
mkdir -p "$work/a/.clean_room"
n=20000
start=$(date +%s.%N)
"$work/worldlog" append -dir "$work/a/.clean_room" -n "$n"
end=$(date +%s.%N)
echo "1 writer:   $n events in $(rate "$start" "$end" "$n")"
rm -f "$work/a/.clean_room/world.log"
start=$(date +%s.%N)
for w in $(seq 16); do "$work/worldlog" append -dir "$work/a/.clean_room" -n $((n / 16)) -id "w$w" & done
wait
end=$(date +%s.%N)
echo "16 writers: $n events in $(rate "$start" "$end" "$n")"
start=$(date +%s.%N)
for w in $(seq 16); do "$work/worldlog" append -dir "$work/a/.clean_room" -n $((n / 160)) -size 10000 -id "big$w" & done
wait
end=$(date +%s.%N)
echo "16 writers, 10 KB events (exclusive lock): $((n / 10)) events in $(rate "$start" "$end" $((n / 10)))"
echo "lines in log: $(wc -l <"$work/a/.clean_room/world.log")"

echo "== queries on a $lines-line log"
repo=$work/q
mkdir -p "$repo/.clean_room"
"$work/worldlog" gen -dir "$repo/.clean_room" -lines "$lines"
log=$repo/.clean_room/world.log
echo "log: $(wc -l <"$log") lines, $(du -h "$log" | cut -f1)"
rm -f "$repo/.clean_room/world.log.idx"
TIMEFORMAT="--current, first run (replays the log, writes the index): %3R s"
time "$cra" log query --repo "$repo" --current --count >"$work/out"
run "cra log query --current --count (side index)" "$cra" log query --repo "$repo" --current --count
run "cra log query --current (side index, prints every agent)" "$cra" log query --repo "$repo" --current
run "cra log query --current --no-index --count (replays the log)" "$cra" log query --repo "$repo" --current --no-index --count
run "cra log query --limbo 1h --count (side index)" "$cra" log query --repo "$repo" --limbo 1h --count
run "cra log query --text captcha --count" "$cra" log query --repo "$repo" --text captcha --count
run "grep -c captcha" grep -c captcha "$log"
run "cra log query --status failed --count" "$cra" log query --repo "$repo" --status failed --count
run "grep -c '\]\[agent:failed\]\['" grep -c '\]\[agent:failed\]\[' "$log"
run "cra log query --since 1h --count (parses every line)" "$cra" log query --repo "$repo" --since 1h --count
echo "matches: cra $("$cra" log query --repo "$repo" --text captcha --count), grep $(grep -c captcha "$log")"
