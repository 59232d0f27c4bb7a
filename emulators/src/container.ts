import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** True when `docker info` answers within a few seconds (a container engine is reachable). */
export async function containerEngineAvailable(): Promise<boolean> {
  try {
    await run('docker', ['info', '--format', '{{.ServerVersion}}'], { timeout: 5_000 });
    return true;
  } catch {
    return false;
  }
}

export interface RunningContainer {
  readonly id: string;
  readonly image: string;
  /** Host port bound on 127.0.0.1 for each requested container port. */
  readonly ports: ReadonlyMap<number, number>;
  stop(): Promise<void>;
}

/**
 * `docker run -d --rm -p 127.0.0.1::<port> ... <image>`, then reads the bound host ports and
 * polls `ready` until it resolves (or 60 s pass).
 */
export async function startContainer(options: {
  readonly image: string;
  readonly ports: readonly number[];
  readonly env?: Readonly<Record<string, string>>;
  readonly ready: (ports: ReadonlyMap<number, number>) => Promise<boolean>;
}): Promise<RunningContainer> {
  const args = ['run', '-d', '--rm'];
  for (const p of options.ports) args.push('-p', `127.0.0.1::${p}`);
  for (const [k, v] of Object.entries(options.env ?? {})) args.push('-e', `${k}=${v}`);
  args.push(options.image);
  const { stdout } = await run('docker', args, { timeout: 300_000 });
  const id = stdout.trim();
  const stop = async () => {
    await run('docker', ['rm', '-f', id], { timeout: 60_000 }).catch(() => undefined);
  };
  try {
    const ports = new Map<number, number>();
    for (const p of options.ports) {
      const out =
        (await run('docker', ['port', id, `${p}/tcp`], { timeout: 10_000 })).stdout
          .trim()
          .split('\n')[0] ?? '';
      const hostPort = Number(out.slice(out.lastIndexOf(':') + 1));
      if (!Number.isInteger(hostPort) || hostPort <= 0)
        throw new Error(`docker port ${id} ${p}: unexpected output ${out}`);
      ports.set(p, hostPort);
    }
    const deadline = Date.now() + 60_000;
    while (!(await options.ready(ports).catch(() => false))) {
      if (Date.now() > deadline)
        throw new Error(`${options.image} did not become ready within 60 s`);
      await new Promise((r) => setTimeout(r, 250));
    }
    return { id, image: options.image, ports, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
