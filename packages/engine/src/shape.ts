import type { EngineContext, SourceRun } from './context.js';

const good = (c: Readonly<Record<string, number>>) => (c.fetched200 ?? 0) + (c.notModified ?? 0);

/**
 * Shape checks of one source against its own history, each a per-source alert: a coverage
 * drop (fewer than half the good pages of the last run) and a frozen source (no content
 * change for longer than `expectedChangeMs`). Run before the run summary is appended.
 */
export async function checkShape(ctx: EngineContext, run: SourceRun): Promise<void> {
  const { state } = ctx.deps;
  const [previous] = await state.listRuns(run.source.id, 1);
  const now = good(run.counts as unknown as Record<string, number>);
  if (previous !== undefined && good(previous.counts) >= 5 && now < good(previous.counts) / 2)
    run.alerts.push(`coverage-drop: ${now} good pages, last run had ${good(previous.counts)}`);
  const expected = run.source.expectedChangeMs;
  if (expected === undefined) return;
  let latest = 0;
  for await (const r of state.listDocuments({ sourceId: run.source.id })) {
    const t = r.timestamps.contentChangedAt;
    if (t !== undefined) latest = Math.max(latest, Date.parse(t));
  }
  if (latest > 0 && ctx.now().getTime() - latest > expected) {
    run.alerts.push(
      `frozen: no content change since ${new Date(latest).toISOString()}, expected one every ${Math.round(expected / 3_600_000)}h`,
    );
  }
}
