import { once } from 'events';
import type { ServerResponse } from 'http';
import type { AuditExport } from './audit-log-reader.service';

/** Streams an export as it is read (a page of rows at a time), waiting for the client to drain. */
export async function writeAuditExport(res: ServerResponse, out: AuditExport): Promise<void> {
  res.statusCode = 200;
  res.setHeader('Content-Type', out.contentType);
  res.setHeader('Content-Disposition', `attachment; filename="${out.filename}"`);
  res.setHeader('Cache-Control', 'no-store');
  if (out.nextCursor) res.setHeader('X-Next-Cursor', out.nextCursor);
  res.setHeader('Access-Control-Expose-Headers', 'X-Next-Cursor, Content-Disposition');
  try {
    for await (const line of out.lines) {
      if (res.destroyed) return;
      if (!res.write(line)) await once(res, 'drain');
    }
    res.end();
  } catch (e) {
    // Headers are gone: all that is left is to cut the stream so the client sees it incomplete.
    res.destroy(e as Error);
  }
}
