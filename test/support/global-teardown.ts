export default async function globalTeardown(): Promise<void> {
  const db = (globalThis as any).__embeddedPostgres;
  if (db) await db.stop();
}
