import KeyvRedis, {
  createClient,
  createCluster,
  type RedisClientType,
  type RedisClusterType,
} from '@keyv/redis';
import { RagfreshError } from '../errors.js';
import {
  corrupt,
  describeError,
  encodeStateOp,
  type IndexEntry,
  redactUrl,
  type StateBackend,
  type StateGuard,
} from './backend.js';
import type { Lease, StateOp } from './types.js';

export interface RedisBackendOptions {
  /**
   * `redis://[user:password@]host:port[/db]` or `rediss://…`; a node of a Redis Cluster is
   * recognised at open and the other nodes are found from it (no `/db` there).
   */
  readonly url: string;
  /** Give up connecting after this long. Default 5000 ms. */
  readonly connectTimeoutMs?: number;
}

// Every script reads the server clock, so all processes agree on expiry whatever their clocks.
const NOW = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

const READ_LEASE = `local function read_lease(key)
  local raw = redis.call('GET', key)
  if not raw then return nil end
  local ok, l = pcall(cjson.decode, raw)
  if not ok or type(l) ~= 'table' or type(l.fence) ~= 'number' or type(l.expiresAt) ~= 'number'
    or type(l.holder) ~= 'string' or type(l.name) ~= 'string' then
    return redis.error_reply('RAGFRESH_STATE_CORRUPT')
  end
  return l
end
local function write_lease(key, name, holder, fence, expires)
  redis.call('SET', key, string.format('{"name":%s,"holder":%s,"fence":%d,"expiresAt":%d}',
    cjson.encode(name), cjson.encode(holder), fence, expires))
end`;

/** KEYS[1] lease; ARGV name, holder, ttlMs → {1, fence, expiresAt} | {0} */
const ACQUIRE = `${NOW}
${READ_LEASE}
local l = read_lease(KEYS[1])
if l and l.err then return l end
if l and l.expiresAt > now and l.holder ~= ARGV[2] then return {0} end
local fence = math.max((l and l.fence or 0) + 1, tonumber(ARGV[4] or 0))
local expires = now + tonumber(ARGV[3])
write_lease(KEYS[1], ARGV[1], ARGV[2], fence, expires)
return {1, fence, expires}`;

/** KEYS[1] lease; ARGV holder, fence, ttlMs → {1, expiresAt} | {0} */
const RENEW = `${NOW}
${READ_LEASE}
local l = read_lease(KEYS[1])
if l and l.err then return l end
if not l or l.fence ~= tonumber(ARGV[2]) or l.holder ~= ARGV[1] then return {0} end
local expires = now + tonumber(ARGV[3])
write_lease(KEYS[1], l.name, l.holder, l.fence, expires)
return {1, expires}`;

/** KEYS[1] lease; ARGV holder, fence → 1 | 0 */
const RELEASE = `${READ_LEASE}
local l = read_lease(KEYS[1])
if l and l.err then return l end
if not l or l.fence ~= tonumber(ARGV[2]) or l.holder ~= ARGV[1] then return 0 end
write_lease(KEYS[1], l.name, l.holder, l.fence, 0)
return 1`;

/** KEYS[1] lease → fence | -1 */
const CURRENT = `${NOW}
${READ_LEASE}
local l = read_lease(KEYS[1])
if l and l.err then return l end
if not l or l.expiresAt <= now then return -1 end
return l.fence`;

/** KEYS[1] lease, KEYS[2] target; ARGV fence, value → 1 | 0 */
const PUT_FENCED = `${NOW}
${READ_LEASE}
local l = read_lease(KEYS[1])
if l and l.err then return l end
if not l or l.fence ~= tonumber(ARGV[1]) or l.expiresAt <= now then return 0 end
redis.call('SET', KEYS[2], ARGV[2])
return 1`;

/** KEYS[1]; ARGV value → 1 | 0 */
const DELETE_IF_EQUALS = `if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0`;

/**
 * KEYS every key below (declared so a cluster routes the script and checks they share a slot);
 * ARGV guards JSON [[key, 0] | [key, 1, value]], ops JSON [[op, key, a, b]] → 1 | 0
 */
const COMMIT = `for _, g in ipairs(cjson.decode(ARGV[1])) do
  local v = redis.call('GET', g[1])
  if g[2] == 0 then
    if v then return 0 end
  elseif v ~= g[3] then return 0 end
end
for _, o in ipairs(cjson.decode(ARGV[2])) do
  local op = o[1]
  if op == 'set' then redis.call('SET', o[2], o[3])
  elseif op == 'del' then redis.call('DEL', o[2])
  elseif op == 'zadd' then redis.call('ZADD', o[2], o[4], o[3])
  elseif op == 'zrem' then redis.call('ZREM', o[2], o[3])
  elseif op == 'zincr' then
    if tonumber(redis.call('ZINCRBY', o[2], o[4], o[3])) == 0 then redis.call('ZREM', o[2], o[3]) end
  end
end
return 1`;

