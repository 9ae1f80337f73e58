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
}

/** The AWS SDK loads when an S3 storage is created, not at boot: an app on local disk never pays for its memory. */
function s3(): typeof import('@aws-sdk/client-s3') {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded synchronously on first use, not at boot (see above)
  return require('@aws-sdk/client-s3') as typeof import('@aws-sdk/client-s3');
}

/** S3-compatible object storage, so several replicas serve the same files. */
export class S3Storage implements ObjectStorage {
  readonly name = 's3';
  private readonly client: S3Client;
  private readonly sdk = s3();
  private readonly prefix: string;

  constructor(private readonly options: S3StorageOptions) {
    if (!options.bucket) throw new Error('S3: bucket is required');
    this.prefix = options.prefix ? options.prefix.replace(/^\/+|\/+$/g, '') + '/' : '';
    this.client = new this.sdk.S3Client({
      region: options.region || 'us-east-1',
      endpoint: options.endpoint || undefined,
      forcePathStyle: options.forcePathStyle ?? Boolean(options.endpoint),
      credentials:
        options.accessKeyId && options.secretAccessKey
          ? { accessKeyId: options.accessKeyId, secretAccessKey: options.secretAccessKey }
          : undefined,
      // Deadlines of its own: a storage server that stops answering fails the call (a connection in 5 s, then no
      // 30 s without a byte), not holds one of the pool's 50 sockets with the request waiting on it.
      requestHandler: { connectionTimeout: 5_000, requestTimeout: 30_000 },
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
      const out = await this.client.send(
        new this.sdk.GetObjectCommand({ Bucket: this.options.bucket, Key: this.key(key) }),
      );
      if (!out.Body) return null;
      return { body: out.Body as Readable, size: out.ContentLength };
    } catch (err) {
      const e = err as { name?: string; $metadata?: { httpStatusCode?: number } };
      if (e.name === 'NoSuchKey' || e.name === 'NotFound' || e.$metadata?.httpStatusCode === 404) return null;
      throw err;
    }
  }

  async delete(key: string): Promise<void> {
    await this.client.send(new this.sdk.DeleteObjectCommand({ Bucket: this.options.bucket, Key: this.key(key) }));
  }

  destroy(): void {
    this.client.destroy();
  }
}
