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
#   4. `ragfresh-conformance init acme` in a folder outside the repo: no .changeset, the
#      README's `npm install -D <tarballs>` line installs (with the registry's typescript,
#      vitest, @types/node), `npm run build` passes, and `--store .` fails naming `_open`.
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

echo "-- a connector scaffolded outside the repo installs the tarballs its README names, builds and runs its suite"
author="$work/author"
mkdir -p "$author"
(cd "$author" && "$app/node_modules/.bin/ragfresh-conformance" init acme >/dev/null)
pkg="$author/connector-acme"
[ ! -e "$author/.changeset" ] && [ ! -e "$pkg/.changeset" ] || fail "the scaffold wrote a .changeset outside a repo"
# The README's own install line, with this run's tarball folder for /tmp/ragfresh-tarballs.
install_line="$(grep -m1 '^npm install -D ' "$pkg/README.md")" || fail "the scaffold README names no tarballs"
(cd "$pkg" && eval "${install_line//\/tmp\/ragfresh-tarballs/$work/tarballs} --no-audit --no-fund --loglevel=error") ||
  fail "installing the scaffold's dependencies failed: $install_line"
(cd "$pkg" && npm run build >/dev/null) || fail "the scaffold does not build outside the repo"
set +e
(cd "$pkg" && npx ragfresh-conformance --store . --cases sentinel-empty >"$work/acme.txt" 2>&1)
acme=$?
set -e
# A fresh scaffold fails the suite (exit 1) naming the first hook to write.
[ "$acme" = 1 ] && grep -q '_open is not written yet' "$work/acme.txt" ||
  { cat "$work/acme.txt"; fail "the scaffold's suite did not fail naming _open (exit $acme)"; }
echo "scaffold: installed from the named tarballs, built, suite fails naming _open as it should"
echo "packed conformance: ok (libsql, langchain from packed packages outside the repo; a scaffold outside it)"
