import { Controller, Get, HttpCode, Param, Post, Req, Res, UploadedFile, UseInterceptors } from '@nestjs/common';
import { ApiBody, ApiConsumes, ApiOperation, ApiProduces, ApiResponse, ApiTags } from '@nestjs/swagger';
import { FileInterceptor } from '@nestjs/platform-express';
import type { Request, Response } from 'express';
import { CurrentPrincipal, Principal, Public } from '@app/auth';
import { ApiEnvelope, BusinessException, ErrorCode, ErrorEnvelope, msg, RawResponse } from '@app/envelope';
import { clientLimitKey } from '@app/platform';
import { DownloadSlots, serveObject } from '@app/storage';
import { MembershipConfig } from '../config/membership.config';
import { isInlineImage } from './file-type';
import { FileUploadResponse } from './dtos/file-upload.dto';
import { UploadAdmission } from './upload-admission';
import { FilesService, UploadedBytes } from './files.service';
import { MemberFile } from './member-file.entity';

export function toUploadResponse(f: MemberFile): FileUploadResponse {
  return {
    id: f.id,
    url: `/files/${f.filename}`,
    filename: f.filename,
    originalFilename: f.originalFilename,
    size: f.size,
    contentType: f.contentType,
    ext: f.ext,
    sha256: f.sha256,
    createdTime: f.createdTime,
  };
}

/** Member upload: POST /api/v1/app/files. */
@ApiTags('Files')
@Controller('api/v1/app/files')
export class FilesController {
  constructor(private readonly files: FilesService) {}

  @Post()
  @HttpCode(200)
  // Admission first: the quota and this replica's upload slots are checked before multer reads the body.
  @UseInterceptors(UploadAdmission, FileInterceptor('file'))
  @ApiOperation({
    summary: 'Upload a file (multipart part "file"); type is checked on the bytes; limit UPLOAD_MAX_BYTES (10 MB)',
  })
  @ApiConsumes('multipart/form-data')
  @ApiBody({
    schema: { type: 'object', required: ['file'], properties: { file: { type: 'string', format: 'binary' } } },
  })
  @ApiEnvelope(FileUploadResponse)
  @ApiResponse({ status: 400, description: 'code 10000: no part named file', type: ErrorEnvelope })
  @ApiResponse({
    status: 408,
    description:
      'code 408: the body arrived slower than 16 KiB/s on average after its first 10 s (the connection is closed)',
    type: ErrorEnvelope,
  })
  @ApiResponse({
    status: 413,
    description:
      'code 413: file too large (UPLOAD_MAX_BYTES), or the member keeps UPLOAD_MAX_BYTES_PER_MEMBER of files already',
    type: ErrorEnvelope,
  })
  @ApiResponse({ status: 415, description: 'code 415: type not allowed (decided by the bytes)', type: ErrorEnvelope })
  @ApiResponse({
    status: 429,
    description:
      'code 429: two uploads of the member, or four from its network (IPv4 address, IPv6 /64), are still being received by this server (Retry-After)',
    type: ErrorEnvelope,
  })
  @ApiResponse({
    status: 503,
    description: 'code 503: this server is receiving 16 uploads already (Retry-After)',
    type: ErrorEnvelope,
  })
  async upload(
    @CurrentPrincipal() principal: Principal,
    @UploadedFile() file: UploadedBytes | undefined,
  ): Promise<FileUploadResponse> {
    return toUploadResponse(await this.files.upload(principal.id, file));
  }
}

/** Public media: GET /files/{generated name}, the `url` returned by the upload. */
@ApiTags('Files')
@Controller('files')
export class MediaController {
  constructor(
    private readonly files: FilesService,
    private readonly config: MembershipConfig,
    private readonly downloads: DownloadSlots,
  ) {}

  @Public()
  @RawResponse()
  @Get('*path')
  @ApiOperation({
    summary: 'Serve an uploaded file (images inline, everything else as attachment; nosniff)',
    description: 'HEAD answers the same headers from the file record, without reading the stored bytes.',
  })
  @ApiProduces('application/octet-stream')
  @ApiResponse({ status: 200, description: 'The bytes, with the detected Content-Type' })
  @ApiResponse({ status: 404, description: 'code 404: no such file', type: ErrorEnvelope })
  @ApiResponse({
    status: 429,
    description: 'code 429: DOWNLOADS_PER_NETWORK downloads from the same network are in progress (Retry-After)',
    type: ErrorEnvelope,
  })
  @ApiResponse({
    status: 503,
    description: 'code 503: this server is serving DOWNLOADS_IN_FLIGHT_MAX downloads already (Retry-After)',
    type: ErrorEnvelope,
  })
  async serve(@Param('path') path: string | string[], @Req() req: Request, @Res() res: Response): Promise<void> {
    const name = Array.isArray(path) ? path.join('/') : path;
    const notFound = () => new BusinessException(ErrorCode.NOT_FOUND, msg('files.notFound'));
    // Express answers HEAD with this handler: the record says it all, and opening the bytes would have the storage
    // send the whole object for Node to discard (an S3 GetObject drained at full speed per HEAD).
    if (req.method === 'HEAD') {
      const file = await this.files.describe(name);
      if (!file) throw notFound();
      fileHeaders(res, file, file.size);
      res.end();
      return;
    }
    this.admit(req, res);
    const found = await this.files.open(name);
    if (!found) throw notFound();
    const { file, object } = found;
    fileHeaders(res, file, object.size ?? file.size);
    serveObject(object, res, this.config.REQUEST_TIMEOUT_MS);
  }

  /** A slot of the replica's downloads (download-slots.ts), given back when the answer ends, or 429/503. */
  private admit(req: Request, res: Response): void {
    const refused = this.downloads.take(clientLimitKey(req, this.config.RATE_LIMIT_IPV6_PREFIX), res);
    if (refused === 'network')
      throw new BusinessException(ErrorCode.TOO_MANY_REQUESTS, msg('files.downloadsFromNetwork'), {
        retryAfterSeconds: 1,
      });
    if (refused === 'replica')
      throw new BusinessException(ErrorCode.SERVICE_UNAVAILABLE, msg('files.downloadsBusy'), { retryAfterSeconds: 1 });
  }
}

/** The headers of a stored file's answer, alike for GET and HEAD. */
function fileHeaders(res: Response, file: MemberFile, size: number): void {
  const inline = isInlineImage(file.contentType);
  res.setHeader('Content-Type', file.contentType);
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('Content-Security-Policy', "default-src 'none'; sandbox");
  res.setHeader('Cache-Control', 'public, max-age=31536000, immutable');
  res.setHeader('Content-Length', String(size));
  res.setHeader(
    'Content-Disposition',
    `${inline ? 'inline' : 'attachment'}; filename="${asciiName(file)}"; filename*=UTF-8''${encodeURIComponent(file.originalFilename)}`,
  );
}

function asciiName(f: MemberFile): string {
  const ascii = f.originalFilename.replace(/[^\x20-\x7e]|["\\]/g, '_');
  return ascii || `file.${f.ext}`;
}
