import type { S3Client } from '@aws-sdk/client-s3';
import { Readable } from 'stream';
import { assertSafeKey, ObjectStorage, StoredObject } from './object-storage';

export interface S3StorageOptions {
  bucket: string;
  region: string;
  /** S3-compatible endpoint (MinIO, OSS, COS...); empty for AWS. */
  endpoint?: string;
  accessKeyId?: string;
  secretAccessKey?: string;
  /** Path-style addressing, needed by most self-hosted servers. */
  forcePathStyle?: boolean;
  /** Optional key prefix inside the bucket, e.g. "membership/". */
  prefix?: string;
  /**
   * Longest an S3 call may wait for its answer's head (a socket of its pool, the connection, the request sent), and
   * longest its socket may then go without a byte; past either the call fails. Default 30 s.
   */
  timeoutMs?: number;
  /**
   * Sockets of the pool that public downloads use (`get`, `stat`): writes and deletes have a pool of their own (the
   * SDK's 50), so downloads held by slow readers can never take the sockets uploads and sweeps need. Default 32.
   */
  downloadSockets?: number;
}

/** Sockets of the pool of writes and deletes (the SDK's default). */
const WRITE_SOCKETS = 50;

/** The AWS SDK loads when an S3 storage is created, not at boot: an app on local disk never pays for its memory. */
function s3(): typeof import('@aws-sdk/client-s3') {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded synchronously on first use, not at boot (see above)
  return require('@aws-sdk/client-s3') as typeof import('@aws-sdk/client-s3');
}

/** S3-compatible object storage, so several replicas serve the same files. */
export class S3Storage implements ObjectStorage {
  readonly name = 's3';
  /** Puts and deletes. */
  private readonly client: S3Client;
  /** Public downloads: GetObject and HeadObject, on a pool of their own. */
  private readonly downloads: S3Client;
  private readonly sdk = s3();
  private readonly prefix: string;

  constructor(private readonly options: S3StorageOptions) {
    if (!options.bucket) throw new Error('S3: bucket is required');
    this.prefix = options.prefix ? options.prefix.replace(/^\/+|\/+$/g, '') + '/' : '';
    // A write's answer comes after its whole body was sent (a 10 MB upload to a remote bucket may take longer than the
    // deadline): writes are cut by the idle timer only, which a server that stops reading or answering still meets.
    this.client = this.clientOf(WRITE_SOCKETS, undefined, false);
    // One attempt: a download's slot (download-slots.ts) is not held for the SDK's three attempts of a stuck server.
    this.downloads = this.clientOf(options.downloadSockets ?? 32, 1, true);
  }

  private clientOf(sockets: number, maxAttempts: number | undefined, answerDeadline: boolean): S3Client {
    const o = this.options;
    const timeoutMs = o.timeoutMs ?? 30_000;
    const pool = { maxSockets: sockets };
    return new this.sdk.S3Client({
      region: o.region || 'us-east-1',
      endpoint: o.endpoint || undefined,
      forcePathStyle: o.forcePathStyle ?? Boolean(o.endpoint),
      credentials:
        o.accessKeyId && o.secretAccessKey
          ? { accessKeyId: o.accessKeyId, secretAccessKey: o.secretAccessKey }
          : undefined,
      maxAttempts,
      // Deadlines that abort (@smithy/node-http-handler 4: requestTimeout alone only logs a warning unless
      // throwOnRequestTimeout is set, and the idle timer is socketTimeout): a download waiting for a socket of the pool
      // or for an answer fails after timeoutMs, and any call whose socket goes timeoutMs without a byte (an S3 body a
      // download stopped taking, a server that stopped sending or answering), so no stuck server holds a socket.
      requestHandler: {
        connectionTimeout: Math.min(5_000, timeoutMs),
        requestTimeout: timeoutMs,
        throwOnRequestTimeout: answerDeadline,
        socketTimeout: timeoutMs,
        httpAgent: pool,
        httpsAgent: pool,
      },
    });
  }

  private key(key: string): string {
    assertSafeKey(key);
    return this.prefix + key;
  }

  async put(key: string, body: Buffer, contentType: string): Promise<void> {
    await this.client.send(
      new this.sdk.PutObjectCommand({
        Bucket: this.options.bucket,
        Key: this.key(key),
        Body: body,
        ContentType: contentType,
        ContentLength: body.length,
      }),
    );
  }

  async get(key: string): Promise<StoredObject | null> {
    try {
      const out = await this.downloads.send(
        new this.sdk.GetObjectCommand({ Bucket: this.options.bucket, Key: this.key(key) }),
      );
      if (!out.Body) return null;
      return { body: out.Body as Readable, size: out.ContentLength };
    } catch (err) {
      if (isMissing(err)) return null;
      throw err;
    }
  }

  async stat(key: string): Promise<{ size: number } | null> {
    try {
      const out = await this.downloads.send(
        new this.sdk.HeadObjectCommand({ Bucket: this.options.bucket, Key: this.key(key) }),
      );
      return { size: out.ContentLength ?? 0 };
    } catch (err) {
      if (isMissing(err)) return null;
      throw err;
    }
  }

  async delete(key: string): Promise<void> {
    await this.client.send(new this.sdk.DeleteObjectCommand({ Bucket: this.options.bucket, Key: this.key(key) }));
  }

  destroy(): void {
    this.client.destroy();
    this.downloads.destroy();
  }
}

function isMissing(err: unknown): boolean {
  const e = err as { name?: string; $metadata?: { httpStatusCode?: number } };
  return e.name === 'NoSuchKey' || e.name === 'NotFound' || e.$metadata?.httpStatusCode === 404;
}
