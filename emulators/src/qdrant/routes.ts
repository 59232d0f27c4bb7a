// The Qdrant emulator's endpoints, declared as the Qdrant JS client declares them (path template
// and method per OpenAPI operation). Order matters only where a literal segment and a `{name}`
// could both match: `/collections/aliases` comes before `/collections/{name}`.
import type { Route } from '../routes.js';
import {
  collectionAliases,
  collectionExists,
  createFieldIndex,
  deleteCollection,
  getCollection,
  listAliases,
  listCollections,
  putCollection,
  serverInfo,
  updateAliases,
} from './collections.js';
import type { QdrantServer } from './context.js';
import {
  countPoints,
  deletePoints,
  queryPoints,
  retrievePoints,
  scrollPoints,
  setPointsPayload,
  upsertPoints,
} from './points.js';

export const QDRANT_ROUTES: readonly Route<QdrantServer>[] = [
  { method: 'GET', path: '/', handler: serverInfo },
  { method: 'GET', path: '/aliases', handler: listAliases },
  { method: 'GET', path: '/collections', handler: listCollections },
  { method: 'POST', path: '/collections/aliases', handler: updateAliases },
  { method: 'GET', path: '/collections/{name}', handler: getCollection },
  { method: 'PUT', path: '/collections/{name}', handler: putCollection },
  { method: 'DELETE', path: '/collections/{name}', handler: deleteCollection },
  { method: 'GET', path: '/collections/{name}/exists', handler: collectionExists },
  { method: 'GET', path: '/collections/{name}/aliases', handler: collectionAliases },
  { method: 'PUT', path: '/collections/{name}/index', handler: createFieldIndex },
  { method: 'PUT', path: '/collections/{name}/points', handler: upsertPoints },
  { method: 'POST', path: '/collections/{name}/points', handler: retrievePoints },
  { method: 'POST', path: '/collections/{name}/points/payload', handler: setPointsPayload },
  { method: 'POST', path: '/collections/{name}/points/delete', handler: deletePoints },
  { method: 'POST', path: '/collections/{name}/points/scroll', handler: scrollPoints },
  { method: 'POST', path: '/collections/{name}/points/count', handler: countPoints },
  { method: 'POST', path: '/collections/{name}/points/query', handler: queryPoints },
];
