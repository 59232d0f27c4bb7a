import type { DocumentRecord, StateStore } from '@ragfresh/core';

/**
 * The document records as one refresh found them: inside `pin()` … `release()` (a refresh),
 * read once with one scan of the state and shared by the stages that need a source's whole
 * list — the state/store check, the re-extraction check, the inventory, the inventory diff and
 * the retire gate. A stage that changed records in bulk (a repair, a re-extraction) calls
 * `invalidate()`, and the next reader scans again. Outside a pinned run every call reads the
 * state afresh. Stages that need one document's latest record still read it from the state.
 */
export class RecordSnapshot {
  readonly #state: StateStore;
  #pinned = false;
  #bySource: Promise<Map<string, DocumentRecord[]>> | undefined;

  constructor(state: StateStore) {
    this.#state = state;
  }

  /** Start sharing one scan (a refresh begins). */
  pin(): void {
    this.#pinned = true;
    this.#bySource = undefined;
  }

  /** Stop sharing (the refresh ended): later calls read the state afresh. */
  release(): void {
    this.#pinned = false;
    this.#bySource = undefined;
  }

  #load(): Promise<Map<string, DocumentRecord[]>> {
    this.#bySource ??= (async () => {
      const bySource = new Map<string, DocumentRecord[]>();
      for await (const r of this.#state.listDocuments()) {
        const list = bySource.get(r.sourceId);
        if (list === undefined) bySource.set(r.sourceId, [r]);
        else list.push(r);
      }
      return bySource;
    })();
    return this.#bySource;
  }

  /** Every record of the state. */
  async all(): Promise<DocumentRecord[]> {
    const bySource = await this.#load();
    if (!this.#pinned) this.#bySource = undefined;
    return [...bySource.values()].flat();
  }

  /** Records of one source. */
  async ofSource(sourceId: string): Promise<readonly DocumentRecord[]> {
    if (!this.#pinned) {
      const out: DocumentRecord[] = [];
      for await (const r of this.#state.listDocuments({ sourceId })) out.push(r);
      return out;
    }
    return (await this.#load()).get(sourceId) ?? [];
  }

  /** Forget the snapshot: the next reader scans the state again. */
  invalidate(): void {
    this.#bySource = undefined;
  }
}
