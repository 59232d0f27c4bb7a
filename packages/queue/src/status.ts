import { Queue } from 'bullmq';
import type { QueueRedis } from './config.js';
import { FINISH_QUEUE, PAGES_QUEUE, PUBLISH_QUEUE } from './config.js';

/** One BullMQ queue: depth by job state and the workers connected to it. */
export interface QueueDepth {
  readonly name: string;
  readonly waiting: number;
  readonly active: number;
  readonly delayed: number;
  readonly failed: number;
  readonly completed: number;
  /** Connected BullMQ workers of this queue (client names). */
  readonly workers: readonly string[];
}

export interface QueueStatus {
  readonly queues: readonly QueueDepth[];
}

/**
 * BullMQ's `getWorkers` gives the queue's name as `name`; the worker's own name is the part of
 * the client name (`rawname`, `<prefix>:<queue>:w:<name>`) after `:w:`. Unnamed: its address.
 */
function workerName(client: Readonly<Record<string, string>>): string {
  const raw = client.rawname ?? '';
  const at = raw.indexOf(':w:');
  return at >= 0 ? raw.slice(at + 3) : (client.addr ?? '?');
}

/**
 * Queue depth and connected workers of the pages, publish and finish queues (in that order), for
 * `ragfresh status`. A finish job waiting or delayed is a source window whose end (summary,
 * proposals) waits for its publish jobs.
 */
export async function queueStatus(connection: QueueRedis, prefix: string): Promise<QueueStatus> {
  const queues = [];
  for (const name of [PAGES_QUEUE, PUBLISH_QUEUE, FINISH_QUEUE]) {
    const q = new Queue(name, { connection, prefix });
    try {
      const c = await q.getJobCounts(
        'waiting',
        'active',
        'delayed',
        'failed',
        'completed',
        'prioritized',
      );
      const workers = (await q.getWorkers()).map(workerName);
      queues.push({
        name,
        waiting: (c.waiting ?? 0) + (c.prioritized ?? 0),
        active: c.active ?? 0,
        delayed: c.delayed ?? 0,
        failed: c.failed ?? 0,
        completed: c.completed ?? 0,
        workers,
      });
    } finally {
      await q.close();
    }
  }
  return { queues };
}

/** Removes every key of a prefix's queues (tests, and `ragfresh worker --reset`). */
export async function obliterateQueues(connection: QueueRedis, prefix: string): Promise<void> {
  for (const name of [FINISH_QUEUE, PAGES_QUEUE, PUBLISH_QUEUE]) {
    const q = new Queue(name, { connection, prefix });
    try {
      await q.obliterate({ force: true });
    } finally {
      await q.close();
    }
  }
}
