import 'reflect-metadata';
import { IsBoolean, IsIn, IsInt, IsOptional, IsString, Matches, Max, Min, MinLength } from 'class-validator';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** Variables both apps read. Each app's config class extends this one. */
export class BaseConfig {
  /** development | test | production. Production refuses development defaults. */
  @IsIn(['development', 'test', 'production'])
  NODE_ENV: string = 'development';

  /** Interface to listen on; 0.0.0.0 in containers. */
  @IsString()
  HOST: string = '127.0.0.1';

  /** PostgreSQL URL; unset means the embedded PostgreSQL under DATA_DIR. */
  @IsOptional()
  @Matches(/^postgres(ql)?:\/\/\S+$/, { message: 'must be a postgres:// URL' })
  DATABASE_URL?: string;

  /** Longest a statement of the database pool runs (statement_timeout per connection; a cut one answers 503); 0: none; migrations run without it. */
  @IsInt()
  @Min(0)
  @Max(3_600_000)
  DATABASE_STATEMENT_TIMEOUT_MS: number = 15_000;

  /** Embedded database files, uploads, generated media, the development JWT secret. */
  @IsString()
  DATA_DIR: string = './data';

  /** Port of the embedded PostgreSQL (only when DATABASE_URL is unset). */
  @IsInt()
  @Min(1)
  @Max(65535)
  EMBEDDED_PG_PORT: number = 54329;

  /** Run pending migrations at boot; defaults to true outside production. */
  @IsOptional()
  @IsBoolean()
  MIGRATIONS_RUN?: boolean;

  /** Redis URL for shared short-lived state (rate limits, states, caches); unset means PostgreSQL. */
  @IsOptional()
  @Matches(/^rediss?:\/\/\S+$/, { message: 'must be a redis:// or rediss:// URL' })
  REDIS_URL?: string;

  /** Prefix of every Redis key; default `mp:<database name>:` so deployments sharing one Redis never share state. */
  @IsOptional()
  @Matches(/^[A-Za-z0-9:_.-]{1,64}$/, { message: 'must be 1-64 characters of letters, digits, : _ . -' })
  REDIS_KEY_PREFIX?: string;

  /** fatal | error | warn | info | debug | trace | silent */
  @IsIn(LOG_LEVELS)
  LOG_LEVEL: string = 'info';

  /** Comma-separated allowed CORS origins (`*` for any); empty disables CORS. */
  @IsOptional()
  @IsString()
  CORS_ORIGINS?: string;

  /** Express `trust proxy` setting: which proxies' X-Forwarded-For to believe (e.g. loopback, 10.0.0.0/8, or a hop count). */
  @IsString()
  TRUST_PROXY: string = 'loopback';

  /** Largest JSON or form body accepted on a route that needs credentials, in bytes (after decompression). */
  @IsInt()
  @Min(1024)
  BODY_LIMIT_BYTES: number = 1_048_576;

  /** Largest JSON or form body of a route open without credentials (login, register, send-code...) or of an unknown path, in bytes after decompression; a route's @BodyLimit wins. */
  @IsInt()
  @Min(1024)
  PUBLIC_BODY_LIMIT_BYTES: number = 16_384;

  /** Largest ratio of inflated to received bytes of a compressed JSON body (past 16 KiB inflated); more is refused with 413. */
  @IsInt()
  @Min(2)
  BODY_INFLATE_RATIO_MAX: number = 32;

  /**
   * Most body bytes one caller's JSON bodies hold at once in a replica while they are read (inflated bytes, counted
   * as they come): a member, a gateway key's project or key, a stranger's network. More is 429 before being read.
   */
  @IsInt()
  @Min(1024)
  BODY_BYTES_PER_CALLER_MAX: number = 4 * 1024 * 1024;

