#!/bin/sh
# Runs each store's conformance suite with --json into conformance/reports/<store>.json, one
# store at a time (the machine is shared), then rewrites the README table from the reports.
# usage: conformance/scripts/reports.sh [store ...]   (default: the stores that run here unaided)
set -eu
cd "$(dirname "$0")/../.."
node=./node_modules/.bin/node
stores=${*:-memory libsql langchain pgvector}
status=0
for s in $stores; do
  echo "== conformance --store $s"
  if ! $node conformance/dist/cli.js --store "$s" --json "conformance/reports/$s.json" >"/tmp/ragfresh-conformance-$s.txt" 2>&1; then
    echo "   $s: a case failed or the target did not start (the report records which); see /tmp/ragfresh-conformance-$s.txt"
    status=1
  fi
  tail -n 2 "/tmp/ragfresh-conformance-$s.txt" | head -n 1
done
# The reports are committed: keep them in the repo's format so a rerun diffs only what changed.
npx -y pnpm@10 exec biome format --write conformance/reports >/dev/null
$node conformance/scripts/stores-table.mjs
exit $status
