/**
 * Vocabulary for generated documentation. Each host draws one domain, so pages on one host share
 * a topical vocabulary and pages on different hosts read differently; coined words (see
 * `Coiner`) add the per-page and per-section unique phrases that retrieval tests look for.
 */

export interface Domain {
  readonly name: string;
  /** Nouns that name things in the domain (singular). */
  readonly nouns: readonly string[];
  /** Verbs in base form that act on those things. */
  readonly verbs: readonly string[];
  /** Configuration option names used in tables and code. */
  readonly options: readonly string[];
}

export const DOMAINS: readonly Domain[] = [
  {
    name: 'search',
    nouns: [
      'index',
      'query',
      'analyzer',
      'tokenizer',
      'shard',
      'replica',
      'mapping',
      'facet',
      'ranking profile',
      'synonym list',
      'field',
      'snapshot',
    ],
    verbs: ['index', 'reindex', 'query', 'boost', 'filter', 'tokenize', 'rank', 'refresh'],
    options: [
      'max_shards',
      'refresh_interval',
      'analyzer_name',
      'boost_factor',
      'min_score',
      'replica_count',
    ],
  },
  {
    name: 'billing',
    nouns: [
      'invoice',
      'subscription',
      'payment method',
      'price plan',
      'coupon',
      'ledger entry',
      'refund',
      'usage record',
      'tax rate',
      'customer',
    ],
    verbs: ['invoice', 'charge', 'refund', 'prorate', 'meter', 'settle', 'reconcile', 'void'],
    options: [
      'currency',
      'billing_cycle',
      'grace_days',
      'tax_behavior',
      'proration_mode',
      'retry_limit',
    ],
  },
  {
    name: 'storage',
    nouns: [
      'bucket',
      'object',
      'lifecycle rule',
      'multipart upload',
      'access policy',
      'storage class',
      'checksum',
      'version',
      'presigned URL',
      'replication rule',
    ],
    verbs: ['upload', 'replicate', 'archive', 'restore', 'encrypt', 'expire', 'list', 'copy'],
    options: ['part_size', 'storage_class', 'retention_days', 'kms_key', 'max_keys', 'versioning'],
  },
  {
    name: 'messaging',
    nouns: [
      'topic',
      'queue',
      'consumer group',
      'partition',
      'offset',
      'dead-letter queue',
      'producer',
      'acknowledgement',
      'retention window',
      'message key',
    ],
    verbs: [
      'publish',
      'consume',
      'acknowledge',
      'replay',
      'partition',
      'batch',
      'route',
      'throttle',
    ],
    options: [
      'batch_size',
      'ack_timeout',
      'max_inflight',
      'retention_hours',
      'compression',
      'prefetch',
    ],
  },
  {
    name: 'authentication',
    nouns: [
      'access token',
      'refresh token',
      'identity provider',
      'session',
      'scope',
      'client secret',
      'signing key',
      'consent screen',
      'role',
      'audit log',
    ],
    verbs: [
      'authenticate',
      'authorize',
      'rotate',
      'revoke',
      'federate',
      'sign',
      'verify',
      'provision',
    ],
    options: ['token_ttl', 'issuer', 'audience', 'allowed_scopes', 'mfa_required', 'jwks_uri'],
  },
  {
    name: 'observability',
    nouns: [
      'metric',
      'trace',
      'span',
      'log stream',
      'dashboard',
      'alert rule',
      'exporter',
      'sampling policy',
      'histogram',
      'collector',
    ],
    verbs: ['collect', 'sample', 'aggregate', 'export', 'annotate', 'alert', 'correlate', 'scrape'],
    options: ['scrape_interval', 'sample_rate', 'retention', 'endpoint', 'labels', 'flush_period'],
  },
  {
    name: 'imaging',
    nouns: [
      'thumbnail',
      'color profile',
      'crop box',
      'transformation',
      'watermark',
      'render queue',
      'format',
      'pixel density',
      'asset',
      'variant',
    ],
    verbs: ['resize', 'crop', 'transcode', 'compress', 'sharpen', 'cache', 'render', 'convert'],
    options: ['quality', 'max_width', 'output_format', 'dpr', 'fit_mode', 'strip_metadata'],
  },
  {
    name: 'scheduling',
    nouns: [
      'job',
      'cron expression',
      'worker pool',
      'retry policy',
      'time zone',
      'lease',
      'backfill',
      'trigger',
      'run history',
      'calendar',
    ],
    verbs: ['schedule', 'trigger', 'pause', 'resume', 'backfill', 'retry', 'cancel', 'lease'],
    options: ['concurrency', 'max_retries', 'timezone', 'lease_seconds', 'jitter', 'catchup'],
  },
];

