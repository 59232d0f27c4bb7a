/**
 * Process exit codes of every command (the table in docs/cli.md). When several hold: a run that
 * did not happen or broke (1, 2, 6) says so first; then `refresh`'s own verdict on the run it
 * just made, coverage below the gate (8), because the sources' status after a run that answered
 * too few pages rests on old observations; then the sources' status: quarantined (4), objective
 * violated (3), review pending (5).
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
  /**
   * `refresh`: the run answered fewer of its due pages definitively than `gates.minCoverage`
   * (default 0.9), for a source or overall (fetch errors, timeouts, a site down, an unreadable
   * sitemap); one line names each such source, its coverage and the gate.
   */
  coverageBelowGate: 8,
});
