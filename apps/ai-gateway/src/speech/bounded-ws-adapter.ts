import type { INestApplicationContext } from '@nestjs/common';
import { WsAdapter } from '@nestjs/platform-ws';

/**
 * The WebSocket adapter with a frame limit from the configuration: `ws` refuses a frame past
 * `maxPayload` from its header (close 1009) before buffering it. The speech stream's key arrives in its
 * first message, so this bounds what a stranger can make a replica hold per socket. Messages up to twice
 * AI_STREAM_MAX_MESSAGE_BYTES still reach the session, which answers them with its own error
 * (message_too_large, close 4009).
 */
export class BoundedWsAdapter extends WsAdapter {
  constructor(
    app: INestApplicationContext,
    private readonly maxPayload: number,
  ) {
    super(app);
  }

  override create(
    port: number,
    options: Record<string, unknown> & { maxPayload?: number } = {},
  ): ReturnType<WsAdapter['create']> {
    return super.create(port, { ...options, maxPayload: Math.min(options.maxPayload ?? Infinity, this.maxPayload) });
  }
}
