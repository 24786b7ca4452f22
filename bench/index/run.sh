#!/usr/bin/env bash
# Benchmarks 'cra index' on a checkout outside the project, against
# universal-ctags on the same tree.
#
#   bench/index/run.sh /path/to/checkout [more checkouts...]
#
# For each checkout it reports: full index wall time, files/s, peak RSS,
# curated/raw DB sizes; a re-run with no change; a re-run after changing one
# file (parse + the git step, which is "up to date" as HEAD did not move)
# and after restoring it; a full index without git history (the work ctags
# does); and 'ctags -R' wall time for a ratio. Needs /usr/bin/time (GNU time) and
# universal-ctags (apt-get install -y time universal-ctags).
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
go build -o "$out/cra" "$here/cmd/cra"

secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b - a) / 1e9 }'; }

measure() { # measure LABEL CMD... ; prints wall seconds and peak RSS (MiB)
  local label=$1; shift
  local t0 t1
  t0=$(date +%s%N)
  /usr/bin/time -f '%M' -o "$out/rss" "$@" >"$out/stdout" 2>"$out/stderr"
  t1=$(date +%s%N)
  printf '%-28s %8ss  peak RSS %6.0f MiB\n' "$label" "$(secs "$t0" "$t1")" "$(awk '{print $1/1024}' "$out/rss")"
  tail -n 1 "$out/stdout" | cut -c1-200 | sed 's/^/    /'
}

for repo in "$@"; do
  repo=$(cd "$repo" && pwd)
  echo "== $repo ($(git -C "$repo" ls-files | wc -l) tracked files, $(git -C "$repo" rev-list --count HEAD) commits)"
  rm -rf "$repo/.clean_room"
  measure "cra index (full)" "$out/cra" index "$repo"
  files=$(sed -n 's/^indexed \([0-9]*\) files.*/\1/p' "$out/stdout")
  echo "    DB sizes: curated $(du -h "$repo/.clean_room/curated.sqlite" | cut -f1), raw $(du -h "$repo/.clean_room/raw.sqlite" | cut -f1) (+WAL $(du -ch "$repo"/.clean_room/*-wal 2>/dev/null | tail -1 | cut -f1))"
  measure "cra index (no change)" "$out/cra" index "$repo"
  target=$(git -C "$repo" ls-files '*.py' '*.go' '*.ts' '*.js' | awk 'NR <= 200 { t = $0 } END { print t }')
  cp "$repo/$target" "$out/saved"
  printf '\n# touched by bench\n' >>"$repo/$target"
  measure "cra index (1 file changed)" "$out/cra" index "$repo"
  cp "$out/saved" "$repo/$target"
  measure "cra index (file restored)" "$out/cra" index "$repo"
  rm -rf "$repo/.clean_room"
  measure "cra index (no history)" "$out/cra" index "$repo" --history-depth 0
  rm -f "$out/tags"
  t0=$(date +%s%N)
  (cd "$repo" && ctags -R -f "$out/tags" --exclude=.git --exclude=.clean_room . 2>/dev/null)
  t1=$(date +%s%N)
  printf '%-28s %8ss  (%s tags)\n' "ctags -R" "$(secs "$t0" "$t1")" "$(grep -vc '^!' "$out/tags")"
  rm -rf "$repo/.clean_room"
  echo "    files indexed: $files"
done
