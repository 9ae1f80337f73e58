import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { Request } from 'express';
import type { Principal } from '@app/auth';
import { GatewayError, GatewayErrorCode } from '../errors';
import { GatewayConfig } from '../config/gateway.config';
import { assertScope } from '../keys/key-scopes';

/**
 * `/v1/images/edits`: the key's vision scope and the upload's total size (AI_MEDIA_MAX_EDIT_BYTES, by its
 * Content-Length) are checked here because Nest runs guards before interceptors, so a refused request is
 * answered before multer (FileFieldsInterceptor in vision.controller.ts) buffers a single file. Multipart is
 * not read by the JSON body limit (libs/platform/src/http/body-reader.ts), hence a length is required.
 */
@Injectable()
export class EditUploadGuard implements CanActivate {
  constructor(private readonly config: GatewayConfig) {}

  canActivate(context: ExecutionContext): boolean {
    const req = context.switchToHttp().getRequest<Request & { principal?: Principal }>();
    assertScope(req.principal, 'vision');
    if (!/^multipart\//i.test(req.headers['content-type'] ?? '')) return true;
    const header = req.headers['content-length'];
    if (header === undefined) throw new GatewayError(GatewayErrorCode.UploadLengthRequired);
    const max = this.config.AI_MEDIA_MAX_EDIT_BYTES;
    if (!/^\d+$/.test(header) || Number(header) > max)
      throw new GatewayError(GatewayErrorCode.UploadTooLarge, { maxBytes: max, setting: 'AI_MEDIA_MAX_EDIT_BYTES' });
    return true;
  }
}
