import { createReadStream, promises as fs } from 'fs';
import { randomBytes } from 'crypto';
import * as path from 'path';
import { assertSafeKey, ObjectStorage, StoredObject } from './object-storage';

/** Files under one root directory (DATA_DIR/files); writes are atomic (temp file + rename). */
export class LocalDiskStorage implements ObjectStorage {
  readonly name = 'local';
  private readonly root: string;

  constructor(root: string) {
    this.root = path.resolve(root);
  }

  private resolve(key: string): string {
    assertSafeKey(key);
    const full = path.resolve(this.root, key);
    if (!full.startsWith(this.root + path.sep)) throw new Error('unsafe storage key');
    return full;
  }

  async put(key: string, body: Buffer, _contentType?: string): Promise<void> {
    const full = this.resolve(key);
    await fs.mkdir(path.dirname(full), { recursive: true });
    const tmp = `${full}.${randomBytes(6).toString('hex')}.tmp`;
    await fs.writeFile(tmp, body, { flag: 'wx', mode: 0o640 });
    await fs.rename(tmp, full);
  }

  async get(key: string): Promise<StoredObject | null> {
    const full = this.resolve(key);
    try {
      const stat = await fs.stat(full);
      if (!stat.isFile()) return null;
      return { body: createReadStream(full), size: stat.size };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
  }

  async stat(key: string): Promise<{ size: number } | null> {
    try {
      const stat = await fs.stat(this.resolve(key));
      return stat.isFile() ? { size: stat.size } : null;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
  }

  async delete(key: string): Promise<void> {
    await fs.rm(this.resolve(key), { force: true });
  }
}
