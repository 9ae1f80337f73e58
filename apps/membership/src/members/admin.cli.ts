/**
 * `npm run admin:create -- <account> [--reset-password]`: creates the first admin on the configured
 * database (`--reset-password` sets the password of an existing admin of that name). A member who is
 * not an admin is never promoted by name: the command fails (exit 1) and says so. The password is read
 * from ADMIN_PASSWORD or, when unset, from the first line of standard input, never from the command line.
 */
import { userInfo } from 'os';
import { Readable } from 'stream';
import { cliContext } from '@app/audit';
import { createMembershipApp } from '../membership.app';
import { AdminBootstrapService } from './admin-bootstrap.service';

async function firstLine(input: Readable): Promise<string> {
  let data = '';
  for await (const chunk of input as AsyncIterable<string | Buffer>) {
    data += chunk.toString();
    if (data.includes('\n')) break;
  }
  return data.split(/\r?\n/)[0];
}

/** Who ran the command, for the audit log; null where the platform cannot say (no passwd entry in a container). */
function operatingSystemUser(): string | null {
  try {
    return userInfo().username;
  } catch {
    return null;
  }
}

export async function createAdminCommand(
  args: string[],
  env: Record<string, string | undefined>,
  input: Readable,
): Promise<string> {
  const account = args.find((a) => !a.startsWith('-'));
  if (!account || !/^[a-zA-Z0-9_]{4,20}$/.test(account))
    throw new Error('usage: admin:create <username (4-20 letters, digits, _)> [--reset-password]');
  const password = env.ADMIN_PASSWORD || (await firstLine(input));
  if (!password || password.length < 8 || password.length > 128)
    throw new Error('the password must be 8 to 128 characters (ADMIN_PASSWORD or first line of stdin)');
  // Boot without the env bootstrap so only this command acts, and without the webhook delivery worker: a
  // command that exits in a moment would claim the running service's due deliveries and leave them leased
  // (WEBHOOK_LEASE_MS) when it stops; the events it enqueues are sent by the service's workers.
  const { app, database } = await createMembershipApp({
    ...env,
    ADMIN_ACCOUNT: '',
    ADMIN_PASSWORD: '',
    WEBHOOK_WORKER: 'false',
  });
  try {
    await app.init();
    const bootstrap = app.get(AdminBootstrapService);
    const { member, created, revokedSessions } = await bootstrap.ensureAdmin(account, password, {
      resetPassword: args.includes('--reset-password'),
      ctx: cliContext(operatingSystemUser()),
    });
    const outcome = created
      ? `admin ${member.username} created (member id ${member.id})`
      : args.includes('--reset-password')
        ? `admin ${member.username} (id ${member.id}): password reset, ${revokedSessions} session(s) ended`
        : `admin ${member.username} (id ${member.id}) already exists; nothing changed`;
    const note = bootstrap.secondFactorNote();
    return note ? `${outcome}\nnote: ${note}` : outcome;
  } finally {
    await app.close();
    await database.stop();
  }
}

if (require.main === module) {
  createAdminCommand(process.argv.slice(2), process.env, process.stdin)
    .then((msg) => {
      process.stdout.write(`${msg}\n`);
      process.exit(0);
    })
    .catch((err) => {
      process.stderr.write(`${err instanceof Error ? err.message : err}\n`);
      process.exit(1);
    });
}
