import type { BlockList } from 'net';
import { Agent, request } from 'undici';
import { AddressRefused, pinnedLookup, publicAddressesOf } from '@app/platform';

export interface DeliveryResult {
  /** The receiver's HTTP status, or null when no answer came. */
  status: number | null;
  /** Why it failed (no answer, guard, timeout), or null. */
  error: string | null;
}

/**
 * POSTs one signed delivery through the public-address guard (libs/platform/src/net/public-address.ts),
 * re-checked at every attempt since DNS answers change: no redirects followed, a deadline for the whole
 * exchange, and at most `maxResponseBytes` of the answer read (only the status decides).
 */
export async function sendDelivery(
  url: string,
  body: string,
  headers: Record<string, string>,
  limits: { allowed?: BlockList; timeoutMs: number; maxResponseBytes: number; signal?: AbortSignal },
): Promise<DeliveryResult> {
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    return { status: null, error: 'the endpoint URL is not valid' };
  }
  // One deadline for the whole delivery, the name's lookup included.
  const deadline = AbortSignal.any([AbortSignal.timeout(limits.timeoutMs), ...(limits.signal ? [limits.signal] : [])]);
  let addresses;
  try {
    addresses = await publicAddressesOf(target, { allowed: limits.allowed, signal: deadline });
  } catch (e) {
    return {
      status: null,
      error:
        e instanceof AddressRefused && e.reason === 'forbidden'
          ? 'refused: the endpoint address is not public'
          : deadline.aborted
            ? 'the endpoint name was not resolved in time'
            : 'the endpoint name did not resolve',
    };
  }
  const agent = new Agent({
    connect: { lookup: pinnedLookup(addresses), timeout: limits.timeoutMs },
    headersTimeout: limits.timeoutMs,
    bodyTimeout: limits.timeoutMs,
  });
  try {
    const res = await request(target, {
      method: 'POST',
      dispatcher: agent,
      signal: deadline,
      headers: { ...headers, 'content-type': 'application/json', 'user-agent': 'member-ai-platform-webhooks/1' },
      body,
    });
    let read = 0;
    try {
      for await (const chunk of res.body as AsyncIterable<Buffer>) {
        read += chunk.length;
        if (read > limits.maxResponseBytes) break;
      }
    } catch {
      // The status decides; a broken answer body does not.
    }
    res.body.on('error', () => undefined);
    res.body.destroy();
    const ok = res.statusCode >= 200 && res.statusCode < 300;
    return { status: res.statusCode, error: ok ? null : `the receiver answered ${res.statusCode}` };
  } catch (e) {
    return {
      status: null,
      error: deadline.aborted ? 'timed out or stopped' : `no answer: ${(e as Error).message}`.slice(0, 200),
    };
  } finally {
    void agent.close().catch(() => undefined);
  }
}
