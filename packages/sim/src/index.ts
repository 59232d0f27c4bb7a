export { type SimWeb, startSimWeb, twinPath } from './server.js';
export type {
  CharsetVariant,
  MutationKind,
  MutationOptions,
  PageFacts,
  RequestLogEntry,
  RobotsSpec,
  ScheduledMutation,
  SectionFact,
  SimHostInfo,
  SimWebOptions,
  SiteFlavor,
} from './types.js';
