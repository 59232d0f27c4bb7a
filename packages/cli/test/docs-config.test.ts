import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { configProblems } from '../src/config-schema.js';

// The config example users copy from docs/cli.md must pass the schema the CLI enforces: a key
// documented there but refused by the schema (or renamed in one place only) fails here.
function documentedConfig(): unknown {
  const page = readFileSync(new URL('../../../docs/cli.md', import.meta.url), 'utf8');
  const block = /## Config \(`ragfresh\.config\.ts`\)\n```ts\n([\s\S]*?)```/.exec(page)?.[1];
  if (block === undefined) throw new Error('docs/cli.md has no config example block');
  const literal = block
    .split('\n')
    .filter((l) => !l.startsWith('import '))
    .join('\n')
    .replace(/^export default defineConfig\(/m, '(')
    .replace(/\);\s*$/, ')');
  // The example is an object literal with comments (JavaScript, no TypeScript syntax).
  return new Function(`return ${literal};`)();
}

describe('docs/cli.md config example', () => {
  it('is a config the schema accepts, key for key', () => {
    const config = documentedConfig() as Record<string, unknown>;
    expect(Object.keys(config)).toContain('sources');
    expect(configProblems(config)).toEqual([]);
  });
});
