#!/usr/bin/env node
import { type QueueProcessSpec, startQueueProcess } from './process.js';

// A queue process from a JSON spec in RAGFRESH_QUEUE_SPEC (tests, benchmarks, containers).
// SIGTERM: in-flight batches finish, then the process exits 0.
const raw = process.env.RAGFRESH_QUEUE_SPEC;
if (raw === undefined) {
  process.stderr.write('ragfresh-queue: set RAGFRESH_QUEUE_SPEC to a QueueProcessSpec as JSON.\n');
  process.exit(2);
}
const spec = JSON.parse(raw) as QueueProcessSpec;
const say = (event: string, extra: Record<string, unknown> = {}): void => {
  process.stdout.write(
    `${JSON.stringify({ event, name: spec.name, pid: process.pid, ...extra })}\n`,
  );
};
// The handlers are in place before anything starts: a SIGTERM during start-up still stops cleanly.
let stopping: Promise<void> | undefined;
let watchLeader: NodeJS.Timeout | undefined;
const starting = startQueueProcess(spec, { log: (message) => say('log', { message }) });
const stop = (): Promise<void> =>
  (stopping ??= (async () => {
    clearInterval(watchLeader);
    const running = await starting;
    await running.close();
    say('stopped', { cpu: process.cpuUsage(), waitedMs: running.gate.waitedMs });
    process.exit(0);
  })());
process.once('SIGTERM', () => void stop());
process.once('SIGINT', () => void stop());
const running = await starting;
say('ready');
let leader = false;
watchLeader = setInterval(() => {
  const now = running.publisher?.leader === true;
  if (now !== leader) say(now ? 'leader' : 'standby');
  leader = now;
}, 200);
