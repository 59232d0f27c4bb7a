/** Process exit codes of every command (see docs/cli.md). */
export const EXIT = Object.freeze({
  ok: 0,
  failure: 1,
  usage: 2,
  objectiveViolated: 3,
  quarantined: 4,
});