/** KEYS[1]; ARGV end (low | high | all), limit → flat {member, score, …} */
const ZRANGE = `if ARGV[1] == 'all' then return redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES') end
if ARGV[1] == 'low' then return redis.call('ZRANGE', KEYS[1], 0, tonumber(ARGV[2]) - 1, 'WITHSCORES') end
local top = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
if #top == 0 then return {} end
return redis.call('ZRANGEBYSCORE', KEYS[1], top[2], top[2], 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[2]))`;

/**
 * KEYS[1] the prefix (routes the script to the namespace's node on a cluster, where SCAN sees
 * that node's keys: all of a hash-tagged namespace); ARGV match pattern → keys deleted
 */
const ZCLEAR = `local cursor, n = '0', 0
repeat
  local r = redis.call('SCAN', cursor, 'MATCH', ARGV[1], 'COUNT', 1000)
  cursor = r[1]
  for _, k in ipairs(r[2]) do
    if redis.call('TYPE', k).ok == 'zset' then redis.call('DEL', k); n = n + 1 end
  end
until cursor == '0'
return n`;

type Client = RedisClientType | RedisClusterType;

/**
 * Redis backend: records through `@keyv/redis`; lease grants and fenced writes are Lua scripts
 * (`EVAL`) on the same client, so each runs atomically on the server. A Redis Cluster node is
 * recognised at open (`INFO cluster`) and the store switches to a cluster client seeded with it;
 * there every key of a namespace carries the namespace as a `{hash tag}` (`hashTagged`), so the
 * multi-key scripts and MGET stay in one slot. A single node keeps the untagged layout it always
 * had.
 */
export class RedisStateBackend implements StateBackend {
  readonly kind = 'redis' as const;
  readonly scanMayRepeat = true;
  readonly hashTagged: boolean;
  readonly adapter: KeyvRedis<string>;
  private readonly client: Client;

  private constructor(client: Client, clustered: boolean) {
    this.client = client;
    this.hashTagged = clustered;
    this.adapter = new KeyvRedis<string>(client, {
      keyPrefixSeparator: ':',
      throwOnErrors: true,
      throwOnConnectError: true,
    });
    this.adapter.on('error', () => {
      // Errors also reach the caller as rejections (throwOnErrors); the listener keeps an
      // unhandled 'error' event from crashing the process.
    });
  }

  static async open(options: RedisBackendOptions): Promise<RedisStateBackend> {
    const timeout = options.connectTimeoutMs ?? 5000;
    const socket = {
      connectTimeout: timeout,
      // A few quick retries, then fail: a state store that is down must be reported, not awaited.
      reconnectStrategy: (retries: number) => (retries >= 3 ? false : 100 * (retries + 1)),
    };
    const single = createClient({ url: options.url, socket }) as RedisClientType;
    await connect(single, options.url, async () => {
      await single.connect();
      await single.ping();
    });
    // A server that refuses INFO (some managed services) is taken for a single node.
    const clustered = await single.info('cluster').then(
      (info) => /^cluster_enabled:1/m.test(info),
      () => false,
    );
    if (!clustered) return new RedisStateBackend(single, false);
    await single.close().catch(() => single.destroy());
    const url = new URL(options.url);
    const cluster = createCluster({
      rootNodes: [{ url: options.url }],
      // The nodes found from the seed: same credentials and transport as the seed.
      defaults: {
        socket: url.protocol === 'rediss:' ? { ...socket, tls: true } : socket,
        ...(url.username === '' ? {} : { username: decodeURIComponent(url.username) }),
        ...(url.password === '' ? {} : { password: decodeURIComponent(url.password) }),
      },
    }) as RedisClusterType;
    await connect(cluster, options.url, () => cluster.connect());
    return new RedisStateBackend(cluster, true);
  }

  private async eval(
    script: string,
    keys: string[],
    args: Array<string | number>,
  ): Promise<unknown> {
    try {
      return await this.client.eval(script, { keys, arguments: args.map(String) });
    } catch (error) {
      if (String((error as Error)?.message).includes('RAGFRESH_STATE_CORRUPT')) {
        throw corrupt(keys[0]!, 'is not a lease record', error);
      }
      throw error;
    }
  }

