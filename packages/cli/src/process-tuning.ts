// Process settings for the commands that do the heavy work (refresh, watch, demo, ...). Both
// only take effect at process start, so the CLI re-executes itself once with them:
// - a bounded V8 old space: linkedom and the extractor allocate per node, and V8 lets that
//   garbage grow to hundreds of MiB before collecting when the heap limit is far away (a
//   1,000-page cold ingest peaked at 281 MiB of heap and 588 MiB RSS; with a 160 MiB old space,
//   109 MiB and 367 MiB at the same CPU; at 2,000 pages 384 and 192 MiB old space cost the same
//   CPU, issue 37; 256 MiB is the default since, with the live heap ~80 MiB at 2,000 pages);
// - `MALLOC_ARENA_MAX=2`: LanceDB's native threads otherwise each get a glibc malloc arena, and
//   the fragmentation shows as RSS (-7 % to -26 % measured, see docs/connectors/lancedb.md).
// Opt out with RAGFRESH_NO_REEXEC=1; a heap flag of your own (NODE_OPTIONS or node's argv) wins.

/** Old-space limit in MiB for heavy commands; `RAGFRESH_HEAP_MB` overrides it. */
export const DEFAULT_HEAP_MB = 256;

/** Marks the re-executed process, so it never re-executes again. */
const MARK = 'RAGFRESH_TUNED';

export interface ProcessTuning {
  /** Extra node flags (before the script). */
  readonly execArgv: readonly string[];
  /** Environment variables to add. */
  readonly env: Readonly<Record<string, string>>;
}

/** What a heavy command's process should run with, given the current environment. */
export function heavyProcessTuning(
  env: NodeJS.ProcessEnv = process.env,
  execArgv: readonly string[] = process.execArgv,
): ProcessTuning {
  const flags = `${env.NODE_OPTIONS ?? ''} ${execArgv.join(' ')}`;
  const heapMb = Number(env.RAGFRESH_HEAP_MB ?? DEFAULT_HEAP_MB);
  const ownHeap = /--max-old-space-size/.test(flags);
  return {
    execArgv:
      ownHeap || !Number.isFinite(heapMb) || heapMb <= 0
        ? []
        : [`--max-old-space-size=${Math.round(heapMb)}`],
    env:
      env.MALLOC_ARENA_MAX === undefined && process.platform === 'linux'
        ? { MALLOC_ARENA_MAX: '2' }
        : {},
  };
}

/**
 * Replaces this process with one tuned for heavy work (same pid, argv, stdio, signals), when
 * it is not tuned yet and `process.execve` exists (Node >= 22.15). Returns false when it did
 * nothing; on success it does not return.
 */
export function reexecTuned(): boolean {
  if (process.env[MARK] === '1' || process.env.RAGFRESH_NO_REEXEC === '1') return false;
  const execve = (process as { execve?: (file: string, args: string[], env: object) => never })
    .execve;
  if (typeof execve !== 'function') return false;
  const tuning = heavyProcessTuning();
  if (tuning.execArgv.length === 0 && Object.keys(tuning.env).length === 0) return false;
  try {
    execve(
      process.execPath,
      [process.execPath, ...process.execArgv, ...tuning.execArgv, ...process.argv.slice(1)],
      { ...process.env, ...tuning.env, [MARK]: '1' },
    );
  } catch {
    // Not permitted here (sandboxes, seccomp): run untuned rather than not at all.
    return false;
  }
  return true;
}
