/**
 * Maps `items` through `fn` with at most `limit` calls in flight and yields the results in
 * input order. Items are pulled lazily: at most `limit` results are buffered, so a slow consumer
 * holds back fetching instead of piling up pages in memory.
 */
export async function* mapOrdered<T, R>(
  items: AsyncIterable<T> | Iterable<T>,
  limit: number,
  fn: (item: T) => Promise<R>,
): AsyncGenerator<R> {
  const iterator =
    Symbol.asyncIterator in items
      ? (items as AsyncIterable<T>)[Symbol.asyncIterator]()
      : toAsync((items as Iterable<T>)[Symbol.iterator]());
  const window: Array<Promise<R>> = [];
  let done = false;
  const fill = async () => {
    while (!done && window.length < limit) {
      const next = await iterator.next();
      if (next.done === true) {
        done = true;
        break;
      }
      const p = fn(next.value);
      // Avoid an unhandled rejection while an earlier result is still being awaited.
      p.catch(() => undefined);
      window.push(p);
    }
  };
  try {
    await fill();
    while (window.length > 0) {
      const result = await window.shift()!;
      await fill();
      yield result;
    }
  } finally {
    if (!done) await iterator.return?.();
  }
}

function toAsync<T>(it: Iterator<T>): AsyncIterator<T> {
  return { next: async () => it.next() };
}
