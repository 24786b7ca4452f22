#!/bin/sh
# heldout.sh CLONES [harness flags...]: the held-out retrieval sets.
#
# Draws 60 commits each from clones of click, gin, astroid, marshmallow and
# pydicom in CLONES (directories named click, gin, astroid, marshmallow,
# pydicom), and from hono (TypeScript) and express (JavaScript) when CLONES
# has them, leaving out the commits of ../shared/eval's sets, and runs the
# harness on them. The sets depend on each clone's HEAD; the README's
# numbers were taken at click 2c8cd3ac, gin dcaa4296, astroid 94b7090f,
# marshmallow 341b927f, pydicom fb1f24e4f0, hono 28a9c128, express
# a3714473.
set -eu
clones=${1:?usage: heldout.sh CLONES [harness flags...]}
shift
eval_dir=${EVAL_DIR:-../shared/eval}
sets=$(mktemp -d)
trap 'rm -rf "$sets"' EXIT
go build -o "$sets/mkset" ./bench/retrieval/mkset
args=""
for spec in click=pallets/click gin=gin-gonic/gin astroid=pylint-dev/astroid \
	marshmallow=marshmallow-code/marshmallow pydicom=pydicom/pydicom \
	'hono=honojs/hono?' 'express=expressjs/express?'; do
	dir=${spec%%=*} name=${spec#*=}
	case $name in
	*\?)
		# Optional: only when the clone is there.
		name=${name%\?}
		[ -d "$clones/$dir" ] || continue
		;;
	esac
	exclude=""
	if [ -f "$eval_dir/commits_$dir.jsonl" ]; then
		exclude="-exclude $eval_dir/commits_$dir.jsonl"
	fi
	# shellcheck disable=SC2086
	"$sets/mkset" -repo "$clones/$dir" -name "$name" -n 60 $exclude > "$sets/$dir.jsonl"
	args="$args -set $sets/$dir.jsonl -repo $clones/$dir"
done
# shellcheck disable=SC2086
go run ./bench/retrieval -strip-scope=false $args "$@"
