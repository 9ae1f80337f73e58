import { Body, Controller, HttpCode, Post, Req } from '@nestjs/common';
import { ApiBody, ApiHeader, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Request } from 'express';
import { CurrentPrincipal, Principal } from '@app/auth';
import { assertModel, assertScope } from '../keys/key-scopes';
import { ApiOpenAiErrors } from '../http/openai-error.doc';
import { requestIdOf } from '../http/request-id';
import { ModerationRequest, ModerationResponseDoc } from './dtos/moderation.dto';
import { requestSignal } from './media-errors';
import { MediaModels } from './media-models';
import { ModerateContentService } from './moderate-content.service';
import { Metered } from '@app/platform';

@ApiTags('moderations')
@ApiHeader({ name: 'Authorization', description: 'Bearer <API_KEY>', required: true })
@Controller('v1')
export class ModerationsController {
  constructor(
    private readonly moderateContent: ModerateContentService,
    private readonly mediaModels: MediaModels,
  ) {}

  @Metered()
  @Post('moderations')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Classify text and images as potentially harmful',
    description:
      "Forwarded to the providers file's OpenAI-type deployments that list the model (a moderation model of the media catalog: omni-moderation-latest by default, omni-moderation-2024-09-26, text-moderation-latest, text-moderation-stable, or `mediaModels` entries of kind moderation; none serving it: 503). " +
      "Needs the key scope `chat`. Priced per classified input (one per string, one for an array of parts) at the model's `price`; 0 unless the providers file sets one. " +
      'image_url parts: http(s) URLs on public addresses (checked after DNS and on every redirect) or data:image URLs, at most AI_MEDIA_MAX_IMAGE_BYTES for all images together (413) and AI_MEDIA_MAX_PIXELS each; the gateway fetches them (after the model is known to be served and the budget held) and sends the bytes upstream.',
  })
  @ApiBody({
    type: ModerationRequest,
    examples: {
      text: { value: { model: 'omni-moderation-latest', input: 'I want to hurt them.' } },
      texts: { value: { input: ['first text', 'second text'] } },
      multimodal: {
        value: {
          model: 'omni-moderation-latest',
          input: [
            { type: 'text', text: 'Is this fine?' },
            { type: 'image_url', image_url: { url: 'https://example.com/picture.png' } },
          ],
        },
      },
    },
  })
  @ApiOkResponse({ type: ModerationResponseDoc })
  @ApiOpenAiErrors(400, 401, 403, 404, 413, 415, 429, 502, 503, 504)
  moderate(
    @CurrentPrincipal() principal: Principal,
    @Body() body: ModerationRequest,
    @Req() req: Request,
  ): Promise<Record<string, unknown>> {
    const claims = assertScope(principal, 'chat');
    const model = this.mediaModels.resolve('moderation', body.model);
    assertModel(claims, model.name);
    return this.moderateContent.moderate(principal, body.input, model, requestIdOf(req), requestSignal(req));
  }
}
