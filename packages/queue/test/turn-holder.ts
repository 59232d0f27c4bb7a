// A fetcher process that takes one shared host turn and keeps it (renewing, as a live holder
// with an unanswered request does) until it is killed. Runs built code (Node strips the types).
// Usage: turn-holder.ts <redis-url> <prefix> <host> <turnTtlMs>; prints `granted` once it holds.
import { RedisPolitenessGate } from '@ragfresh/fetch';
import { Redis } from 'ioredis';

const [url, prefix, host, ttl] = process.argv.slice(2);
if (ttl === undefined) {
  process.stderr.write('usage: turn-holder.ts <redis-url> <prefix> <host> <turnTtlMs>\n');
  process.exit(2);
}
const redis = new Redis(url!);
const gate = new RedisPolitenessGate({ redis, prefix: prefix!, turnTtlMs: Number(ttl) });
await gate.acquire(host!, { intervalMs: 10, perHostConcurrency: 1, maxHoldMs: 300_000 });
process.stdout.write('granted\n');
// The request "runs" for ever: only SIGKILL ends this holder.
setInterval(() => {}, 60_000);
