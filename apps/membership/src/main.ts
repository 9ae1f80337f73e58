import { startTracing } from '@app/platform/tracing';
startTracing('membership'); // first: instrumentation patches http, pg and undici as they load
import { normalizePrefix, runMain } from '@app/platform';
import { createMembershipApp } from './membership.app';

void runMain(
  'membership',
  () => createMembershipApp(),
  (c) => c.MEMBERSHIP_PORT,
  (c) => normalizePrefix(c.CONTEXT_PATH),
);