export const ADJECTIVES: readonly string[] = [
  'default',
  'optional',
  'incremental',
  'scoped',
  'durable',
  'idempotent',
  'regional',
  'shared',
  'isolated',
  'recommended',
  'deprecated',
  'experimental',
  'large',
  'small',
  'nested',
  'concurrent',
  'temporary',
  'persistent',
  'custom',
  'managed',
  'read-only',
  'verbose',
  'minimal',
  'secure',
];

export const SUBJECTS: readonly string[] = [
  'the client',
  'the server',
  'your application',
  'the scheduler',
  'the command-line tool',
  'the SDK',
  'each worker',
  'the control plane',
  'an administrator',
  'the gateway',
];

export const CONNECTORS: readonly string[] = [
  'before',
  'after',
  'while',
  'unless',
  'whenever',
  'as soon as',
  'even if',
  'until',
];

export const SECTION_HEADINGS: readonly string[] = [
  'Overview',
  'Prerequisites',
  'Installation',
  'Configuration',
  'Usage',
  'Examples',
  'Limitations',
  'Troubleshooting',
  'Best practices',
  'How it works',
  'Migration notes',
  'Performance',
  'Security considerations',
  'Next steps',
  'Reference',
];

export const SUB_HEADINGS: readonly string[] = [
  'Defaults',
  'Edge cases',
  'Error handling',
  'Retries',
  'Compatibility',
  'Quotas',
  'Common mistakes',
  'Environment variables',
  'Logging',
  'Testing locally',
];

export const TITLE_PATTERNS: readonly string[] = [
  'Configure {noun}s',
  'Working with {noun}s',
  'Understanding the {noun}',
  '{Verb} {a-noun}',
  'Manage {noun}s',
  '{noun} reference',
  'Troubleshoot {noun} errors',
  'Getting started with {noun}s',
  'Monitor {noun}s',
  'Migrate {noun}s',
  'Secure your {noun}s',
  'Tune {noun} performance',
  '{Verb} {noun}s in bulk',
  'Limits of the {noun}',
  'Automate {noun} tasks',
];

export const SECTIONS: readonly string[] = [
  'Guide',
  'Tutorials',
  'Reference',
  'Concepts',
  'Operations',
];

/** Words with non-ASCII letters, so charset mistakes are visible in extracted text. */
export const UNICODE_ASIDES: readonly string[] = [
  'a naïve approach',
  'the café example',
  'our Zürich region',
  'a façade over the API',
  'the über-configuration',
  'a résumé of the options',
  'the señor test account',
  'a coöperative lock',
];

export const PRODUCT_PREFIXES: readonly string[] = [
  'Nimbus',
  'Quill',
  'Harbor',
  'Lumen',
  'Cinder',
  'Atlas',
  'Beacon',
  'Fathom',
  'Juniper',
  'Kestrel',
  'Meridian',
  'Orchard',
  'Pylon',
  'Rivet',
  'Sable',
  'Tundra',
  'Vertex',
  'Willow',
  'Zephyr',
  'Basalt',
];

export const PRODUCT_SUFFIXES: readonly string[] = [
  'DB',
  'Stack',
  'Cloud',
  'Flow',
  'Works',
  'Kit',
  'Hub',
  'Base',
  'Grid',
  'Line',
];
