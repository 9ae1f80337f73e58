import { createCipheriv, createDecipheriv, createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** Thrown when a pushed message cannot be trusted (bad signature, stale timestamp, wrong key or appid). */
export class WechatMessageRejected extends Error {
  constructor(readonly reason: 'signature' | 'timestamp' | 'decrypt' | 'appid' | 'format' | 'replay' | 'plaintext') {
    super(`WeChat message rejected: ${reason}`);
  }
}

/** WeChat's signature: sha1 over the lexically sorted parts, concatenated. */
export function wechatSignature(...parts: string[]): string {
  return createHash('sha1')
    .update([...parts].sort().join(''))
    .digest('hex');
}

/** Constant-time comparison of a received hex signature with the expected one. */
export function signatureMatches(received: string | undefined, expected: string): boolean {
  if (typeof received !== 'string') return false;
  const a = Buffer.from(received.toLowerCase(), 'utf8');
  const b = Buffer.from(expected, 'utf8');
  // Compare against itself when lengths differ so the time does not reveal the length check.
  return a.length === b.length ? timingSafeEqual(a, b) : (timingSafeEqual(b, b), false);
}

export interface PushSignatureParams {
  signature?: string;
  timestamp?: string;
  nonce?: string;
}

/**
 * Checks the `signature` WeChat appends to every request to the server URL (handshake and pushes):
 * sha1(sort(token, timestamp, nonce)), with the timestamp inside a window. It does not cover the body:
 * the caller must also accept each (timestamp, nonce) once (pushReplayKey) and, in safe mode, check
 * `msg_signature`, which does.
 */
export function verifyPushSignature(
  token: string,
  q: PushSignatureParams,
  windowSeconds = 300,
  nowMs = Date.now(),
): void {
  if (!q.timestamp || !/^\d{1,12}$/.test(q.timestamp) || !q.nonce || !/^[A-Za-z0-9_-]{1,64}$/.test(q.nonce))
    throw new WechatMessageRejected('format');
  if (!signatureMatches(q.signature, wechatSignature(token, q.timestamp, q.nonce)))
    throw new WechatMessageRejected('signature');
  if (Math.abs(nowMs / 1000 - Number(q.timestamp)) > windowSeconds) throw new WechatMessageRejected('timestamp');
}

/**
 * The shared-state key under which a push's (timestamp, nonce) pair is remembered: a pair is accepted
 * once while its timestamp is inside the window, so a captured push URL cannot be replayed.
 */
export function pushReplayKey(appId: string, timestamp: string, nonce: string): string {
  return `wechat-push:${appId}:${timestamp}:${nonce}`;
}

/**
 * The "safe mode" (AES) message crypto of the official account platform:
 * AES-256-CBC, key = base64(EncodingAESKey + "="), IV = first 16 key bytes, PKCS#7 padding to 32 bytes,
 * plaintext = 16 random bytes + 4-byte big-endian length + message + appid.
 */
export class WechatMessageCrypto {
  private readonly key: Buffer;

  constructor(
    private readonly token: string,
    encodingAesKey: string,
    private readonly appId: string,
  ) {
    if (!/^[A-Za-z0-9+/]{43}$/.test(encodingAesKey)) throw new Error('EncodingAESKey must be 43 base64 characters');
    this.key = Buffer.from(encodingAesKey + '=', 'base64');
  }

  encrypt(message: string, random: Buffer = randomBytes(16)): string {
    const body = Buffer.from(message, 'utf8');
    const length = Buffer.alloc(4);
    length.writeUInt32BE(body.length, 0);
    const plain = Buffer.concat([random, length, body, Buffer.from(this.appId, 'utf8')]);
    const pad = 32 - (plain.length % 32);
    const cipher = createCipheriv('aes-256-cbc', this.key, this.key.subarray(0, 16));
    cipher.setAutoPadding(false);
    return Buffer.concat([cipher.update(Buffer.concat([plain, Buffer.alloc(pad, pad)])), cipher.final()]).toString(
      'base64',
    );
  }

  /** Decrypts an `Encrypt` field and checks the appid it carries. */
  decrypt(encrypted: string): string {
    let plain: Buffer;
    try {
      const decipher = createDecipheriv('aes-256-cbc', this.key, this.key.subarray(0, 16));
      decipher.setAutoPadding(false);
      plain = Buffer.concat([decipher.update(Buffer.from(encrypted, 'base64')), decipher.final()]);
    } catch {
      throw new WechatMessageRejected('decrypt');
    }
    const pad = plain.length ? plain[plain.length - 1] : 0;
    if (pad < 1 || pad > 32 || plain.length < 20 + pad) throw new WechatMessageRejected('decrypt');
    const content = plain.subarray(16, plain.length - pad);
    const length = content.readUInt32BE(0);
    if (4 + length > content.length) throw new WechatMessageRejected('decrypt');
    const appId = content.subarray(4 + length).toString('utf8');
    if (appId !== this.appId) throw new WechatMessageRejected('appid');
    return content.subarray(4, 4 + length).toString('utf8');
  }

  /** msg_signature = sha1(sort(token, timestamp, nonce, Encrypt)). */
  messageSignature(timestamp: string, nonce: string, encrypted: string): string {
    return wechatSignature(this.token, timestamp, nonce, encrypted);
  }

  verifyMessageSignature(msgSignature: string | undefined, timestamp: string, nonce: string, encrypted: string): void {
    if (!signatureMatches(msgSignature, this.messageSignature(timestamp, nonce, encrypted)))
      throw new WechatMessageRejected('signature');
  }

  /** Builds the encrypted reply envelope WeChat expects for a passive reply in safe mode. */
  encryptReply(replyXml: string, timestamp: string, nonce: string): string {
    const encrypted = this.encrypt(replyXml);
    const signature = this.messageSignature(timestamp, nonce, encrypted);
    return buildWechatXml({ Encrypt: encrypted, MsgSignature: signature, TimeStamp: timestamp, Nonce: nonce });
  }
}

/** Largest WeChat XML document the scanner reads (pushes are ~1 KB; the route caps bodies lower still). */
export const WECHAT_XML_MAX_CHARS = 64 * 1024;

/** What one scan produced: the fields and the characters it examined (at most a small multiple of the input). */
export interface WechatXmlScan {
  fields: Record<string, string>;
  /** Characters examined, counted at every step: the scan keeps this under 10 x the input length. */
  steps: number;
}

/**
 * Single-pass scanner for the flat documents WeChat pushes: `<xml><Tag>text or CDATA</Tag>...</xml>`,
 * optionally after an `<?xml ...?>` declaration. The cursor only moves forward: every search either
 * moves it past what it found or ends the scan with a rejection, so the work is linear in the input
 * (no regular expressions, no backtracking). Nested elements (menu events' `ScanCodeInfo`, ...) are
 * skipped to their closing tag and left out. DOCTYPE, entity declarations, processing instructions
 * other than the declaration, attributes and anything outside the root are refused; only the five
 * predefined entities are decoded. `meter.steps` receives the work done, also when the input is refused.
 */
export function scanWechatXml(xml: string, meter: { steps: number } = { steps: 0 }): WechatXmlScan {
  if (typeof xml !== 'string' || xml.length > WECHAT_XML_MAX_CHARS) throw new WechatMessageRejected('format');
  const n = xml.length;
  let i = 0;
  let steps = 0;
  const fail = (): never => {
    meter.steps = steps;
    throw new WechatMessageRejected('format');
  };
  /** indexOf that counts what it scans and refuses the document when the needle is missing. */
  const find = (needle: string, from: number): number => {
    const at = xml.indexOf(needle, from);
    steps += (at < 0 ? n : at + needle.length) - from;
    return at < 0 ? fail() : at;
  };
  const at = (s: string): boolean => {
    steps += s.length;
    return xml.startsWith(s, i);
  };
  const skipSpace = (): void => {
    while (i < n && isSpace(xml.charCodeAt(i))) {
      i++;
      steps++;
    }
  };
  const readName = (): string => {
    const start = i;
    while (i < n && isNameChar(xml.charCodeAt(i), i === start)) {
      i++;
      steps++;
    }
    if (i === start || i - start > 64) fail();
    return xml.slice(start, i);
  };

  skipSpace();
  if (at('<?xml')) {
    i = find('?>', i + 5) + 2;
    skipSpace();
  }
  if (!at('<xml>')) fail();
  i += 5;
  // No prototype: an element named `__proto__` is a field like any other (on `{}` it was dropped), and a
  // field the push lacks reads undefined, never Object's member (`constructor`, `toString`).
  const fields = Object.create(null) as Record<string, string>;
  for (;;) {
    skipSpace();
    if (at('</xml>')) {
      i += 6;
      skipSpace();
      if (i !== n) fail();
      meter.steps = steps;
      return { fields, steps };
    }
    if (xml[i] !== '<') fail();
    i++;
    const name = readName();
    if (xml[i] !== '>') fail();
    i++;
    const close = `</${name}>`;
    let value = '';
    let nested = false;
    for (;;) {
      if (i >= n) fail();
      if (at('<![CDATA[')) {
        const end = find(']]>', i + 9);
        value += xml.slice(i + 9, end);
        i = end + 3;
      } else if (at(close)) {
        i += close.length;
        break;
      } else if (xml[i] === '<') {
        // A nested element: not a field WeChat login reads; skip to this element's closing tag.
        nested = true;
        i = find(close, i) + close.length;
        break;
      } else {
        const end = find('<', i);
        value += decodeEntities(xml.slice(i, end));
        steps += end - i;
        i = end;
      }
    }
    if (!nested) fields[name] = value;
  }
}

/** The fields of a WeChat XML document (see scanWechatXml); malformed input is a `format` rejection. */
export function parseWechatXml(xml: string): Record<string, string> {
  return scanWechatXml(xml).fields;
}

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
}

function isNameChar(c: number, first: boolean): boolean {
  const letter = (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c === 0x5f;
  if (first) return letter;
  return letter || (c >= 0x30 && c <= 0x39) || c === 0x2e || c === 0x2d;
}

export function buildWechatXml(fields: Record<string, string | number>): string {
  const parts = Object.entries(fields).map(([k, v]) =>
    typeof v === 'number'
      ? `<${k}>${v}</${k}>`
      : `<${k}><![CDATA[${String(v).replace(/]]>/g, ']]]]><![CDATA[>')}]]></${k}>`,
  );
  return `<xml>${parts.join('')}</xml>`;
}

function decodeEntities(s: string): string {
  return s
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&amp;/g, '&');
}
