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
const running = await startQueueProcess(spec, { log: (message) => say('log', { message }) });
say('ready');
let leader = false;
const watchLeader = setInterval(() => {
  const now = running.publisher?.leader === true;
  if (now !== leader) say(now ? 'leader' : 'standby');
  leader = now;
}, 200);
const stop = async (): Promise<void> => {
  clearInterval(watchLeader);
  await running.close();
  say('stopped', { cpu: process.cpuUsage(), waitedMs: running.gate.waitedMs });
  process.exit(0);
};
process.once('SIGTERM', () => void stop());
process.once('SIGINT', () => void stop());
