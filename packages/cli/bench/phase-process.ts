// Measurement plumbing shared by the refresh bench's parent and its phase processes.
import { spawn } from 'node:child_process';
import { lstatSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** What every phase process reports about itself. */
export interface PhaseCost {
  /** Wall time of the measured work, milliseconds. */
  readonly wallMs: number;
  /** user + system CPU of the whole process (all threads, native ones included) during the work. */
  readonly cpuMs: number;
  /** Kernel's high-water mark of the process's resident set (its whole life), MiB. */
  readonly peakRssMiB: number;
}

/** Starts the clock on the measured section of a phase process. */
export function startPhase(): () => Omit<PhaseCost, 'peakRssMiB'> {
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  return () => {
    const cpu = process.cpuUsage(cpu0);
    return { wallMs: performance.now() - t0, cpuMs: (cpu.user + cpu.system) / 1000 };
  };
}

/** `maxRSS` is in KiB and covers the process's life: a fresh process per phase makes it the phase's. */
export function peakRssMiB(): number {
  return process.resourceUsage().maxRSS / 1024;
}

/**
 * Runs `script` (a TypeScript file Node strips) in a fresh Node process with one JSON argument
 * and parses the JSON it writes to stdout. stderr passes through, so a failing phase is visible.
 */
export function runPhaseProcess<T>(
  script: string,
  input: unknown,
  tuning: {
    readonly execArgv: readonly string[];
    readonly env: Readonly<Record<string, string>>;
  } = {
    execArgv: [],
    env: {},
  },
): Promise<T> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...tuning.execArgv, script, JSON.stringify(input)], {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, ...tuning.env },
    });
    const out: Buffer[] = [];
    child.stdout.on('data', (d: Buffer) => out.push(d));
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      if (code !== 0) {
        reject(new Error(`${script} exited ${code ?? signal}; its stderr is above.`));
        return;
      }
      try {
        resolve(JSON.parse(Buffer.concat(out).toString('utf8')) as T);
      } catch (err) {
        reject(new Error(`${script} wrote no JSON result: ${(err as Error).message}`));
      }
    });
  });
}

/** Reads the phase's JSON argument (`node <script> '<json>'`). */
export function phaseInput<T>(): T {
  const raw = process.argv[2];
  if (raw === undefined) throw new Error('a phase process takes one JSON argument');
  return JSON.parse(raw) as T;
}

export function writePhaseResult(result: unknown): void {
  process.stdout.write(JSON.stringify(result));
}

/** Bytes on disk (allocated blocks, like `du`), of a file or a directory tree; 0 if absent. */
export function diskBytes(path: string): number {
  let stat: ReturnType<typeof lstatSync>;
  try {
    stat = lstatSync(path);
  } catch {
    return 0;
  }
  if (!stat.isDirectory()) return stat.blocks * 512;
  let total = stat.blocks * 512;
  for (const entry of readdirSync(path)) total += diskBytes(join(path, entry));
  return total;
}

/** Regular files in a directory tree (0 if absent): the raw snapshot layout's file count. */
export function fileCount(path: string): number {
  let stat: ReturnType<typeof lstatSync>;
  try {
    stat = lstatSync(path);
  } catch {
    return 0;
  }
  if (!stat.isDirectory()) return 1;
  let n = 0;
  for (const entry of readdirSync(path)) n += fileCount(join(path, entry));
  return n;
}

/** CPU ms of this process's waited-for children so far (`cutime + cstime`, 10 ms ticks). */
function childrenCpuMs(): number {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  // Fields after the parenthesised command name; cutime and cstime are fields 16 and 17.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[13]) + Number(fields[14])) * 10;
}

export interface StartTime {
  /** Median wall time from spawn to exit, ms. */
  readonly wallMs: number;
  /** Median CPU of the process, ms (10 ms resolution). */
  readonly cpuMs: number;
}

const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};

/**
 * Starts `node <args>` `runs` times, one after another, each in a fresh process. Exit codes in
 * `okCodes` count as a normal end (`status` exits 3/4 when an objective is violated).
 */
export async function measureStart(
  args: readonly string[],
  runs: number,
  okCodes: readonly number[] = [0],
): Promise<StartTime> {
  const walls: number[] = [];
  const cpus: number[] = [];
  for (let i = 0; i < runs; i++) {
    const cpu0 = childrenCpuMs();
    const t0 = performance.now();
    const { code, stderr } = await new Promise<{ code: number | null; stderr: string }>(
      (resolve, reject) => {
        const child = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'pipe'] });
        let err = '';
        child.stderr.on('data', (d: Buffer) => {
          err += d.toString('utf8');
        });
        child.on('error', reject);
        child.on('exit', (c) => resolve({ code: c, stderr: err }));
      },
    );
    walls.push(performance.now() - t0);
    cpus.push(childrenCpuMs() - cpu0);
    if (code === null || !okCodes.includes(code))
      throw new Error(`node ${args.join(' ')} exited ${code}: ${stderr.trim().split('\n')[0]}`);
  }
  return { wallMs: median(walls), cpuMs: median(cpus) };
}
