// `@ragfresh/queue` (BullMQ + ioredis) is an optional peer of the CLI: single-process users never
// install it. Only `worker`, `watch --distributed` and `status` with a `queue` config load it.

export type QueuePackage = typeof import('@ragfresh/queue');

/** The one line a command prints when the package is not installed. */
export function queueMissingLine(what: string): string {
  return `ragfresh: ${what} needs the optional package @ragfresh/queue (BullMQ + ioredis); install it next to ragfresh: npm install @ragfresh/queue`;
}

function isMissingQueuePackage(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | null;
  return (
    typeof e?.code === 'string' &&
    ['ERR_MODULE_NOT_FOUND', 'MODULE_NOT_FOUND'].includes(e.code) &&
    typeof e.message === 'string' &&
    /['"]@ragfresh\/queue['"]/.test(e.message)
  );
}

/** The queue package, or undefined when it is not installed (any other load failure throws). */
export async function loadQueuePackage(): Promise<QueuePackage | undefined> {
  try {
    return await import('@ragfresh/queue');
  } catch (err) {
    if (isMissingQueuePackage(err)) return undefined;
    throw err;
  }
}
