import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createConnector, resolveConfig } from '../src/index.js';

// The CLI names no store's options: the resolved `connector` is what the config wrote, and the
// package's createConnector(options, context) applies its defaults when the connector is built.
const ok = {
  userAgent: 'bot/1.0 (+https://example.org/bot)',
  sources: [{ id: 'docs', urls: ['https://docs.example.org/a'] }],
};

describe("connector options are the package factory's business", () => {
  const dir = mkdtempSync(join(tmpdir(), 'ragfresh-cli-connectors-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('the resolved connector is the config as written (lancedb when omitted)', () => {
    expect(resolveConfig(ok, dir).connector).toEqual({ store: 'lancedb' });
    expect(resolveConfig({ ...ok, connector: { store: 'memory' } }, dir).connector).toEqual({
      store: 'memory',
    });
  });

  it("the default builds LanceDB's connector with the package's table and path", async () => {
    const config = resolveConfig(ok, dir);
    const connector = await createConnector(config.connector, {
      dataDir: config.dataDir,
      baseDir: config.configDir,
    });
    expect(connector.capabilities.store).toBe('lancedb');
    expect((connector as unknown as { tableName: string }).tableName).toBe('ragfresh');
    await connector.close();
  });
});
