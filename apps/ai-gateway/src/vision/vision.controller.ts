import { Body, Controller, HttpCode, Post, Req, Res, UploadedFiles, UseGuards, UseInterceptors } from '@nestjs/common';
import { FileFieldsInterceptor } from '@nestjs/platform-express';
import { ApiBody, ApiConsumes, ApiHeader, ApiOkResponse, ApiOperation, ApiProduces, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { CurrentPrincipal, Principal } from '@app/auth';
import { GatewayConfig } from '../config/gateway.config';
import { assertScope, shareOf } from '../keys/key-scopes';
import { ApiOpenAiErrors } from '../http/openai-error.doc';
import { requestIdOf } from '../http/request-id';
import { sendJson } from '../http/json-response';
import { Tokenizer } from '../tokenizer/tokenizer';
import { b64ImagesAnswer } from './images-answer';
import { SseResponse } from '../http/sse-response';
import {
  GenerateImageRequest,
  GenerateImageResponse,
  MAX_EDIT_IMAGES,
  OpenAiImageEditRequest,
  OpenAiImageGenerationRequest,
} from './dtos/generate-image.dto';
import { RecognizeImageRequest, RecognizeImageResponse } from './dtos/recognize-image.dto';
import { GenerateImageService, StoredGeneratedImage, UploadedImage } from './generate-image.service';
import { cdnBase } from './media-storage';
import { relayMediaEvents } from './media-stream';
import { EditUploadGuard } from './edit-upload.guard';
import { UploadAdmission } from '../http/upload-admission';
import { requestSignal } from './media-errors';
import { RecognizeImageService } from './recognize-image.service';
import { MediaModels } from './media-models';
import { GatewayError, GatewayErrorCode } from '../errors';
import { Metered } from '@app/platform';

const OPENAI_STYLES: Record<string, string | undefined> = { vivid: 'artistic', natural: 'realistic' };

/** How long an image answered by URL lives and how much of them a key keeps (generated-image-store.ts). */
const STORED_IMAGES_DOC =
  'An image answered by URL is deleted AI_IMAGES_RETENTION_HOURS (default 24) after it was generated; its URL then answers 404. ' +
  "A key keeps at most AI_IMAGES_MAX_BYTES_PER_KEY (default 1 GiB) of them: a call is held at its images' largest size (width x height x 4 bytes each), and one that does not fit is refused with 429 insufficient_quota before the upstream is called or anything is charged (b64_json answers are not stored and not counted).";

@ApiTags('vision')
@ApiHeader({ name: 'Authorization', description: 'Bearer <API_KEY>', required: true })
@Controller('v1')
export class VisionController {
  constructor(
    private readonly recognizeImage: RecognizeImageService,
    private readonly generateImage: GenerateImageService,
    private readonly config: GatewayConfig,
    private readonly mediaModels: MediaModels,
    private readonly tokenizer: Tokenizer,
  ) {}

  @Metered()
  @Post('vision/recognize')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Recognize labels, objects, text and faces in an image',
    description:
      'Served in-process: OCR (Chinese + English) by PaddleOCR, faces and COCO objects by Human (tfjs WASM); labels are the object classes found. ' +
      'Image URLs must resolve to public addresses (checked after DNS and on every redirect); size, time and pixel count are capped. ' +
      'Priced per requested feature: labels and faces 0.01 (image recognition), objects 0.02, text 0.01.',
  })
  @ApiBody({
    type: RecognizeImageRequest,
    examples: {
      url: { value: { image: 'https://example.com/receipt.jpg', features: ['text'], language: 'zh-CN' } },
      base64: { value: { image: 'data:image/png;base64,iVBORw0KGgo...', features: ['labels', 'objects', 'faces'] } },
    },
  })
  @ApiOkResponse({ type: RecognizeImageResponse })
  @ApiOpenAiErrors(400, 401, 403, 413, 415, 429, 503)
  recognize(
    @CurrentPrincipal() principal: Principal,
    @Body() body: RecognizeImageRequest,
    @Req() req: Request,
  ): Promise<RecognizeImageResponse> {
    assertScope(principal, 'vision');
    return this.recognizeImage.recognize(principal, body, requestIdOf(req), requestSignal(req));
  }

  @Metered()
  @Post('vision/generate')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Generate images from a prompt',
    description:
      'Calls the OpenAI-compatible images upstream (AI_IMAGES_BASE_URL; 503 when unset) with AI_IMAGES_MODEL as the media catalog names it, stores each image and answers URLs under {cdn_url}. ' +
      '0.10 yuan per 1024x1024 image (other sizes by pixel count), or the price the providers file gives that model. ' +
      STORED_IMAGES_DOC,
  })
  @ApiBody({
    type: GenerateImageRequest,
    examples: {
      one: { value: { prompt: 'A lighthouse on a cliff at dawn', size: '1024x1024', style: 'realistic', n: 1 } },
    },
  })
  @ApiOkResponse({ type: GenerateImageResponse })
  @ApiOpenAiErrors(400, 401, 403, 429, 502, 503, 504)
  async generate(
    @CurrentPrincipal() principal: Principal,
    @Body() body: GenerateImageRequest,
    @Req() req: Request,
  ): Promise<GenerateImageResponse> {
    assertScope(principal, 'vision');
    // AI_IMAGES_MODEL's catalog entry: its upstream name, whether it takes response_format, its price.
    const model = this.mediaModels.resolve('image');
    const images = await this.generateImage.generate(
      principal,
      { prompt: body.prompt, size: body.size ?? '1024x1024', n: body.n ?? 1, style: body.style, model },
      requestIdOf(req),
      requestSignal(req),
    );
    return GenerateImageService.response(images, cdnBase(this.config, req));
  }

  @Metered()
  @Post('images/generations')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Generate images (OpenAI-compatible alias of /v1/vision/generate)',
    description:
      '`model` names an image model of the media catalog (dall-e-2, dall-e-3, gpt-image-1, or the providers file `mediaModels`; unknown: 404), sent under its upstream name at its price. ' +
      "`size` auto and the fields the model takes (dall-e-3: quality; gpt-image-1: quality, background, output_format, output_compression, moderation) are passed upstream; another model's field is a 400 naming it. " +
      '`response_format` url (default) or b64_json; `style` vivid/natural maps to artistic/realistic. ' +
      STORED_IMAGES_DOC +
      ' ' +
      '`stream: true` with `partial_images` (GPT image models): server-sent events image_generation.partial_image and image_generation.completed forwarded from the upstream with their b64_json (nothing stored); billed for the completed images when the stream ends (a client that leaves early pays the hold; a stream cut after completed images is charged for them).',
  })
  @ApiBody({
    type: OpenAiImageGenerationRequest,
    examples: {
      gptImage: {
        value: {
          model: 'gpt-image-1',
          prompt: 'A lighthouse at dawn',
          size: 'auto',
          quality: 'high',
          background: 'transparent',
          output_format: 'webp',
          output_compression: 80,
          moderation: 'low',
          n: 1,
        },
      },
      stream: {
        value: {
          model: 'gpt-image-1',
          prompt: 'A lighthouse at dawn',
          size: '1024x1024',
          quality: 'low',
          stream: true,
          partial_images: 2,
        },
      },
    },
  })
  @ApiProduces('application/json', 'text/event-stream')
  @ApiOpenAiErrors(400, 401, 403, 404, 429, 502, 503, 504)
  async openAiGenerate(
    @CurrentPrincipal() principal: Principal,
    @Body() body: OpenAiImageGenerationRequest,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    assertScope(principal, 'vision');
    const style = body.style ? (OPENAI_STYLES[body.style] ?? body.style) : undefined;
    const model = this.mediaModels.resolve('image', body.model);
    const extra = {
      quality: body.quality,
      background: body.background,
      output_format: body.output_format,
      output_compression: body.output_compression,
      moderation: body.moderation,
    };
    const input = {
      prompt: body.prompt,
      size: body.size ?? '1024x1024',
      n: body.n ?? 1,
      style,
      model,
      extra,
      partialImages: body.partial_images,
      responseFormat: body.response_format,
    };
    if (body.stream) {
      if (style)
        throw new GatewayError(GatewayErrorCode.ImageParameterUnsupported, { name: 'style', model: model.name });
      const stream = await this.generateImage.stream(
        principal,
        input,
        'generation',
        requestIdOf(req),
        requestSignal(req),
      );
      await relayMediaEvents(new SseResponse(res, this.config.REQUEST_TIMEOUT_MS), stream);
      return;
    }
    const images = await this.generateImage.generate(principal, input, requestIdOf(req), requestSignal(req));
    await this.sendImages(res, principal, images, body.response_format, req);
  }

  @Metered()
  @Post('images/edits')
  @HttpCode(200)
  // Scope and total upload size before multer reads any file (edit-upload.guard.ts), then the key's and the
  // replica's upload slots (http/upload-admission.ts).
  @UseGuards(EditUploadGuard)
  @UseInterceptors(
    UploadAdmission,
    FileFieldsInterceptor([
      { name: 'image', maxCount: MAX_EDIT_IMAGES },
      { name: 'image[]', maxCount: MAX_EDIT_IMAGES },
      { name: 'mask', maxCount: 1 },
    ]),
  )
  @ApiConsumes('multipart/form-data')
  @ApiOperation({
    summary: 'Edit or extend images (OpenAI-compatible)',
    description:
      "multipart/form-data: `image` (or `image[]`; one to 16 files for GPT image models, one for dall-e-2), optional `mask` (PNG, the first image's dimensions), `prompt`, `model` (an image model of the media catalog; default AI_IMAGES_MODEL), `n`, `size`, `quality`, `response_format`, `background`, `output_format`, `output_compression`, `input_fidelity` (GPT image models), `stream` with `partial_images`. " +
      'Every file is checked before it is sent: at most AI_MEDIA_MAX_IMAGE_BYTES (413), PNG/JPEG/WebP by its bytes (415), at most AI_MEDIA_MAX_PIXELS by its header (a decompression bomb is a 400). ' +
      "Forwarded to the images upstream (AI_IMAGES_BASE_URL) as multipart; priced like a generation of that size, count and quality, plus the model's inputImagePrice per uploaded image (highFidelityInputImagePrice with input_fidelity high); answered like /v1/images/generations (url stored under /cdn, or b64_json), or as image_edit.* events with stream. " +
      STORED_IMAGES_DOC,
  })
  @ApiBody({
    type: OpenAiImageEditRequest,
    description: 'multipart/form-data; files in image / image[] and mask',
    examples: {
      one: {
        value: {
          image: '<photo.png>',
          prompt: 'Add a red hat',
          model: 'gpt-image-1',
          size: '1024x1024',
          quality: 'low',
        },
      },
      several: {
        value: {
          'image[]': ['<shirt.png>', '<logo.png>'],
          mask: '<mask.png>',
          prompt: 'Put the logo on the shirt',
          model: 'gpt-image-1',
          input_fidelity: 'high',
          output_format: 'webp',
        },
      },
    },
  })
  @ApiOkResponse({ description: 'created and data[] (url or b64_json), as /v1/images/generations' })
  @ApiProduces('application/json', 'text/event-stream')
  @ApiOpenAiErrors(400, 401, 403, 404, 408, 411, 413, 415, 429, 502, 503, 504)
  async openAiEdit(
    @CurrentPrincipal() principal: Principal,
    @UploadedFiles() files: Record<string, UploadedImage[] | undefined> | undefined,
    @Body() body: OpenAiImageEditRequest,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    assertScope(principal, 'vision');
    // OpenAI's JSON form names its images by URL or uploaded file id: the gateway stores no files and fetches
    // no images for an edit, so it takes the files themselves (docs/ai-gateway/engines.md, "Newer media operations and streams").
    if (body.images !== undefined) {
      throw new GatewayError(GatewayErrorCode.UnsupportedParameter, {
        message:
          'images (a JSON edit request with image URLs or file ids) is not supported: send multipart/form-data with the image files in image or image[] (and the mask as a file)',
        param: 'images',
      });
    }
    const model = this.mediaModels.resolve('image', body.model);
    const images = [...(files?.image ?? []), ...(files?.['image[]'] ?? [])];
    const extra = {
      quality: body.quality,
      background: body.background,
      output_format: body.output_format,
      output_compression: body.output_compression,
      input_fidelity: body.input_fidelity,
    };
    const input = {
      prompt: body.prompt,
      size: body.size ?? '1024x1024',
      n: body.n ?? 1,
      model,
      extra,
      images,
      mask: files?.mask?.[0],
      partialImages: body.partial_images,
      responseFormat: body.response_format,
    };
    if (body.stream) {
      const stream = await this.generateImage.stream(principal, input, 'edit', requestIdOf(req), requestSignal(req));
      await relayMediaEvents(new SseResponse(res, this.config.REQUEST_TIMEOUT_MS), stream);
      return;
    }
    const edited = await this.generateImage.edit(principal, input, requestIdOf(req), requestSignal(req));
    await this.sendImages(res, principal, edited, body.response_format, req);
  }

  /**
   * The images as URLs under {cdn_url}, or with b64_json as Buffer pieces encoded on the key's turns and
   * written a few hundred KB a turn (b64ImagesAnswer): ten large images are a 20 MB answer.
   */
  private async sendImages(
    res: Response,
    principal: Principal,
    images: StoredGeneratedImage[],
    format: string | undefined,
    req: Request,
  ): Promise<void> {
    const created = Math.floor(Date.now() / 1000);
    if (format === 'b64_json') {
      const pieces = await b64ImagesAnswer(created, images, this.tokenizer.pace(shareOf(principal)));
      sendJson(res, 200, null, undefined, pieces, this.config.REQUEST_TIMEOUT_MS);
      return;
    }
    const cdn = cdnBase(this.config, req);
    res.status(200).json({
      created,
      data: images.map((i) => ({ url: `${cdn}/${i.key}`, revised_prompt: i.revisedPrompt })),
    });
  }
}
