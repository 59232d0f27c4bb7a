import type {
  ExplainInput,
  ExplainOutput,
  FreshnessInput,
  FreshnessOutput,
  GetDocumentInput,
  GetDocumentOutput,
  ReadonlyDeep,
  SearchInput,
  SearchOutput,
} from './schemas.js';

/**
 * Who is reading: fixed when the server (or the AI SDK tool set) is made, never taken from a
 * tool call's arguments.
 */
export interface ReaderIdentity {
  /**
   * Access groups of this reader (issue 35's scopes): public chunks plus these groups'. The
   * reader hands them to its query path; a reader whose query path cannot enforce scopes must
   * refuse a non-empty list rather than answer unscoped.
   */
  readonly access?: readonly string[];
}

/**
 * What the tools read, and only read: ragfresh's current view, its state's records and the
 * status computation. `ragfresh` (the CLI package) implements it over a configured project
 * (`openReader`); nothing here can approve, reject, remove or refresh anything.
 *
 * Each method receives arguments already validated by the tool's input schema (and a `source`
 * already checked against `sourceIds`); it throws a RagfreshError for what the store or the
 * state said (STORE_LOST, STATE_CORRUPT, a URL no source knows), which the tool reports as one
 * line.
 */
export interface RagfreshReader {
  /** Source ids of the project, for "unknown source" errors. */
  readonly sourceIds: readonly string[];
  readonly identity: ReaderIdentity;
  search(input: SearchInput): Promise<ReadonlyDeep<SearchOutput>>;
  getDocument(input: GetDocumentInput): Promise<ReadonlyDeep<GetDocumentOutput>>;
  freshness(input: FreshnessInput): Promise<ReadonlyDeep<FreshnessOutput>>;
  explain(input: ExplainInput): Promise<ReadonlyDeep<ExplainOutput>>;
}