  /**
   * Most body bytes all JSON bodies being read hold at once in a replica (inflated, counted as they come); past it a
   * caller holding more than an equal share is refused 503. Membership's 512 Mi container (deploy/k8s) also holds its
   * baseline (~240 MB) and 16 uploads of 10 MB.
   */
  @IsInt()
  @Min(1024)
  BODY_BYTES_IN_FLIGHT_MAX: number = 64 * 1024 * 1024;

  /** Milliseconds a client has to send a whole request (headers and body; slower gets 408), and may stall taking a streamed answer or download before it is cut. */
  @IsInt()
  @Min(1000)
  REQUEST_TIMEOUT_MS: number = 30_000;

  /** Requests per minute per client IP across all routes (per-route limits are stricter). */
  @IsInt()
  @Min(1)
  RATE_LIMIT_PER_MINUTE: number = 600;

  /** Per-address limits count an IPv6 client by its network of this many bits (one subscriber usually holds a /64); IPv4 by its address. */
  @IsInt()
  @Min(32)
  @Max(128)
  RATE_LIMIT_IPV6_PREFIX: number = 64;

  /** Bearer token for /actuator/prometheus and detailed health (sensitive); unset leaves them open, so keep /actuator/* off public ingress. */
  @IsOptional()
  @IsString()
  @MinLength(16, { message: 'must be at least 16 characters' })
  MANAGEMENT_TOKEN?: string;

  /** Allow the embedded PostgreSQL (no DATABASE_URL) when NODE_ENV=production; refused by default. */
  @IsBoolean()
  EMBEDDED_DATABASE_IN_PRODUCTION: boolean = false;

  /** Milliseconds to wait for in-flight requests on SIGTERM before closing. */
  @IsInt()
  @Min(0)
  SHUTDOWN_GRACE_MS: number = 10_000;

  /** OTLP/HTTP collector base URL (e.g. http://otel-collector:4318); tracing is off when unset. Read by startTracing before boot. */
  @IsOptional()
  @Matches(/^https?:\/\/\S+$/, { message: 'must be an http(s) URL' })
  OTEL_EXPORTER_OTLP_ENDPOINT?: string;

  /** `true` turns every OpenTelemetry export off (traces, and the gateway's OTLP metrics) whatever endpoint is set. */
  @IsBoolean()
  OTEL_SDK_DISABLED: boolean = false;

  /** Where files live (membership uploads, generated media): `local` (under DATA_DIR) or `s3` (S3-compatible, for several replicas). */
  @IsIn(['local', 's3'])
  STORAGE_DRIVER: string = 'local';

  /** S3 bucket (STORAGE_DRIVER=s3). */
  @IsOptional()
  @IsString()
  S3_BUCKET?: string;

  /** S3 region. */
  @IsString()
  S3_REGION: string = 'us-east-1';

  /** S3-compatible endpoint (MinIO, OSS, COS); empty for AWS. */
  @IsOptional()
  @IsString()
  S3_ENDPOINT?: string;

  /** S3 access key id. */
  @IsOptional()
  @IsString()
  S3_ACCESS_KEY_ID?: string;

  /** S3 secret access key (sensitive). */
  @IsOptional()
  @IsString()
  S3_SECRET_ACCESS_KEY?: string;

  /** Path-style bucket addressing (most self-hosted servers need it). */
  @IsBoolean()
  S3_FORCE_PATH_STYLE: boolean = true;

  /** Key prefix inside the bucket. */
  @IsOptional()
  @IsString()
  S3_PREFIX?: string;

  /** Public downloads (membership /files, gateway /cdn/images) one client network (IPv4 address, IPv6 RATE_LIMIT_IPV6_PREFIX network) may take at once from a replica; more get 429. */
  @IsInt()
  @Min(1)
  DOWNLOADS_PER_NETWORK: number = 4;

  /** Public downloads a replica serves at once, all clients together (more get 503), and the sockets of its S3 download pool, apart from the 50 of writes. */
  @IsInt()
  @Min(1)
  @Max(1000)
  DOWNLOADS_IN_FLIGHT_MAX: number = 32;

