/**
 * `ragfresh-conformance init <store>`: a connector package that builds and fails the suite,
 * naming the first hook still to write, until its hooks are written. Templates are plain
 * strings so the output is easy to read and diff; see docs/connectors/authoring.md.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { resolveFrom } from '@ragfresh/core';
import { packageOf } from './fixture-module.js';
import { SUITE_VERSION } from './suite.js';

export interface ScaffoldOptions {
  /** Store name: lower-case letters, digits and '-' (`mystore`). */
  readonly store: string;
  /** Folder to create; default `./connector-<store>` under the current directory. */
  readonly dir?: string;
  /**
   * Package name. Default `ragfresh-connector-<store>` (the convention outside the project);
   * `@ragfresh/connector-<store>` inside it (the name the conformance CLI resolves today).
   */
  readonly packageName?: string;
  /** Version range written for `@ragfresh/core` (default `^<installed core version>`; `workspace:^` in the monorepo). */
  readonly coreRange?: string;
  /** Version written for `@ragfresh/conformance` (default: this suite's exact version, pinned). */
  readonly conformanceRange?: string;
  /**
   * Where the changeset goes; default the nearest `.changeset/` folder above (a monorepo that
   * uses changesets). Outside one, no changeset is written.
   */
  readonly changesetDir?: string;
}

export interface ScaffoldResult {
  readonly dir: string;
  readonly packageName: string;
  /** The ragfresh packages to install from tarballs until they are published. */
  readonly tarballs: readonly { readonly name: string; readonly version: string }[];
  /** Every file written, absolute paths. */
  readonly files: readonly string[];
}

/** Every abstract hook of `Connector`, in the order the suite first reaches them. */
export const SCAFFOLD_HOOKS = [
  '_open',
  '_readEpoch',
  '_upsert',
  '_list',
  '_query',
  '_patchValidity',
  '_advanceEpoch',
  '_deleteVersion',
  '_deleteDocuments',
  '_close',
] as const;

const STORE = /^[a-z][a-z0-9-]{0,39}$/;

export function pascalCase(store: string): string {
  return store
    .split('-')
    .filter(Boolean)
    .map((p) => p[0]!.toUpperCase() + p.slice(1))
    .join('');
}

const camel = (store: string): string => {
  const p = pascalCase(store);
  return p[0]!.toLowerCase() + p.slice(1);
};

/** The nearest `.changeset/` folder above `dir`, if a repo there uses changesets. */
function changesetDir(dir: string): string | undefined {
  for (let at = dirname(dir); ; at = dirname(at)) {
    if (existsSync(join(at, '.changeset'))) return join(at, '.changeset');
    if (dirname(at) === at) return undefined;
  }
}

/** name@version of the package holding the module `specifier` resolves to from here. */
function installed(specifier: string): { readonly name: string; readonly version: string } {
  const found = packageOf(fileURLToPath(resolveFrom(specifier, import.meta.url)));
  if (found === undefined) throw new Error(`cannot read the package.json of ${specifier}`);
  return found;
}

/**
 * The unpublished ragfresh packages a scaffold installs from tarballs: core, this suite, and
 * the suite's own ragfresh dependencies, at the versions installed with this suite.
 */
export function scaffoldTarballs(): readonly { readonly name: string; readonly version: string }[] {
  const suite = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
    dependencies?: Record<string, string>;
  };
  const own = Object.keys(suite.dependencies ?? {}).filter(
    (d) => d.startsWith('@ragfresh/') && d !== '@ragfresh/core',
  );
  return [
    installed('@ragfresh/core'),
    { name: '@ragfresh/conformance', version: SUITE_VERSION },
    ...own.map((d) => installed(d)),
  ];
}

