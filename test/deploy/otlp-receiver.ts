// A minimal OTLP/HTTP receiver (JSON and gzip) for tests: collects every span and every metric it is sent.
import { createServer, IncomingMessage, Server } from 'http';
import { AddressInfo } from 'net';
import { gunzipSync } from 'zlib';
import { asyncHandler } from '../support/async-handler';

export interface ReceivedSpan {
  service: string;
  name: string;
  kind: number; // OTLP SpanKind: 1 internal, 2 server, 3 client
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  attributes: Record<string, AttributeValue>;
}

/** An OTLP AnyValue as plain JSON (key-value lists are not used by the spans these tests read). */
export type AttributeValue = string | number | boolean | AttributeValue[] | undefined;

/** A metric as received: its name, unit and the attributes of each data point. */
export interface ReceivedMetric {
  service: string;
  name: string;
  unit: string;
  points: Array<Record<string, AttributeValue>>;
}

export interface OtlpReceiver {
  url: string;
  spans: ReceivedSpan[];
  metrics: ReceivedMetric[];
  requests: number;
  waitFor(predicate: (spans: ReceivedSpan[]) => boolean, timeoutMs?: number): Promise<ReceivedSpan[]>;
  close(): Promise<void>;
}

function attributeValue(v: any): AttributeValue {
  if (!v) return undefined;
  if ('stringValue' in v) return v.stringValue;
  if ('intValue' in v) return Number(v.intValue);
  if ('doubleValue' in v) return v.doubleValue;
  if ('boolValue' in v) return v.boolValue;
  if ('arrayValue' in v) return (v.arrayValue.values ?? []).map(attributeValue);
  return undefined;
}

function attributes(list: any[] | undefined): Record<string, AttributeValue> {
  const out: Record<string, AttributeValue> = {};
  for (const a of list ?? []) out[a.key] = attributeValue(a.value);
  return out;
}

async function body(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const raw = Buffer.concat(chunks);
  return req.headers['content-encoding'] === 'gzip' ? gunzipSync(raw) : raw;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const receiver = { spans: [] as ReceivedSpan[], metrics: [] as ReceivedMetric[], requests: 0 } as OtlpReceiver;
  const server: Server = createServer(
    asyncHandler(async (req, res) => {
      try {
        if (req.method !== 'POST' || (req.url !== '/v1/traces' && req.url !== '/v1/metrics')) {
          res.writeHead(404).end();
          return;
        }
        if (!String(req.headers['content-type']).startsWith('application/json')) {
          res.writeHead(415).end('this receiver only speaks OTLP/JSON');
          return;
        }
        const payload = JSON.parse((await body(req)).toString('utf8'));
        receiver.requests++;
        for (const rm of payload.resourceMetrics ?? []) {
          const service = String(attributes(rm.resource?.attributes)['service.name'] ?? '');
          for (const sm of rm.scopeMetrics ?? []) {
            for (const m of sm.metrics ?? []) {
              const data = m.histogram ?? m.sum ?? m.gauge ?? m.exponentialHistogram ?? {};
              receiver.metrics.push({
                service,
                name: m.name,
                unit: m.unit ?? '',
                points: (data.dataPoints ?? []).map((p: any) => attributes(p.attributes)),
              });
            }
          }
        }
        for (const rs of payload.resourceSpans ?? []) {
          const service = String(attributes(rs.resource?.attributes)['service.name'] ?? '');
          for (const ss of rs.scopeSpans ?? []) {
            for (const s of ss.spans ?? []) {
              receiver.spans.push({
                service,
                name: s.name,
                kind: s.kind,
                traceId: s.traceId,
                spanId: s.spanId,
                parentSpanId: s.parentSpanId || undefined,
                attributes: attributes(s.attributes),
              });
            }
          }
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      } catch (err) {
        res.writeHead(400).end(String(err));
      }
    }),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  receiver.waitFor = async (predicate, timeoutMs = 15000) => {
    const deadline = Date.now() + timeoutMs;
    while (!predicate(receiver.spans)) {
      if (Date.now() > deadline) {
        const seen = receiver.spans.map((s) => `${s.service}:${s.kind}:${s.name}`).join(', ');
        throw new Error(`spans did not arrive within ${timeoutMs} ms; received: [${seen}]`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    return receiver.spans;
  };
  receiver.close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return receiver;
}
