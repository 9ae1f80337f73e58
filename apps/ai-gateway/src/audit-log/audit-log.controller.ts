import { Controller, Get, Query, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiProduces, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { AuditLogPage, AuditLogReader, ExportAuditLogQuery, ListAuditLogQuery, writeAuditExport } from '@app/audit';
import { Roles } from '@app/auth';
import { ApiOpenAiErrors } from '../http/openai-error.doc';

/** The gateway's audit log (ADMIN_TOKEN): who changed keys, projects and webhooks, when and from where. */
@ApiTags('admin')
@Roles('admin')
@Controller('admin/audit-log')
export class AuditLogController {
  constructor(private readonly reader: AuditLogReader) {}

  @Roles('viewer')
  @Get()
  @ApiOperation({
    summary: 'List the audit log, newest first',
    description: 'Filters combine; `next_cursor` fetches the next (older) page.',
  })
  @ApiOkResponse({ type: AuditLogPage })
  @ApiOpenAiErrors(400, 401, 403)
  list(@Query() q: ListAuditLogQuery): Promise<AuditLogPage> {
    return this.reader.list(q, q.limit ?? 50);
  }

  @Roles('viewer')
  @Get('export')
  @ApiOperation({
    summary: 'Export the audit log as CSV or NDJSON (streamed)',
    description:
      'Same filters as the list, newest first, at most AUDIT_EXPORT_MAX_ROWS rows; when more match, `X-Next-Cursor` is the `cursor` of the next export.',
  })
  @ApiProduces('text/csv', 'application/x-ndjson')
  @ApiOkResponse({
    description:
      'CSV (header id,time,actor_kind,actor_id,action,target_type,target_id,request_id,address,before,after) or one JSON entry per line',
    schema: {
      type: 'string',
      example:
        '{"id":"12","time":"2026-11-20T08:15:30.123Z","actor":{"kind":"admin-token","id":null},"action":"key.created","target":{"type":"api_key","id":"0b6f4a52-7d7e-4c1b-9a55-0a4c3f1d2e3f"},"before":null,"after":{"name":"demo"},"request_id":"r-1","address":"203.0.113.7"}\n',
    },
  })
  @ApiOpenAiErrors(400, 401, 403)
  async export(@Query() q: ExportAuditLogQuery, @Res() res: Response): Promise<void> {
    await writeAuditExport(res, await this.reader.export(q, q.format));
  }
}
