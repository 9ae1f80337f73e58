import { createCipheriv, createDecipheriv, createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** Thrown when a pushed message cannot be trusted (bad signature, stale timestamp, wrong key or appid). */
export class WechatMessageRejected extends Error {
  constructor(readonly reason: 'signature' | 'timestamp' | 'decrypt' | 'appid' | 'format') {
    super(`WeChat message rejected: ${reason}`);
  }
}

/** WeChat's signature: sha1 over the lexically sorted parts, concatenated. */
export function wechatSignature(...parts: string[]): string {
  return createHash('sha1').update([...parts].sort().join('')).digest('hex');
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
 * sha1(sort(token, timestamp, nonce)), with the timestamp inside a window against replays.
 */
export function verifyPushSignature(token: string, q: PushSignatureParams, windowSeconds = 300, nowMs = Date.now()): void {
  if (!q.timestamp || !/^\d{1,12}$/.test(q.timestamp) || !q.nonce || q.nonce.length > 64) throw new WechatMessageRejected('format');
  if (!signatureMatches(q.signature, wechatSignature(token, q.timestamp, q.nonce))) throw new WechatMessageRejected('signature');
  if (Math.abs(nowMs / 1000 - Number(q.timestamp)) > windowSeconds) throw new WechatMessageRejected('timestamp');
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
    return Buffer.concat([cipher.update(Buffer.concat([plain, Buffer.alloc(pad, pad)])), cipher.final()]).toString('base64');
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
    if (!signatureMatches(msgSignature, this.messageSignature(timestamp, nonce, encrypted))) throw new WechatMessageRejected('signature');
  }

  /** Builds the encrypted reply envelope WeChat expects for a passive reply in safe mode. */
  encryptReply(replyXml: string, timestamp: string, nonce: string): string {
    const encrypted = this.encrypt(replyXml);
    const signature = this.messageSignature(timestamp, nonce, encrypted);
    return buildWechatXml({ Encrypt: encrypted, MsgSignature: signature, TimeStamp: timestamp, Nonce: nonce });
  }
}

/** Parses the flat `<xml><Tag>value</Tag>...</xml>` documents WeChat pushes (CDATA or plain text values). */
export function parseWechatXml(xml: string): Record<string, string> {
  const body = /^\s*(?:<\?xml[^>]*\?>\s*)?<xml>([\s\S]*)<\/xml>\s*$/.exec(xml);
  if (!body) throw new WechatMessageRejected('format');
  const fields: Record<string, string> = {};
  const tag = /<([A-Za-z_][\w.-]*)>((?:<!\[CDATA\[[\s\S]*?\]\]>)+|[^<]*)<\/\1>/g;
  for (let m = tag.exec(body[1]); m; m = tag.exec(body[1])) {
    fields[m[1]] = m[2].startsWith('<![CDATA[') ? [...m[2].matchAll(/<!\[CDATA\[([\s\S]*?)\]\]>/g)].map((c) => c[1]).join('') : decodeEntities(m[2]);
  }
  return fields;
}

export function buildWechatXml(fields: Record<string, string | number>): string {
  const parts = Object.entries(fields).map(([k, v]) =>
    typeof v === 'number' ? `<${k}>${v}</${k}>` : `<${k}><![CDATA[${String(v).replace(/]]>/g, ']]]]><![CDATA[>')}]]></${k}>`,
  );
  return `<xml>${parts.join('')}</xml>`;
}

function decodeEntities(s: string): string {
  return s.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&apos;/g, "'").replace(/&amp;/g, '&');
}
