import { createHmac, randomUUID } from 'crypto';
import { MessageSendError, SmsSender } from './sms-sender';

export interface AliyunSmsOptions {
  accessKeyId: string;
  accessKeySecret: string;
  signName: string;
  templateCode: string;
  /** Defaults to the public endpoint; tests point it at a local server. */
  endpoint?: string;
  regionId?: string;
  timeoutMs?: number;
}

/** RFC 3986 encoding as Aliyun's POP signature (v1) requires. */
export function aliyunPercentEncode(value: string): string {
  return encodeURIComponent(value).replace(/[!'()*]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase());
}

/** Aliyun RPC signature v1: HMAC-SHA1 over METHOD&%2F&encode(sorted canonical query). */
export function aliyunSignature(method: string, params: Record<string, string>, accessKeySecret: string): string {
  const canonical = Object.keys(params)
    .filter((k) => k !== 'Signature')
    .sort()
    .map((k) => `${aliyunPercentEncode(k)}=${aliyunPercentEncode(params[k])}`)
    .join('&');
  const stringToSign = `${method.toUpperCase()}&${aliyunPercentEncode('/')}&${aliyunPercentEncode(canonical)}`;
  return createHmac('sha1', `${accessKeySecret}&`).update(stringToSign).digest('base64');
}

/** Aliyun Dysms `SendSms` over its signed HTTP API (no SDK). */
export class AliyunSmsSender implements SmsSender {
  readonly name = 'aliyun';
  private readonly endpoint: string;

  constructor(private readonly options: AliyunSmsOptions) {
    for (const key of ['accessKeyId', 'accessKeySecret', 'signName', 'templateCode'] as const) {
      if (!options[key]) throw new Error(`Aliyun SMS: ${key} is required`);
    }
    this.endpoint = (options.endpoint || 'https://dysmsapi.aliyuncs.com').replace(/\/+$/, '') + '/';
  }

  // The validity period is part of the approved template text, not a parameter.
  async sendCode(phone: string, code: string, _ttlMinutes?: number): Promise<void> {
    const params: Record<string, string> = {
      AccessKeyId: this.options.accessKeyId,
      Action: 'SendSms',
      Format: 'JSON',
      PhoneNumbers: phone,
      RegionId: this.options.regionId || 'cn-hangzhou',
      SignName: this.options.signName,
      SignatureMethod: 'HMAC-SHA1',
      SignatureNonce: randomUUID(),
      SignatureVersion: '1.0',
      TemplateCode: this.options.templateCode,
      TemplateParam: JSON.stringify({ code }),
      Timestamp: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'),
      Version: '2017-05-25',
    };
    params.Signature = aliyunSignature('POST', params, this.options.accessKeySecret);
    const body = Object.entries(params)
      .map(([k, v]) => `${aliyunPercentEncode(k)}=${aliyunPercentEncode(v)}`)
      .join('&');

    let response: Response;
    try {
      response = await fetch(this.endpoint, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
        body,
        signal: AbortSignal.timeout(this.options.timeoutMs ?? 10_000),
      });
    } catch (err) {
      throw new MessageSendError(this.name, `request failed: ${(err as Error).name}`);
    }
    let payload: { Code?: string; Message?: string } = {};
    try {
      payload = (await response.json()) as typeof payload;
    } catch {
      throw new MessageSendError(this.name, `HTTP ${response.status} with a non-JSON body`);
    }
    if (!response.ok || payload.Code !== 'OK') {
      throw new MessageSendError(
        this.name,
        `HTTP ${response.status} ${payload.Code ?? ''} ${payload.Message ?? ''}`.trim(),
      );
    }
  }
}
