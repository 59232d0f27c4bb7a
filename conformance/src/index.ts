export { CASES } from './cases/index.js';
export { Corpus, DIMENSIONS, embed, PIPELINE_VERSIONS } from './corpus.js';
export {
  describeCapabilities,
  formatCaseRow,
  formatHeader,
  formatReport,
  formatSummary,
  formatTableHead,
} from './report.js';
export { openSharedStateStore } from './state.js';
export {
  failureMessage,
  randomNamespace,
  runCase,
  runConformanceSuite,
  runSuite,
  SUITE_NAME,
  SUITE_VERSION,
  startTarget,
} from './suite.js';
export type {
  CaseContext,
  CaseReport,
  CaseStatus,
  ConformanceCase,
  ConformanceReport,
  LangChainReader,
  LangChainReaderHit,
  LangChainReaderTarget,
  LangChainReaderView,
  RegisterSuiteOptions,
  RunSuiteOptions,
  SuiteOptions,
  TestRunner,
} from './types.js';
export { hasLangChainReader } from './types.js';
