import { Connector, RagfreshError } from '@ragfresh/core';

/**
 * The connector of a role that opens no ragfresh store (`RoleTraits.store`: the LangChain
 * loader, whose chunks LangChain's `index()` writes into the app's vector store, and live
 * refresh, whose retriever reads that store itself). It opens and
 * closes; every other verb is NOT_SUPPORTED with one line naming the role, so a stage that
 * reaches for a store there says so instead of writing somewhere unexpected.
 */
export class NoStoreConnector extends Connector {
  readonly #role: string;

  constructor(role: string) {
    super({ store: 'none', promotion: 'gap', flagPromotion: 'gap' });
    this.#role = role;
  }

  #refuse(): never {
    throw new RagfreshError(
      'NOT_SUPPORTED',
      `the ${this.#role} role opens no ragfresh store (its LangChain host reads and writes the app's vector store); compose a store role to read or write one.`,
      { scope: 'engine' },
    );
  }

  protected async _open(): Promise<void> {}
  protected async _close(): Promise<void> {}
  protected async _upsert(): Promise<void> {
    this.#refuse();
  }
  protected async _patchValidity(): Promise<void> {
    this.#refuse();
  }
  protected async _readEpoch(): Promise<number> {
    this.#refuse();
  }
  protected async _advanceEpoch(): Promise<void> {
    this.#refuse();
  }
  protected async _deleteVersion(): Promise<void> {
    this.#refuse();
  }
  protected async _deleteDocuments(): Promise<void> {
    this.#refuse();
  }
  protected async _list(): Promise<never> {
    this.#refuse();
  }
  protected async _query(): Promise<never> {
    this.#refuse();
  }
}
