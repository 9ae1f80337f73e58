import type { INestApplicationContext } from '@nestjs/common';
import { WsAdapter } from '@nestjs/platform-ws';
import type { WebSocket } from 'ws';

/**
 * The WebSocket adapter with a frame limit from the configuration: `ws` refuses a message past
 * `maxPayload` from its frame header (close 1009) before buffering it. The speech stream's key arrives in
 * its first message, so a socket starts with the small limit of a stranger's body (PUBLIC_BODY_LIMIT_BYTES):
 * that is all a replica holds and parses per socket before a key is checked. Once its config is accepted,
 * the session raises its own socket's limit (raiseMessageLimit) to twice AI_STREAM_MAX_MESSAGE_BYTES;
 * messages up to that still reach the session, which answers them with its own error (message_too_large,
 * close 4009).
 */
export class BoundedWsAdapter extends WsAdapter {
  constructor(
    app: INestApplicationContext,
    private readonly firstMessageBytes: number,
  ) {
    super(app);
  }

  override create(
    port: number,
    options: Record<string, unknown> & { maxPayload?: number } = {},
  ): ReturnType<WsAdapter['create']> {
    const maxPayload = Math.min(options.maxPayload ?? Infinity, this.firstMessageBytes);
    return super.create(port, { ...options, maxPayload });
  }
}

/**
 * Raises one socket's message limit (checked by `ws` from each frame header, close 1009). `ws` takes the
 * limit once per socket, from the server; its receiver reads it per frame, so the field is set there
 * (ws 8, lib/receiver.js). Called synchronously from the message handler: `ws` emits a message before it
 * reads the next frame's header, so a frame sent right behind the config is measured against the new limit.
 */
export function raiseMessageLimit(ws: WebSocket, bytes: number): void {
  const receiver = (ws as unknown as { _receiver?: { _maxPayload?: number } })._receiver;
  if (receiver && typeof receiver._maxPayload === 'number')
    receiver._maxPayload = Math.max(receiver._maxPayload, bytes);
}
