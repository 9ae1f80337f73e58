// A gateway fixture whose media operations (transcriptions, translations, images, moderations) go to the
// fake media upstream of ./media-upstream.ts: the settings and the providers file entries the media suites
// and the conformance suite share.
import type { Clock } from '@app/platform';
import { GatewayFixture, providersDoc, startGatewayFixture } from '../gateway-fixture';
import { MediaUpstream } from './media-upstream';

type Doc = ReturnType<typeof providersDoc> & Record<string, unknown>;

/**
 * Starts the gateway with the media upstream configured. `env` adds settings; `doc` may change the
 * providers file after the media entries are in (a moderation deployment on the media upstream, and
 * prices of omni-moderation-latest, whisper-1 and gpt-image-1 by quality, and gpt-image-1-inputs pricing an edit's input images).
 * `opts.clock`: the app's Clock (a test moves it).
 */
export async function startMediaGateway(
  media: MediaUpstream,
  env: Record<string, string> = {},
  doc: (d: Doc) => Doc = (d) => d,
  opts: { clock?: Clock } = {},
): Promise<GatewayFixture> {
  // The moderation deployment names its key by environment variable, as every deployment does.
  process.env.FAKE_MEDIA_KEY = media.apiKey;
  return startGatewayFixture(
    {
      AI_TRANSCRIBE_BASE_URL: media.url,
      AI_TRANSCRIBE_API_KEY: media.apiKey,
      AI_IMAGES_BASE_URL: media.url,
      AI_IMAGES_API_KEY: media.apiKey,
      ...env,
    },
    ({ openai, backup, anthropic }) => {
      const base = providersDoc(openai, backup, anthropic);
      return doc({
        ...base,
        // Moderations go to OpenAI-type deployments listing the model; here the fake media upstream.
        deployments: [
          ...base.deployments,
          {
            name: 'moderator',
            type: 'openai',
            baseUrl: media.url,
            apiKeyEnv: 'FAKE_MEDIA_KEY',
            timeoutMs: 5000,
            models: ['omni-moderation-latest'],
          },
        ],
        mediaModels: {
          'omni-moderation-latest': { price: 0.01 },
          'whisper-1': { price: 0.6 },
          'gpt-image-1': { qualityPrices: { low: 0.02, high: 0.3 } },
          // gpt-image-1 with its input images priced (an edit's images, more with input_fidelity high).
          'gpt-image-1-inputs': {
            kind: 'image',
            upstream: 'gpt-image-1',
            fields: ['quality', 'background', 'output_format', 'output_compression', 'moderation'],
            responseFormat: false,
            price: 0.02,
            inputImagePrice: 0.01,
            highFidelityInputImagePrice: 0.05,
          },
        },
      });
    },
    opts,
  );
}
