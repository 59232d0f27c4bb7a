// Issue 31 item 9: installing @ragfresh/connector-qdrant or -pinecone does not install
// @ragfresh/emulators; their `./fixture` loads it only to start a container or the emulator,
// and says in one line what to install when it is missing. The missing package is simulated with
// a module-resolution hook in a child process running the built fixtures.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '../..');
const dir = mkdtempSync(join(tmpdir(), 'rf-fixture-peer-'));
writeFileSync(
  join(dir, 'hooks.mjs'),
  `export async function resolve(specifier, context, next) {
  if (specifier === '@ragfresh/emulators') {
    const err = new Error(\`Cannot find package '@ragfresh/emulators' imported from \${context.parentURL}\`);
    err.code = 'ERR_MODULE_NOT_FOUND';
    throw err;
  }
  return next(specifier, context);
}`,
);
writeFileSync(
  join(dir, 'without.mjs'),
  "import { register } from 'node:module';\nregister('./hooks.mjs', import.meta.url);\n",
);
writeFileSync(
  join(dir, 'start.mjs'),
  `const { fixture } = await import(process.argv[2]);
try {
  const t = await fixture.start();
  console.log('started', t.kind);
  await t.stop();
} catch (err) {
  console.log('failed', err.code, err.message);
}`,
);

function start(connector: string, withoutEmulators: boolean): string {
  const fixture = pathToFileURL(join(root, connector, 'dist/fixture.js')).href;
  return execFileSync(
    process.execPath,
    [
      ...(withoutEmulators ? ['--import', pathToFileURL(join(dir, 'without.mjs')).href] : []),
      join(dir, 'start.mjs'),
      fixture,
    ],
    { encoding: 'utf8' },
  ).trim();
}

describe.each(['qdrant', 'pinecone'])('@ragfresh/connector-%s and @ragfresh/emulators', (name) => {
  it('is an optional peer (and a dev dependency), never a dependency', () => {
    const pkg = JSON.parse(readFileSync(join(root, name, 'package.json'), 'utf8')) as Record<
      string,
      Record<string, unknown>
    >;
    expect(pkg.dependencies?.['@ragfresh/emulators']).toBeUndefined();
    expect(pkg.peerDependencies?.['@ragfresh/emulators']).toBeDefined();
    expect(pkg.peerDependenciesMeta?.['@ragfresh/emulators']).toEqual({ optional: true });
  });

  it('the fixture starts the emulator when the package is there, and fails with one line naming it when not', () => {
    expect(start(name, false)).toBe('started emulator');
    const missing = start(name, true);
    expect(missing.split('\n')).toHaveLength(1);
    expect(missing).toMatch(
      new RegExp(
        `^failed NOT_SUPPORTED .*@ragfresh/connector-${name}/fixture .*@ragfresh/emulators, which is not installed; install it \\(npm install -D @ragfresh/emulators\\)`,
      ),
    );
  });
});
