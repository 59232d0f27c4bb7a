import { openStateStore, type StateStore } from '@ragfresh/core';

/**
 * The state store a crash case's parent and child process share: core's SQLite store in one
 * file, which survives a SIGKILL mid-write (WAL, one transaction per record).
 */
export async function openSharedStateStore(path: string): Promise<StateStore> {
  return openStateStore(`sqlite:${path}`);
}
