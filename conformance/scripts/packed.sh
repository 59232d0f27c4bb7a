#!/usr/bin/env bash
# Acceptance (issue 16): libSQL and the LangChain tier pass `ragfresh-conformance` from a
# scratch folder outside the repo that installs the packed packages, not only from the repo root.
#   1. `pnpm pack` core, conformance, connector-memory, connector-libsql, connector-langchain
#      (workspace: specifiers become versions, as `pnpm publish` writes them);
#   2. in an empty folder under /tmp, `npm install` the tarballs and the LangChain classes the
#      fixtures read with (@langchain/core, /community, /classic at the lockfile's versions);
#   3. `ragfresh-conformance --store libsql` and `--store langchain` from that folder, with
#      --json; every case must pass (exit 0), and the libsql report must have run the
#      langchain-reader case (LibSQLVectorStore read what the connector wrote).
# Needs a built tree (`pnpm run build`). Slow (an npm install): a CI step, called by .ci/run.
# REPORTS_DIR=<dir> keeps the two JSON reports.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
export PATH="$repo/node_modules/.bin:$PATH"   # node 22 for npm and the installed CLI
work="$(mktemp -d /tmp/ragfresh-packed-conformance.XXXXXX)"
trap 'rm -rf "$work"' EXIT
fail() { echo "packed conformance: $*" >&2; exit 1; }

echo "-- pack into $work/tarballs"
mkdir -p "$work/tarballs"
for d in packages/core conformance connectors/memory connectors/libsql connectors/langchain; do
  (cd "$repo/$d" && npx -y pnpm@10 pack --pack-destination "$work/tarballs" >/dev/null)
done
tgz() { ls "$work"/tarballs/"$1"-[0-9]*.tgz; }

echo "-- npm install the tarballs into an empty folder outside the repo"
app="$work/app"
mkdir -p "$app" && cd "$app"
npm init -y >/dev/null
npm install --no-audit --no-fund --loglevel=error \
  "$(tgz ragfresh-core)" "$(tgz ragfresh-conformance)" "$(tgz ragfresh-connector-memory)" \
  "$(tgz ragfresh-connector-libsql)" "$(tgz ragfresh-connector-langchain)" \
  @langchain/core@1.4.0 @langchain/community@1.1.29 @langchain/classic@1.0.50
case "$(node -p 'require.resolve("@ragfresh/core")')" in
  "$app"/*) ;;
  *) fail "@ragfresh/core does not resolve inside $app" ;;
esac

status=0
for store in libsql langchain; do
  echo "-- ragfresh-conformance --store $store (from $app)"
  if npx ragfresh-conformance --store "$store" --json "$work/$store.json" >"$work/$store.txt" 2>&1; then
    tail -n 2 "$work/$store.txt" | head -n 1
  else
    cat "$work/$store.txt"
    echo "packed conformance: --store $store failed" >&2
    status=1
  fi
done
[ "$status" = 0 ] || exit 1
node -e '
  const r = require(process.argv[1]);
  const c = r.cases.find((x) => x.id === "langchain-reader");
  if (!c || c.status !== "passed") { console.error("libsql: langchain-reader did not run and pass"); process.exit(1); }
  const o = c.observations;
  console.log(`libsql langchain-reader: ${o["retired-stored-epoch-found"]}/${o.currentChunks} with retired duplicates stored, ${o["retired-deleted-epoch-found"]}/${o.currentChunks} after they were deleted`);
' "$work/libsql.json"
if [ -n "${REPORTS_DIR:-}" ]; then mkdir -p "$REPORTS_DIR" && cp "$work"/libsql.json "$work"/langchain.json "$REPORTS_DIR"/; fi
echo "packed conformance: ok (libsql, langchain from packed packages outside the repo)"
