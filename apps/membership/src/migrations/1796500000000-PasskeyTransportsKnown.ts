import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Passkeys stored before their transports were filtered (factors/passkeys.service.ts knownTransports) keep only
 * the transports WebAuthn defines, each once, in their first order: a client could store any list it sent (an
 * audit stored 90 000 strings, ~1 MB a passkey, read back in every ceremony of the member).
 */
export class PasskeyTransportsKnown1796500000000 implements MigrationInterface {
  async up(q: QueryRunner): Promise<void> {
    await q.query(
      `UPDATE member_passkeys p
          SET transports = ARRAY(
                SELECT t FROM unnest(p.transports) WITH ORDINALITY AS u(t, n)
                 WHERE t IN ('ble', 'cable', 'hybrid', 'internal', 'nfc', 'smart-card', 'usb')
                 GROUP BY t ORDER BY min(n))
        WHERE NOT (p.transports <@ ARRAY['ble', 'cable', 'hybrid', 'internal', 'nfc', 'smart-card', 'usb']::text[])
           OR cardinality(p.transports) > 7`,
    );
  }

  async down(): Promise<void> {
    // What was dropped was never a transport: nothing to restore.
  }
}
