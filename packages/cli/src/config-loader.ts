import { registerHooks } from 'node:module';
import { pathToFileURL } from 'node:url';

// A config must load wherever the user runs the CLI, not only inside a project that installed
// `ragfresh` itself:
// - `import { defineConfig } from 'ragfresh/config'` resolves to this CLI's own package, so a
//   config works in an empty folder with `npx ragfresh` (and never mixes two copies);
// - a `.ts` config is TypeScript ESM whatever the folder's package.json says: `npm init -y`
//   writes `"type": "commonjs"`, under which Node would read `import` as a syntax error.
// Module hooks (`module.registerHooks`, Node >= 22.15) do both, in this thread, before the import.

const configUrls = new Set<string>();
let installed = false;

function ownResolution(specifier: string): string | undefined {
  try {
    return import.meta.resolve(specifier);
  } catch {
    return undefined;
  }
}

function install(): void {
  if (installed) return;
  installed = true;
  registerHooks({
    resolve(specifier, context, nextResolve) {
      const parent = context.parentURL ?? '';
      if (
        (specifier === 'ragfresh' || specifier.startsWith('ragfresh/')) &&
        !parent.includes('/node_modules/')
      ) {
        const url = ownResolution(specifier);
        if (url !== undefined) return { url, shortCircuit: true };
      }
      const resolved = nextResolve(specifier, context);
      if (configUrls.has(resolved.url) && resolved.url.endsWith('.ts'))
        return { ...resolved, format: 'module-typescript' };
      return resolved;
    },
  });
}

/** Imports a `.ts` / `.mjs` / `.js` config file with the hooks above. */
export async function importConfigModule(file: string): Promise<{ default?: unknown }> {
  const url = pathToFileURL(file).href;
  configUrls.add(url);
  install();
  return (await import(url)) as { default?: unknown };
}
