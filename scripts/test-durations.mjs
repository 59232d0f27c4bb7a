// Writes scripts/test-durations.json from one or more vitest JSON reports of full runs:
//   npx -y pnpm@10 exec vitest run --reporter=json --outputFile=/tmp/v1.json
//   (again, as often as you like, to /tmp/v2.json ...)
//   ./node_modules/.bin/node scripts/test-durations.mjs /tmp/v1.json /tmp/v2.json
// Each file's seconds are the mean over the reports that ran it, so one run under load does not
// reorder the table. A report may come from another checkout (a fresh-clone CI directory):
// paths are taken from the workspace folder on. The table is only an order (vitest.config.ts
// starts the longest files first, so neither worker is left with a long file at the end);
// nothing asserts a time.
//   --out FILE   write somewhere else (default scripts/test-durations.json)
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { isAbsolute, relative, resolve, sep } from 'node:path';

const root = resolve(import.meta.dirname, '..');
// The same folders vitest.config.ts includes; a test file's path inside the repo starts here.
const IN_REPO =
  /(?:^|\/)((?:packages|connectors|examples)\/[^/]+\/test\/.+|(?:conformance|emulators)\/test\/.+)$/;

function fail(message) {
  process.stderr.write(`test-durations: ${message}\n`);
  process.exit(2);
}

const args = process.argv.slice(2);
let out = resolve(root, 'scripts/test-durations.json');
const reports = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--out') {
    if (args[i + 1] === undefined) fail('--out needs a file path');
    out = resolve(args[++i]);
  } else reports.push(args[i]);
}
if (reports.length === 0) {
  fail('usage: node scripts/test-durations.mjs <vitest-json-report> [<report> ...] [--out FILE]');
}

function repoPath(name, report) {
  const posix = name.split(sep).join('/');
  if (isAbsolute(name)) {
    const inside = relative(root, name);
    if (!inside.startsWith('..')) return inside.split(sep).join('/');
  }
  const match = IN_REPO.exec(posix);
  if (match === null) fail(`${report}: ${name} is not under a test folder of this workspace`);
  return match[1];
}

// Read every report before writing anything: a bad one leaves the table as it was.
const seconds = new Map();
for (const report of reports) {
  let parsed;
  try {
    parsed = JSON.parse(readFileSync(report, 'utf8'));
  } catch (error) {
    fail(
      `${report}: ${error instanceof Error ? error.message : String(error)}; pass vitest's --reporter=json output`,
    );
  }
  if (!Array.isArray(parsed?.testResults) || parsed.testResults.length === 0) {
    fail(`${report}: no testResults; pass the file vitest wrote with --reporter=json --outputFile`);
  }
  const seen = new Set();
  for (const file of parsed.testResults) {
    if (
      typeof file?.name !== 'string' ||
      !Number.isFinite(file.startTime) ||
      !Number.isFinite(file.endTime)
    ) {
      fail(
        `${report}: a test result without name, startTime and endTime; is this a vitest JSON report?`,
      );
    }
    const path = repoPath(file.name, report);
    if (seen.has(path)) fail(`${report}: ${path} appears twice`);
    seen.add(path);
    const list = seconds.get(path) ?? [];
    list.push((file.endTime - file.startTime) / 1000);
    seconds.set(path, list);
  }
}

const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
const rows = [...seconds]
  .map(([path, xs]) => [path, Math.round(mean(xs) * 10) / 10])
  .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
const tmp = `${out}.${process.pid}.tmp`;
writeFileSync(tmp, `${JSON.stringify(Object.fromEntries(rows), null, 2)}\n`);
renameSync(tmp, out);

const partial = [...seconds.values()].filter((xs) => xs.length < reports.length).length;
process.stdout.write(
  `${rows.length} files from ${reports.length} report${reports.length === 1 ? '' : 's'} written to ${relative(process.cwd(), out) || out}` +
    (partial > 0
      ? ` (${partial} not in every report: averaged over the reports that ran them)`
      : '') +
    '\n',
);
if (reports.length > 1) {
  // The files whose runs disagree most, so a reader sees which entries are load-sensitive.
  const spread = [...seconds]
    .filter(([, xs]) => xs.length > 1)
    .map(([path, xs]) => [path, Math.min(...xs), Math.max(...xs)])
    .sort((a, b) => b[2] - b[1] - (a[2] - a[1]))
    .slice(0, 5);
  for (const [path, lo, hi] of spread) {
    process.stdout.write(`  ${path}: ${lo.toFixed(1)}–${hi.toFixed(1)} s\n`);
  }
}
