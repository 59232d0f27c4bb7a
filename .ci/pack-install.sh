#!/usr/bin/env bash
# The packed-tarball install test: what a user gets from a registry, without a registry.
#   1. `pnpm pack` every publishable package into a temp folder (workspace:/catalog: specifiers
#      become versions, exactly as `pnpm publish` would write them);
#   2. publint and @arethetypeswrong/cli on every tarball;
#   3. in an empty folder, `npm init -y` and `npm install` the tarballs the CLI needs (not the
#      optional @ragfresh/queue: BullMQ and ioredis stay out; `ragfresh worker` says what to install);
#   4. `npx ragfresh init`, point the config at a loopback site, `refresh`, `status`, `query`,
#      a second `refresh` (all 304), `refresh` on `connector: { store: 'libsql' }` (open
#      registry, resolved from this folder) and `ragfresh-conformance --store memory`.
# Needs a built tree (`pnpm run build`). Runs Node 22 from the repo's pinned devDependency.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
export PATH="$repo/node_modules/.bin:$PATH"   # node 22 for npm/npx and the installed CLI
work="$(mktemp -d /tmp/ragfresh-pack.XXXXXX)"
site_pid=""
cleanup() { [ -n "$site_pid" ] && kill "$site_pid" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
step() { printf -- '-- %s\n' "$*"; }
fail() { echo "pack-install: $*" >&2; exit 1; }

step "pack every publishable package into $work/tarballs"
mkdir -p "$work/tarballs"
mapfile -t dirs < <(cd "$repo" && npx -y pnpm@10 -r ls --depth -1 --json |
  node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{for(const p of JSON.parse(s)) if(!p.private && p.path!==process.cwd()) console.log(p.path)})')
[ "${#dirs[@]}" -ge 12 ] || fail "found only ${#dirs[@]} publishable packages"
for d in "${dirs[@]}"; do
  (cd "$d" && npx -y pnpm@10 pack --pack-destination "$work/tarballs" >/dev/null)
done
ls "$work/tarballs"

step "publint and attw on every tarball"
for t in "$work"/tarballs/*.tgz; do
  x="$work/unpacked/$(basename "$t" .tgz)"
  mkdir -p "$x" && tar -xzf "$t" -C "$x"
done
if [ "${PACK_SKIP_LINT:-}" = 1 ]; then
  echo "skipped (PACK_SKIP_LINT=1)"
else
  npm install --prefix "$work/tools" --no-save --no-audit --no-fund --loglevel=error \
    publint@0.3.25 @arethetypeswrong/cli@0.18.5 >/dev/null
  for t in "$work"/tarballs/*.tgz; do
    x="$work/unpacked/$(basename "$t" .tgz)"
    "$work/tools/node_modules/.bin/publint" --strict --pack false "$x/package" >"$x.publint" 2>&1 ||
      { cat "$x.publint"; fail "publint: $(basename "$t")"; }
    "$work/tools/node_modules/.bin/attw" --profile esm-only --format ascii "$t" >"$x.attw" 2>&1 ||
      { cat "$x.attw"; fail "attw: $(basename "$t")"; }
  done
  echo "publint + attw clean on $(ls "$work"/tarballs/*.tgz | wc -l) tarballs"
fi

step "npm install the tarballs into an empty folder"
# The tarballs of ragfresh, the libSQL connector and the conformance CLI, with every workspace
# package they depend on (read from the packed package.json files, so a new one is never missed).
mapfile -t install < <(node -e '
  const fs = require("node:fs"), path = require("node:path");
  const dir = process.argv[1];
  const byName = new Map();
  for (const d of fs.readdirSync(path.join(dir, "unpacked"))) {
    const pj = path.join(dir, "unpacked", d, "package", "package.json");
    if (!fs.existsSync(pj)) continue;
    const p = JSON.parse(fs.readFileSync(pj, "utf8"));
    byName.set(p.name, { tgz: path.join(dir, "tarballs", d + ".tgz"), p });
  }
  const want = ["ragfresh", "@ragfresh/connector-libsql", "@ragfresh/conformance"];
  const seen = new Set();
  while (want.length > 0) {
    const name = want.pop();
    if (seen.has(name) || !byName.has(name)) continue;
    seen.add(name);
    const { p } = byName.get(name);
    for (const dep of Object.keys({ ...p.dependencies, ...p.peerDependencies }))
      if (byName.has(dep) && (p.dependencies?.[dep] !== undefined || dep === "@ragfresh/core")) want.push(dep);
  }
  for (const name of seen) console.log(byName.get(name).tgz);' "$work")
[ "${#install[@]}" -ge 8 ] || fail "dependency closure has only ${#install[@]} tarballs"
app="$work/app"
mkdir -p "$app" && cd "$app"
npm init -y >/dev/null
npm install --no-audit --no-fund --loglevel=error "${install[@]}"

step "single-process install: no @ragfresh/queue, BullMQ or ioredis (an optional peer of ragfresh)"
for p in @ragfresh/queue bullmq ioredis; do
  [ ! -e "node_modules/$p" ] || fail "npm install ragfresh installed $p; it must stay an optional peer"
done
code=0
npx ragfresh worker >"$work/worker.out" 2>"$work/worker.err" || code=$?
cat "$work/worker.err"
[ "$code" = 2 ] || fail "ragfresh worker without @ragfresh/queue exited $code, not 2"
[ "$(wc -l <"$work/worker.err")" = 1 ] && grep -q 'npm install @ragfresh/queue' "$work/worker.err" ||
  fail "ragfresh worker without @ragfresh/queue did not say in one line what to install"

step "loopback site"
# The node binary itself, not node_modules/.bin/node (a shell wrapper that runs node as its
# child): $! must be the server's pid, or the cleanup kills the wrapper and leaves it running.
"$(node -p process.execPath)" "$repo/.ci/loopback-site.mjs" >"$work/site.url" &
site_pid=$!
for _ in $(seq 1 50); do [ -s "$work/site.url" ] && break; sleep 0.1; done
site="$(cat "$work/site.url")"
[ -n "$site" ] || fail "the loopback site did not start"
hostport="${site#http://}"

step "npx ragfresh init, then point the config at $site"
npx ragfresh init
[ -f ragfresh.config.ts ] || fail "init wrote no ragfresh.config.ts"
node -e '
  const fs = require("node:fs");
  const [site, hostport] = process.argv.slice(1);
  let c = fs.readFileSync("ragfresh.config.ts", "utf8");
  c = c.replace(/https:\/\/docs\.example\.org/g, site)
       .replace(/(deletion: \{)/, `fetch: { allow: [${JSON.stringify(hostport)}], minIntervalMs: 0 },\n  $1`);
  fs.writeFileSync("ragfresh.config.ts", c);' "$site" "$hostport"
grep -q "$site/sitemap.xml" ragfresh.config.ts || fail "could not point the config at the site"

run() { printf '$ ragfresh %s\n' "$*"; npx ragfresh "$@"; }
run refresh --all | tee "$work/refresh1.txt"
grep -Eq 'docs +complete +3 +3 +0 +3' "$work/refresh1.txt" || fail "first refresh did not publish 3 pages"
run status; # exit 0: every source fresh
run query "how much does the team plan cost" -k 1 | tee "$work/query.txt"
grep -q '12 euros a seat' "$work/query.txt" || fail "query did not return the pricing page"
run refresh --all | tee "$work/refresh2.txt"
grep -Eq 'docs +complete +3 +0 +3(\+[0-9]+)? +0' "$work/refresh2.txt" || fail "second refresh was not all 304"

step "connector: { store: 'libsql' } through the open registry"
mkdir -p "$app/libsql" && cd "$app/libsql"
sed -e "s#// connector: { store: 'chroma'.*#connector: { store: 'libsql', url: 'file:index.db' },#" \
  ../ragfresh.config.ts >ragfresh.config.ts
grep -q "store: 'libsql'" ragfresh.config.ts || fail "could not set the libsql connector"
run refresh --all | tee "$work/refresh-libsql.txt"
grep -Eq 'docs +complete +3 +3 +0 +3' "$work/refresh-libsql.txt" || fail "libsql refresh did not publish 3 pages"
run query "how much does the team plan cost" -k 1 | grep -q '12 euros a seat' || fail "libsql query"
cd "$app"

step "ragfresh-conformance --store memory, resolved from this folder"
npx ragfresh-conformance --store memory >"$work/conformance.txt" 2>&1 ||
  { cat "$work/conformance.txt"; fail "conformance --store memory"; }
tail -n 3 "$work/conformance.txt"
echo "pack-install: ok"
