import { Inject, Injectable, Logger } from '@nestjs/common';
import { createHash, randomUUID } from 'crypto';
import { BusinessException, ErrorCode, fieldError, msg } from '@app/envelope';
import type { ObjectStorage, StoredObject } from '@app/storage';
import { isSafeKey } from '@app/storage';
import { MembershipConfig } from '../config/membership.config';
import { cleanOriginalName, detectType } from './file-type';
import { FilesRepository } from './files.repository';
import { MemberFile } from './member-file.entity';
import { OBJECT_STORAGE } from './files.tokens';

export interface UploadedBytes {
  buffer: Buffer;
  originalname?: string;
  size: number;
}

/** Stores member uploads under generated names after checking size and type on the bytes. */
@Injectable()
export class FilesService {
  private readonly allowed: Set<string>;
  private readonly logger = new Logger('Files');

  constructor(
    private readonly files: FilesRepository,
    @Inject(OBJECT_STORAGE) private readonly storage: ObjectStorage,
    private readonly config: MembershipConfig,
  ) {
    this.allowed = new Set(
      config.UPLOAD_ALLOWED_TYPES.split(',')
        .map((s) => s.trim().toLowerCase())
        .filter(Boolean),
    );
  }

  async upload(memberId: string, file: UploadedBytes | undefined): Promise<MemberFile> {
    if (!file || !file.buffer) {
      throw fieldError('file', 'fileRequired', 'a multipart/form-data part named "file" is required');
    }
    if (file.buffer.length > this.config.UPLOAD_MAX_BYTES) {
      throw new BusinessException(
        ErrorCode.PAYLOAD_TOO_LARGE,
        msg('files.tooLarge', { max: this.config.UPLOAD_MAX_BYTES }),
      );
    }
    if (file.buffer.length === 0) throw new BusinessException(ErrorCode.UNSUPPORTED_MEDIA_TYPE, msg('files.empty'));
    const type = await detectType(file.buffer);
    if (!type || !this.allowed.has(type.mime)) {
      throw new BusinessException(
        ErrorCode.UNSUPPORTED_MEDIA_TYPE,
        msg('files.typeNotAllowed', { allowed: [...this.allowed].join(', ') }),
      );
    }
    const quota = this.config.UPLOAD_MAX_BYTES_PER_MEMBER;
    const overQuota = () =>
      new BusinessException(ErrorCode.PAYLOAD_TOO_LARGE, msg('files.quotaExceeded', { max: quota }));
    // Every file costs a row and an object whatever its size: it counts at least UPLOAD_MIN_CHARGED_BYTES,
    // so the quota bounds the number of files too (a 1 GiB quota holds at most 262,144 of them, not 10^7).
    const charge = Math.max(file.buffer.length, this.config.UPLOAD_MIN_CHARGED_BYTES);
    // Refused before the bytes are written when already over; the record's transaction decides.
    if ((await this.files.usedBytes(memberId)) + charge > quota) throw overQuota();
    const now = new Date();
    const key = `${now.getUTCFullYear()}/${String(now.getUTCMonth() + 1).padStart(2, '0')}/${randomUUID().replace(/-/g, '')}.${type.ext}`;
    await this.storage.put(key, file.buffer, type.mime);
    let recorded: MemberFile | null;
    try {
      recorded = await this.files.insertWithinQuota(
        {
          memberId,
          filename: key,
          originalFilename: cleanOriginalName(file.originalname),
          size: file.buffer.length,
          contentType: type.mime,
          ext: type.ext,
          sha256: createHash('sha256').update(file.buffer).digest('hex'),
          storage: this.storage.name,
        },
        { quota, charge },
      );
    } catch (e) {
      await this.discard(key);
      throw e;
    }
    if (!recorded) {
      // A concurrent upload of the same member took the room: its bytes are not kept either.
      await this.discard(key);
      throw overQuota();
    }
    return recorded;
  }

  /** Deletes the bytes of an upload that was not recorded; a failure leaves an orphan, logged to be found. */
  private async discard(key: string): Promise<void> {
    await this.storage
      .delete(key)
      .catch((e: unknown) => this.logger.warn(`unrecorded upload ${key} not deleted: ${(e as Error).message}`));
  }

  /** The record of a public media path, or null: what a HEAD request is answered from, without the storage. */
  async describe(filename: string): Promise<MemberFile | null> {
    if (!isSafeKey(filename)) return null;
    return this.files.findByFilename(filename);
  }

  /** The record and bytes of a public media path, or null. */
  async open(filename: string): Promise<{ file: MemberFile; object: StoredObject } | null> {
    const file = await this.describe(filename);
    if (!file) return null;
    const object = await this.storage.get(filename);
    return object ? { file, object } : null;
  }
}
