import { Controller, Get, Query, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiProduces, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { AuditLogPage, AuditLogReader, ExportAuditLogQuery, ListAuditLogQuery, writeAuditExport } from '@app/audit';
import { Roles } from '@app/auth';
import { ApiEnvelope, ErrorEnvelope } from '@app/envelope';

/** The membership audit log (admins): site settings, admin bootstrap and CLI runs, lockouts, factor changes, webhooks. */
@ApiTags('Audit log')
@Controller('api/v1/admin/audit-log')
export class AuditLogController {
  constructor(private readonly reader: AuditLogReader) {}

  @Get()
  @Roles('viewer')
  @ApiOperation({
    summary: 'List the audit log, newest first (admin)',
    description: 'Filters combine; `next_cursor` fetches the next (older) page.',
  })
  @ApiEnvelope(AuditLogPage)
  @ApiResponse({ status: 400, description: 'code 10000: bad filter or cursor', type: ErrorEnvelope })
  @ApiResponse({ status: 401, description: 'code 401: no or bad token', type: ErrorEnvelope })
  @ApiResponse({ status: 403, description: 'code 403: not an admin', type: ErrorEnvelope })
  list(@Query() q: ListAuditLogQuery): Promise<AuditLogPage> {
    return this.reader.list(q, q.limit ?? 50);
  }

  @Get('export')
  @Roles('viewer')
  @ApiOperation({
    summary: 'Export the audit log as CSV or NDJSON, streamed (admin)',
    description:
      'Not wrapped in the envelope. Same filters as the list, newest first, at most AUDIT_EXPORT_MAX_ROWS rows; when more match, `X-Next-Cursor` is the `cursor` of the next export.',
  })
  @ApiProduces('text/csv', 'application/x-ndjson')
  @ApiOkResponse({
    description: 'CSV with a header line, or one JSON entry per line',
    schema: {
      type: 'string',
      example:
        'id,time,actor_kind,actor_id,action,target_type,target_id,request_id,address,before,after\r\n7,2026-11-20T08:15:30.123Z,member,1,site_config.updated,site_config,,r-1,203.0.113.7,"{""site.name"":""Old""}","{""site.name"":""New""}"\r\n',
    },
  })
  @ApiResponse({ status: 400, description: 'code 10000: bad format, filter or cursor', type: ErrorEnvelope })
  @ApiResponse({ status: 403, description: 'code 403: not an admin', type: ErrorEnvelope })
  async export(@Query() q: ExportAuditLogQuery, @Res() res: Response): Promise<void> {
    await writeAuditExport(res, await this.reader.export(q, q.format));
  }
}
