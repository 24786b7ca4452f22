#!/usr/bin/env bash
# bench/daemon/run.sh: what 'cra serve' costs. Builds cra, starts a daemon
# in a scratch repository and measures
#   - its idle CPU: CPU seconds used over IDLE seconds with nothing to run
#     (Level 1 passes every 5 s, processor ticks every 2 s);
#   - pending → active: from 'cra task add' returning to the task's
#     [agent:active] line, over N tasks (the processor's tick bounds it);
#   - 'cra task list' on 1,000 tasks, whole process.
# With FINISHED > 0 the board first holds that many tasks a person closed
# (bench/daemon/seed), so the idle CPU is that of a board with a history.
# Usage: bench/daemon/run.sh [IDLE=30] [N=10] [FINISHED=0]
set -euo pipefail
idle=${1:-30}
n=${2:-10}
finished=${3:-0}
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT
go build -o "$work/cra" "$root/cmd/cra"
cra="$work/cra"
cd "$work" && mkdir repo && cd repo && git init -q
"$cra" task add warmup >/dev/null
mkdir -p .clean_room
printf '[agents.noop]\ncommand = "true"\n' > .clean_room/config.toml
if [ "$finished" -gt 0 ]; then
  (cd "$root" && go run ./bench/daemon/seed -state "$work/repo/.clean_room" -n "$finished")
fi
"$cra" serve --addr 127.0.0.1:0 >/dev/null 2>&1 &
pid=$!
sleep 3
ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
hz=$(getconf CLK_TCK)
t0=$(ticks); sleep "$idle"; t1=$(ticks)
echo "idle CPU with $finished finished tasks: $(awk -v a="$t0" -v b="$t1" -v hz="$hz" -v s="$idle" 'BEGIN { printf "%.3f CPU s over %d s (%.2f%%)", (b-a)/hz, s, 100*(b-a)/hz/s }')"
total=0
for i in $(seq "$n"); do
  id=$("$cra" task add "task $i" --agent noop)
  start=$(date +%s%N)
  until grep -q "\]\[agent:active\]\[$id\]" .clean_room/world.log; do sleep 0.01; done
  end=$(date +%s%N)
  total=$((total + (end - start) / 1000000))
done
echo "pending → active: mean $((total / n)) ms over $n tasks (tick every 2 s)"
kill -INT "$pid"; wait "$pid" || true
for i in $(seq 1000); do "$cra" task add "bulk $i" >/dev/null; done
s=$(date +%s%N); "$cra" task list >/dev/null; e=$(date +%s%N)
echo "cra task list, $(( $(find .clean_room/tasks -name '*.yaml' | wc -l) )) tasks: $(((e - s) / 1000000)) ms"