  /** Days the audit log keeps a row (libs/audit); 0 keeps rows forever. Swept hourly by every replica. */
  @IsInt()
  @Min(0)
  AUDIT_RETENTION_DAYS: number = 365;

  /** Most rows one audit log export (format=csv|ndjson) answers; the X-Next-Cursor header says where the next one starts. */
  @IsInt()
  @Min(1)
  @Max(1_000_000)
  AUDIT_EXPORT_MAX_ROWS: number = 10_000;

  /** Key that encrypts webhook endpoint secrets at rest (sensitive; libs/webhooks). Unset: derived from the app's development secret outside production; required in production to register endpoints. */
  @IsOptional()
  @IsString()
  @MinLength(16, { message: 'must be at least 16 characters' })
  WEBHOOK_ENCRYPTION_SECRET?: string;

  /** Comma-separated CIDRs webhook deliveries may reach besides public addresses (tests, private deployments); empty in production. */
  @IsOptional()
  @IsString()
  WEBHOOK_ALLOWED_CIDRS?: string;

  /** Milliseconds one webhook delivery may take (connect, answer and body) before it counts as failed. */
  @IsInt()
  @Min(100)
  @Max(60_000)
  WEBHOOK_TIMEOUT_MS: number = 10_000;

  /** Most bytes of a receiver's answer read (the rest is dropped; only the status decides). */
  @IsInt()
  @Min(0)
  @Max(1_048_576)
  WEBHOOK_MAX_RESPONSE_BYTES: number = 4096;

  /** Milliseconds a replica holds a claimed delivery; another replica retries it after that (a killed replica's delivery). Must exceed WEBHOOK_TIMEOUT_MS. */
  @IsInt()
  @Min(1000)
  WEBHOOK_LEASE_MS: number = 60_000;

  /** Milliseconds between the delivery worker's looks for due deliveries. */
  @IsInt()
  @Min(10)
  WEBHOOK_POLL_MS: number = 1000;

  /** First retry delay of a failed delivery in milliseconds; doubles each attempt (with jitter, at most an hour). */
  @IsInt()
  @Min(100)
  WEBHOOK_BACKOFF_BASE_MS: number = 10_000;

  /** Hours a delivery is retried before it fails for good and its endpoint is disabled. */
  @IsInt()
  @Min(1)
  @Max(720)
  WEBHOOK_RETRY_HOURS: number = 24;

  /** Days the webhook outbox keeps an event once all its deliveries finished (delivered, failed, or held for a disabled endpoint); swept at start and hourly by the delivery worker. */
  @IsInt()
  @Min(1)
  @Max(365)
  WEBHOOK_RETENTION_DAYS: number = 7;

  /** Run the webhook delivery worker on this replica. */
  @IsBoolean()
  WEBHOOK_WORKER: boolean = true;

  get isProduction(): boolean {
    return this.NODE_ENV === 'production';
  }

  /** Origins CORS allows: CORS_ORIGINS; an app adds the ones its own settings imply (the gateway: the console's). */
  corsOrigins(): string[] {
    return (this.CORS_ORIGINS ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
  }

  get migrationsRun(): boolean {
    return this.MIGRATIONS_RUN ?? !this.isProduction;
  }

  /** Cross-field rules; subclasses add theirs. */
  validateExtra(): string[] {
    const problems: string[] = [];
    if (this.STORAGE_DRIVER === 's3' && !this.S3_BUCKET) problems.push('S3_BUCKET: required when STORAGE_DRIVER=s3');
    if (this.WEBHOOK_LEASE_MS <= this.WEBHOOK_TIMEOUT_MS)
      problems.push(
        'WEBHOOK_LEASE_MS: must exceed WEBHOOK_TIMEOUT_MS (a delivery in flight must never be claimed by another replica)',
      );
    return problems;
  }
}
