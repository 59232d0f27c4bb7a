// Writes scripts/test-durations.json from a vitest JSON report of a full run:
//   npx -y pnpm@10 exec vitest run --reporter=json --outputFile=/tmp/v.json
//   ./node_modules/.bin/node scripts/test-durations.mjs /tmp/v.json
// The table is only an order (vitest.config.ts starts the longest files first, so neither
// worker is left with a long file at the end); nothing asserts a time.
import { readFileSync, writeFileSync } from 'node:fs';
import { relative, resolve } from 'node:path';

const report = process.argv[2];
if (report === undefined) {
  process.stderr.write('usage: node scripts/test-durations.mjs <vitest-json-report>\n');
  process.exit(2);
}
const root = resolve(import.meta.dirname, '..');
const { testResults } = JSON.parse(readFileSync(report, 'utf8'));
const rows = testResults
  .map((f) => [relative(root, f.name), Math.round((f.endTime - f.startTime) / 100) / 10])
  .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
const out = resolve(root, 'scripts/test-durations.json');
writeFileSync(out, `${JSON.stringify(Object.fromEntries(rows), null, 2)}\n`);
process.stdout.write(`${rows.length} files written to ${relative(process.cwd(), out)}\n`);
