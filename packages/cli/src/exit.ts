/**
 * Process exit codes of every command (the table in docs/cli.md). When several hold, the
 * lowest-numbered status code above 2 wins in this order: quarantined (4), objective violated
 * (3), review pending (5).
 */
export const EXIT = Object.freeze({
  /** Every source met its objective, nothing quarantined, nothing waits for review. */
  ok: 0,
  /**
   * The command failed: an unexpected error, a lost state refused (STATE_LOST), a store behind
   * the state (STORE_LOST, also from `status` and `query`), a corrupt state file (STATE_CORRUPT),
   * a store that cannot be read.
   */
  failure: 1,
  /** Usage or config error: one line names the field and the fix. */
  usage: 2,
  /** A freshness objective is violated, including a source that never indexed anything. */
  objectiveViolated: 3,
  /** A source has a quarantined document (see `ragfresh review list`). */
  quarantined: 4,
  /** The review queue has pending items, or the last run held a mass removal. */
  reviewPending: 5,
  /** Another run holds the publish lease: nothing was done; retry after the time printed. */
  busy: 6,
  /**
   * `import`: the export held rows that were not imported: refused by a guard (page limits,
   * host policy, a fetch time in the future) or unreadable. Every other row was imported; the
   * report lists each refused row with its reason.
   */
  rowsRefused: 7,
});