  async getMany(keys: readonly string[]): Promise<(string | undefined)[]> {
    if (keys.length === 0) return [];
    const values = await this.client.mGet([...keys]);
    return values.map((v) => (typeof v === 'string' ? v : undefined));
  }
  async get(key: string): Promise<string | undefined> {
    return this.adapter.get<string>(key);
  }
  async set(key: string, value: string): Promise<void> {
    await this.adapter.set(key, value);
  }
  async delete(key: string): Promise<void> {
    await this.adapter.delete(key);
  }

  async *scan(prefix: string): AsyncIterable<readonly [string, string]> {
    for await (const [key, value] of this.adapter.iterator<string>(prefix)) {
      // A key deleted between SCAN and MGET comes back without a value: it is gone, skip it.
      // The adapter strips `prefix:` from keys; put it back so callers get full keys.
      if (value !== undefined && value !== null) yield [`${prefix}:${key}`, value];
    }
  }

  async acquireLease(
    key: string,
    name: string,
    holder: string,
    ttlMs: number,
    minFence = 0,
  ): Promise<Lease | undefined> {
    const reply = (await this.eval(
      ACQUIRE,
      [key],
      [name, holder, Math.ceil(ttlMs), minFence],
    )) as number[];
    if (reply[0] !== 1) return undefined;
    return { name, holder, fence: Number(reply[1]), expiresAt: Number(reply[2]) };
  }

  async renewLease(key: string, lease: Lease, ttlMs: number): Promise<Lease | undefined> {
    const reply = (await this.eval(
      RENEW,
      [key],
      [lease.holder, lease.fence, Math.ceil(ttlMs)],
    )) as number[];
    if (reply[0] !== 1) return undefined;
    return { ...lease, expiresAt: Number(reply[1]) };
  }

  async releaseLease(key: string, lease: Lease): Promise<void> {
    await this.eval(RELEASE, [key], [lease.holder, lease.fence]);
  }

  async currentFence(key: string): Promise<number | undefined> {
    const fence = Number(await this.eval(CURRENT, [key], []));
    return fence < 0 ? undefined : fence;
  }

  async putFenced(leaseKey: string, fence: number, key: string, value: string): Promise<boolean> {
    return Number(await this.eval(PUT_FENCED, [leaseKey, key], [fence, value])) === 1;
  }

  async deleteIfEquals(key: string, value: string): Promise<boolean> {
    return Number(await this.eval(DELETE_IF_EQUALS, [key], [value])) === 1;
  }

  async commit(guards: readonly StateGuard[], ops: readonly StateOp[]): Promise<boolean> {
    const g = guards.map((x) => (x.value === undefined ? [x.key, 0] : [x.key, 1, x.value]));
    const o = ops.map(encodeStateOp);
    const keys = [...new Set([...guards.map((x) => x.key), ...ops.map((x) => x.key)])];
    return Number(await this.eval(COMMIT, keys, [JSON.stringify(g), JSON.stringify(o)])) === 1;
  }

  async zrange(key: string, end: 'low' | 'high', limit: number): Promise<IndexEntry[]> {
    return entries(await this.eval(ZRANGE, [key], [end, limit]));
  }

  async zall(key: string): Promise<IndexEntry[]> {
    return entries(await this.eval(ZRANGE, [key], ['all', 0]));
  }

  async zclear(prefix: string): Promise<void> {
    await this.eval(ZCLEAR, [prefix], [`${prefix}:*`]);
  }

  async close(): Promise<void> {
    if (this.client.isOpen) await this.client.close();
  }
}

/**
 * Connects `client` with `connected`; STORE_UNREACHABLE in one line when that fails, INVALID_CONFIG
 * when the URL selects a database on a cluster node (a cluster has only database 0).
 */
async function connect(client: Client, url: string, connected: () => Promise<unknown>) {
  let lastError: unknown;
  client.on('error', (error: unknown) => {
    lastError = error;
  });
  try {
    await connected();
  } catch (cause) {
    if (client.isOpen) client.destroy();
    const error = lastError ?? cause;
    if (/SELECT is not allowed in cluster mode/i.test(String((error as Error)?.message ?? error)))
      throw new RagfreshError(
        'INVALID_CONFIG',
        `state store ${redactUrl(url)} is a Redis Cluster node and a cluster has no databases: drop the "/db" from the state URL.`,
        { scope: 'redis', cause: error },
      );
    throw new RagfreshError(
      'STORE_UNREACHABLE',
      `cannot reach Redis at ${redactUrl(url)} (${describeError(error)}); start Redis or fix the state URL.`,
      { scope: 'redis', cause: error },
    );
  }
}

function entries(reply: unknown): IndexEntry[] {
  const flat = reply as string[];
  const out: IndexEntry[] = [];
  for (let i = 0; i + 1 < flat.length; i += 2)
    out.push({ member: String(flat[i]), score: Number(flat[i + 1]) });
  return out;
}
