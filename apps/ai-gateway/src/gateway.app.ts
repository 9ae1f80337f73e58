import { Logger } from '@nestjs/common';
import { sendOpenAiError } from './errors';
import { AppDefinition, createApp, GenAiMetrics } from '@app/platform';
import { AppModule } from './app.module';
import { GatewayConfig } from './config/gateway.config';
import { gatewayTiming } from './http/gateway-timing';
import { rateLimitHeaders } from './http/rate-limit-headers';
import { BoundedWsAdapter } from './speech/bounded-ws-adapter';

export const gatewayApp: AppDefinition<GatewayConfig> = {
  name: 'ai-gateway',
  configClass: GatewayConfig,
  module: (config, url) => AppModule.forRoot(config, url),
  errorResponder: (error, req, res) => sendOpenAiError(error, req, res, new Logger('Errors')),
  edge: (app) => [gatewayTiming(app.get(GenAiMetrics)), rateLimitHeaders()],
  // Every route but health, docs and generated images needs a key: a stranger's body is never read.
  authenticateFirst: 'all',
  customize: (app, config) => {
    // A socket's first message (the speech stream's config, before its key is checked) is a stranger's body.
    const firstMessageBytes = Math.min(config.PUBLIC_BODY_LIMIT_BYTES, 2 * config.AI_STREAM_MAX_MESSAGE_BYTES);
    app.useWebSocketAdapter(new BoundedWsAdapter(app, firstMessageBytes));
  },
  swagger: {
    title: 'AI Gateway API',
    description:
      'OpenAI-compatible chat completions and embeddings, image recognition and generation, speech transcription and synthesis. ' +
      'Authenticate with `Authorization: Bearer <API_KEY>`; errors use the OpenAI shape `{"error": {"message", "type", "code", "param"}}`.',
    version: '1.0',
    bearerFormat: 'API key',
  },
};

export const createGatewayApp = (env: Record<string, string | undefined> = process.env) => createApp(gatewayApp, env);