/** The folder of a ragfresh package in a clone of the repo (its layout: connectors/, packages/). */
const repoFolder = (name: string): string => {
  const short = name.replace(/^@ragfresh\//, '');
  if (short === 'conformance') return 'conformance';
  return short.startsWith('connector-')
    ? `connectors/${short.slice('connector-'.length)}`
    : `packages/${short}`;
};

/** The file `pnpm pack` writes for name@version. */
const tarballOf = (p: { readonly name: string; readonly version: string }): string =>
  `${p.name.replace(/^@/, '').replace('/', '-')}-${p.version}.tgz`;

/** Shell lines that pack the tarballs in a ragfresh clone and install them here. */
export function tarballSteps(
  tarballs: readonly { readonly name: string; readonly version: string }[],
): readonly string[] {
  return [
    `# in a clone of ragfresh, built (npx -y pnpm@10 install && npx -y pnpm@10 run build):`,
    `for p in ${tarballs.map((t) => repoFolder(t.name)).join(' ')}; do (cd "$p" && npx -y pnpm@10 pack --pack-destination /tmp/ragfresh-tarballs); done`,
    `# in this package:`,
    `npm install -D ${tarballs.map((t) => `/tmp/ragfresh-tarballs/${tarballOf(t)}`).join(' ')}`,
  ];
}

export function scaffoldFiles(
  options: Required<Omit<ScaffoldOptions, 'dir' | 'changesetDir'>>,
  tarballs: readonly { readonly name: string; readonly version: string }[] = scaffoldTarballs(),
): Record<string, string> {
  const { store, packageName, coreRange, conformanceRange } = options;
  const P = pascalCase(store);
  const c = camel(store);
  const notYet = (hook: string, what: string) =>
    `    throw this.error('NOT_SUPPORTED', \`${hook} is not written yet: ${what} (docs/connectors/authoring.md, section 3, ${hook}).\`);`;
  return {
    'package.json': `${JSON.stringify(
      {
        name: packageName,
        version: '0.0.0',
        description: `${store} connector for ragfresh.`,
        type: 'module',
        license: 'Apache-2.0',
        exports: {
          '.': { types: './dist/index.d.ts', default: './dist/index.js' },
          './fixture': { types: './dist/fixture.d.ts', default: './dist/fixture.js' },
        },
        files: ['dist', 'src'],
        scripts: {
          build: 'tsc -p tsconfig.json',
          test: 'vitest run',
          conformance: 'ragfresh-conformance --store .',
        },
        peerDependencies: { '@ragfresh/core': coreRange },
        devDependencies: {
          '@ragfresh/core': coreRange,
          // Exact, never "*" or "^": the report records the suite version, and a newer suite may add cases.
          '@ragfresh/conformance': conformanceRange,
          '@types/node': '^22.18.0',
          typescript: '^5.9.0',
          vitest: '^4.0.0',
        },
      },
      null,
      2,
    )}\n`,
    'tsconfig.json': `${JSON.stringify(
      {
        compilerOptions: {
          target: 'ES2023',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          declaration: true,
          sourceMap: true,
          skipLibCheck: true,
          rootDir: 'src',
          outDir: 'dist',
          types: ['node'],
        },
        include: ['src'],
      },
      null,
      2,
    )}\n`,
    'src/index.ts': `import {
  Connector,
  type ConnectorCapabilitiesInput,
  type ConnectorFactoryContext,
  checkConnectorOptions,
  type ListedChunk,
  type OpenOptions,
  type QueryFilter,
  type QueryHit,
  type StoredChunk,
  type ValidityPatch,
} from '@ragfresh/core';

/** JSON only: crash cases rebuild the connector in a child process from these options. */
export interface ${P}ConnectorOptions {
  /** Where the store is (a URL, a file path...). */
  readonly url: string;
  /** The collection / table / index this connector owns; the fixture gives one per namespace. */
  readonly collection: string;
}

/**
 * The manifest: declare only what the store can honestly guarantee (authoring.md, section 4).
 * The suite reads nothing else. Left-out fields take CAPABILITY_DEFAULTS from @ragfresh/core.
 */
export const ${store.toUpperCase().replace(/-/g, '_')}_CAPABILITIES: ConnectorCapabilitiesInput = {
  store: '${store}',
  // snapshot needs numeric range filters on rf_from / rf_to inside the vector query.
  promotion: 'snapshot',
  // atomic needs a transaction in _patchValidityMany; overlap: set the new flag before clearing the old.
  flagPromotion: 'overlap',
  visibility: { mode: 'immediate' },
  maxWriteBatch: 100,
  epochInStore: true,
  idForm: 'chunk-id',
};

export class ${P}Connector extends Connector {
  readonly options: ${P}ConnectorOptions;

  constructor(options: ${P}ConnectorOptions) {
    super(${store.toUpperCase().replace(/-/g, '_')}_CAPABILITIES);
    this.options = options;
  }

  protected async _open(_options: OpenOptions): Promise<void> {
${notYet('_open', 'create the collection, its vector index of options.dimensions and the epoch pointer at 0 (never reset it)')}
  }

  protected async _readEpoch(): Promise<number> {
${notYet('_readEpoch', 'read the published epoch from the store')}
  }

  protected async _upsert(_chunks: readonly StoredChunk[]): Promise<void> {
${notYet('_upsert', 'insert or overwrite each chunk by id, keeping metadata types')}
  }

  protected async _list(
    _documentId: string,
    _versionId: string | undefined,
    _withEmbeddings: boolean,
  ): Promise<ListedChunk[]> {
${notYet('_list', 'every stored chunk of the document (one version when given), paged through store limits')}
  }

  protected async _query(
    _vector: readonly number[],
    _k: number,
    _filter: QueryFilter,
  ): Promise<QueryHit[]> {
${notYet('_query', 'the k nearest chunks, with the view and scope filtered inside the store')}
  }

  protected async _patchValidity(
    _documentId: string,
    _versionId: string,
    _patch: ValidityPatch,
  ): Promise<void> {
${notYet('_patchValidity', 'set rf_to / rf_current on the chunks of exactly this version')}
  }

  protected async _advanceEpoch(_expected: number, _next: number): Promise<void> {
${notYet('_advanceEpoch', 'compare-and-set the epoch; EPOCH_CONFLICT when the store does not hold expected')}
  }

  protected async _deleteVersion(_documentId: string, _versionId: string): Promise<void> {
${notYet('_deleteVersion', 'delete every chunk of the version; absent is a no-op')}
  }

  protected async _deleteDocuments(_documentIds: readonly string[]): Promise<void> {
${notYet('_deleteDocuments', 'delete every chunk of the documents; absent is a no-op')}
  }

  protected async _close(): Promise<void> {}
}

/** The factory \`connectorSpec\` names: JSON options in, a connector out. */
export function create${P}Connector(options: ${P}ConnectorOptions): ${P}Connector {
  return new ${P}Connector(options);
}

/**
 * The registry factory: a ragfresh config's \`connector: { store: '${store}', ...options }\`.
 * This package owns its defaults and checks its options (authoring.md, section 1).
 */
export function createConnector(
  options: Readonly<Record<string, unknown>>,
  _context: ConnectorFactoryContext,
): ${P}Connector {
  const given = checkConnectorOptions<${P}ConnectorOptions>('${store}', options, {
    url: 'string!',
    collection: 'string',
  });
  return new ${P}Connector({ url: given.url as string, collection: given.collection ?? 'ragfresh' });
}
`,
    'src/fixture.ts': `import type { StoreFixture, StoreTarget } from '@ragfresh/core';
import { create${P}Connector, type ${P}ConnectorOptions } from './index.js';

/**
 * Starts a target for the conformance suite. A missing service must make start() throw,
 * never skip. Each namespace maps to its own collection, so cases never see each other.
 */
export const fixture: StoreFixture = {
  store: '${store}',
  async start(options): Promise<StoreTarget> {
    // TODO: start an embedded store, a local server or a container here, or use options.url.
    const url = options?.url ?? 'memory:';
    const spec = (ns: string): ${P}ConnectorOptions => ({ url, collection: \`rf_\${ns}\` });
    return {
      kind: options?.url === undefined ? 'embedded' : 'url',
      description: \`${store} at \${url} (scaffold: describe the engine, its version and how it started)\`,
      async createConnector(ns) {
        return create${P}Connector(spec(ns));
      },
      connectorSpec(ns) {
        return {
          // Built code, from src/ (under vitest) and from dist/ alike: crash cases run it in a child.
          module: new URL('../dist/index.js', import.meta.url).href,
          exportName: 'create${P}Connector',
          options: { ...spec(ns) },
        };
      },
      async stop() {
        // TODO: stop what start() started.
      },
    };
  },
};
`,
    [`test/${store}.conformance.test.ts`]: `import { runConformanceSuite } from '@ragfresh/conformance';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { fixture } from '../src/fixture.js';

// The whole shared suite; the frozen manifest alone decides what applies. Build first
// (crash cases run dist/ code in a child process). Never filter cases here.
runConformanceSuite({ fixture, runner: { describe, it, beforeAll, afterAll } });
`,
    'README.md': `# ${store} connector (\`${packageName}\`)

Publishes ragfresh chunks into ${store}. Scaffolded by \`ragfresh-conformance init ${store}\`:
every hook still throws "not written yet", so the conformance suite fails naming the first
one. Write them in the order the suite names them, following
[docs/connectors/authoring.md](https://github.com/ragfresh/ragfresh/blob/main/docs/connectors/authoring.md).

\`\`\`ts
import { create${P}Connector } from '${packageName}';

const connector = create${P}Connector({ url: '...', collection: 'docs' });
await connector.open({ dimensions: 1536 });
\`\`\`

Options (all JSON, so a child process can rebuild the same connector from a \`ConnectorSpec\`):

| option       | meaning                                     |
| ------------ | ------------------------------------------- |
| \`url\`        | where the store is                          |
| \`collection\` | the collection / table this connector owns |

Tested against: (engine, version, client library and version, how it ran).

## Stored layout

What one chunk looks like in the store (columns or payload), where the epoch lives, and which
LangChain vector store class reads it.

## Declared capabilities and why

| capability      | value       | why |
| --------------- | ----------- | --- |
| \`promotion\`     | \`snapshot\`  | |
| \`flagPromotion\` | \`overlap\`   | |
| \`visibility\`    | \`immediate\` | |
| \`maxWriteBatch\` | 100         | |
| \`epochInStore\`  | \`true\`      | |
| \`idForm\`        | \`chunk-id\`  | |

### How each verb maps to the store

| verb | store operation | transaction |
| ---- | --------------- | ----------- |
| \`open\` | | |
| \`upsert\` (stage) | | |
| \`patchValidityMany\` / \`patchValidity\` | | |
| \`readEpoch\` / \`advanceEpoch\` | | |
| \`deleteVersions\` / \`deleteDocuments\` | | |
| \`countChunksMany\` / \`listChunksMany\` | | |
| \`query\` | | |

## Reading with LangChain

The class, the epoch filter and the \`rf_current\` filter an application passes, and what the
class's filter syntax supports. Declare \`langchain: { class, recall }\` in the manifest and add
\`langchainReader(namespace)\` to the fixture's target so the suite's \`langchain-reader\` case
measures it.

## Errors

Every error is a \`RagfreshError\` (scope \`${store}\`) with one line naming the fix.

## Fixture and test targets

\`${packageName}/fixture\` exports \`fixture: StoreFixture\`: which target it starts, and
\`start({ url })\` for a running server.

## Install

\`${tarballs.map((t) => `${t.name}@${t.version}`).join('`, `')}\` are not on npm yet: until they are,
pack them in a clone of ragfresh and install the tarballs (npm records them as \`file:\`
dependencies; put the version ranges back once they are published), then install the rest:

\`\`\`sh
${tarballSteps(tarballs).join('\n')}
npm install
\`\`\`

Native dependencies (a store's client with a compiled addon): see the ragfresh
docs/authoring.md, "Native dependencies".

## Tests

\`\`\`
npm run build && npx vitest run
npx ragfresh-conformance --store .   # this package's ./fixture, with a table and --json report
\`\`\`
`,
    '.gitignore': 'node_modules/\ndist/\n',
    [`@changeset/${c}-connector.md`]: `---
'${packageName}': minor
---

New connector for ${store} (scaffolded by \`ragfresh-conformance init ${store}\`).
`,
  };
}

/** Writes the scaffold. Refuses a non-empty target folder (bad input never overwrites good data). */
export function scaffold(options: ScaffoldOptions): ScaffoldResult {
  if (!STORE.test(options.store)) {
    throw new Error(
      `store name ${JSON.stringify(options.store)} is not valid; use lower-case letters, digits and '-', starting with a letter, e.g. init mystore.`,
    );
  }
  const dir = resolve(options.dir ?? `connector-${options.store}`);
  if (existsSync(dir) && readdirSync(dir).length > 0) {
    throw new Error(`${dir} exists and is not empty; choose another --dir or remove it first.`);
  }
  const packageName = options.packageName ?? `ragfresh-connector-${options.store}`;
  const tarballs = scaffoldTarballs();
  const core = tarballs.find((t) => t.name === '@ragfresh/core')!;
  const files = scaffoldFiles(
    {
      store: options.store,
      packageName,
      coreRange: options.coreRange ?? `^${core.version}`,
      conformanceRange: options.conformanceRange ?? SUITE_VERSION,
    },
    tarballs,
  );
  const changesets = options.changesetDir ?? changesetDir(dir);
  const written: string[] = [];
  for (const [name, text] of Object.entries(files)) {
    const changeset = name.startsWith('@changeset/');
    // Outside a repo that uses changesets there is nowhere for one to go: none is written.
    if (changeset && changesets === undefined) continue;
    const path = changeset ? join(changesets!, name.slice('@changeset/'.length)) : join(dir, name);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, text, { flag: 'wx' });
    written.push(path);
  }
  return { dir, packageName, tarballs, files: written };
}

/** What `init` prints: where things are and the next three commands. */
export function describeScaffold(result: ScaffoldResult, cwd = process.cwd()): string {
  const rel = relative(cwd, result.dir) || '.';
  return [
    `created ${result.packageName} in ${rel}:`,
    ...result.files.map((f) => `  ${relative(cwd, f)}`),
    '',
    'next (the ragfresh packages are installed from tarballs until they are on npm; see its README, "Install"):',
    `  cd ${rel}`,
    ...tarballSteps(result.tarballs).map((l) => `  ${l}`),
    '  npm install && npm run build',
    '  npx vitest run            # fails, naming the first hook to write (_open)',
    '  read docs/connectors/authoring.md, write the hooks, repeat until the suite passes',
  ].join('\n');
}
