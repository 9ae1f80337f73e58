import { Controller, Get, Param, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Roles } from '@app/auth';
import { ApiOpenAiErrors } from '../http/openai-error.doc';
import { ApiKeysService } from '../keys/api-keys.service';
import { KeyCallsPage, KeyCallsQuery } from './dtos/key-calls.dto';
import { decodeCallsCursor, encodeCallsCursor } from './key-calls.cursor';
import { LedgerRepository } from './ledger.repository';
import { UsageRepository } from './usage.repository';

/** A key's last calls from the usage ledger (metadata only), for the console's key page. */
@ApiTags('admin')
@Controller('admin/keys')
export class KeyCallsController {
  constructor(
    private readonly usage: UsageRepository,
    private readonly ledger: LedgerRepository,
    private readonly keys: ApiKeysService,
  ) {}

  @Get(':id/calls')
  @Roles('viewer')
  @ApiOperation({
    summary: "A key's calls, newest first (server-paginated)",
    description: '`next_cursor` fetches the next (older) page. Metadata only: no prompt or answer is kept.',
  })
  @ApiOkResponse({ type: KeyCallsPage })
  @ApiOpenAiErrors(400, 401, 403, 404)
  async list(@Param('id') id: string, @Query() q: KeyCallsQuery): Promise<KeyCallsPage> {
    await this.keys.get(id);
    // This replica's calls of the key still in the write buffer are in the answer too.
    await this.ledger.flushFor(id);
    const limit = q.limit ?? 50;
    const rows = await this.usage.calls(
      id,
      limit + 1,
      q.cursor ? (decodeCallsCursor(q.cursor) ?? undefined) : undefined,
    );
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return {
      object: 'list',
      data: page.map((r) => ({
        id: r.id,
        created_at: new Date(r.at).toISOString(),
        endpoint: r.endpoint,
        model: r.model,
        provider: r.provider,
        status: r.status,
        http_status: r.http_status,
        error: r.error,
        prompt_tokens: r.prompt_tokens,
        completion_tokens: r.completion_tokens,
        cost_yuan: r.cost_yuan,
        latency_ms: r.latency_ms,
        request_id: r.request_id,
      })),
      next_cursor: rows.length > limit ? encodeCallsCursor({ at: last.at, id: last.id }) : null,
    };
  }
}
