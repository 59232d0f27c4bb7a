// The Pinecone emulator's endpoints, declared: control plane (`db_control`) and one data plane
// per index (`db_data`), shapes of `@pinecone-database/pinecone@9`'s generated models.
import type { Route } from '../routes.js';
import { ControlPlane, createIndex, deleteIndex, describeIndex, listIndexes } from './control.js';
import type { IndexPlane } from './plane.js';
import { describeIndexStats, queryVectors } from './query.js';
import {
  deleteVectors,
  fetchVectors,
  listVectors,
  updateVectors,
  upsertVectors,
} from './vectors.js';

export const CONTROL_ROUTES: readonly Route<ControlPlane>[] = [
  { method: 'GET', path: '/indexes', handler: listIndexes },
  { method: 'POST', path: '/indexes', handler: createIndex },
  { method: 'GET', path: '/indexes/{name}', handler: describeIndex },
  { method: 'DELETE', path: '/indexes/{name}', handler: deleteIndex },
];

export const DATA_ROUTES: readonly Route<IndexPlane>[] = [
  { method: 'POST', path: '/vectors/upsert', handler: upsertVectors },
  { method: 'POST', path: '/vectors/update', handler: updateVectors },
  { method: 'POST', path: '/vectors/delete', handler: deleteVectors },
  { method: 'GET', path: '/vectors/fetch', handler: fetchVectors },
  { method: 'GET', path: '/vectors/list', handler: listVectors },
  { method: 'POST', path: '/query', handler: queryVectors },
  { method: 'POST', path: '/describe_index_stats', handler: describeIndexStats },
];

export { ControlPlane };
