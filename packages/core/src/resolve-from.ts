import { registerHooks } from 'node:module';

const PROBE = 'ragfresh-resolve-from:probe';

/**
 * Resolves `specifier` as an ordinary ESM `import` written in `parentURL` would (package
 * exports, `import` conditions, node_modules lookup from that folder up) — never through
 * NODE_PATH or a package manager's hidden hoist folder. `import.meta.resolve` takes no parent
 * without a flag, so a one-shot resolve hook answers a probe with the default resolution.
 */
export function resolveFrom(specifier: string, parentURL: string): string {
  let url: string | undefined;
  const hooks = registerHooks({
    resolve(spec, context, nextResolve) {
      if (spec !== PROBE) return nextResolve(spec, context);
      url = nextResolve(specifier, { ...context, parentURL }).url;
      return { url: 'data:text/javascript,', shortCircuit: true };
    },
  });
  try {
    import.meta.resolve(PROBE);
  } finally {
    hooks.deregister();
  }
  if (url === undefined) throw new Error(`could not resolve ${specifier} from ${parentURL}`);
  return url;
}

/**
 * The packages a store name stands for, in the order they are tried: the project's own
 * `@ragfresh/connector-<store>`, then a third party's `ragfresh-connector-<store>`. The open
 * registry convention shared by the CLI (`connector: { store }`) and `ragfresh-conformance`.
 */
export function connectorPackages(store: string): readonly [string, string] {
  return [`@ragfresh/connector-${store}`, `ragfresh-connector-${store}`];
}
