import { describe, expect, it } from 'vitest';
import { loadReports, table } from '../scripts/stores-table.mjs';

describe('README guarantees table (conformance/scripts/stores-table.mjs)', () => {
  const [memory] = loadReports().filter((r) => r.store === 'memory');

  it("names a third party's package and version beside its store, from the report's connector", () => {
    const theirs = {
      ...memory!,
      store: 'acme',
      connector: { package: 'ragfresh-connector-acme', version: '1.2.0' },
    };
    const row = table([theirs]).split('\n')[2]!;
    expect(row).toMatch(
      /^\| `acme` \(ragfresh-connector-acme 1\.2\.0\) \| embedded \| snapshot ✓ \|/,
    );
  });

  it("control: the project's own packages (and reports without a connector) show the store alone", () => {
    const ours = {
      ...memory!,
      connector: { package: '@ragfresh/connector-memory', version: '0.1.0' },
    };
    const { connector: _none, ...older } = memory!;
    for (const r of [ours, older])
      expect(table([r]).split('\n')[2]).toMatch(/^\| `memory` \| embedded \|/);
  });
});
