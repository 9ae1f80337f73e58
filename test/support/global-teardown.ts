import * as fs from 'fs';

export default async function globalTeardown(): Promise<void> {
  const embedded = (globalThis as any).__embeddedPostgres;
  if (!embedded) return;
  await embedded.db.stop();
  fs.rmSync(embedded.dataDir, { recursive: true, force: true });
}
