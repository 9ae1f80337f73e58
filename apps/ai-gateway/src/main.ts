import { startTracing } from '@app/platform/tracing';
startTracing('ai-gateway'); // first: instrumentation patches http, pg and undici as they load
import { runMain } from '@app/platform';
import { createGatewayApp } from './gateway.app';

void runMain(
  'ai-gateway',
  () => createGatewayApp(),
  (c) => c.AI_GATEWAY_PORT,
);
