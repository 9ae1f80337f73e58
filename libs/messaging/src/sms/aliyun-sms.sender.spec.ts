import { createServer, IncomingMessage, Server, ServerResponse } from 'http';
import { AddressInfo } from 'net';
import { aliyunSignature, AliyunSmsSender } from './aliyun-sms.sender';
import { LogSmsSender } from './log-sms.sender';
import { MessageSendError } from './sms-sender';

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    let data = '';
    req.on('data', (c) => (data += c));
    req.on('end', () => resolve(data));
  });
}

describe('aliyunSignature', () => {
  it('matches the worked example of the Aliyun RPC signature documentation', () => {
    const params = {
      Timestamp: '2016-02-23T12:46:24Z',
      Format: 'XML',
      AccessKeyId: 'testid',
      Action: 'DescribeRegions',
      SignatureMethod: 'HMAC-SHA1',
      SignatureNonce: '3ee8c1b8-83d3-44af-a94f-4e0ad82fd6cf',
      Version: '2014-05-26',
      SignatureVersion: '1.0',
    };
    expect(aliyunSignature('GET', params, 'testsecret')).toBe('OLeaidS1JvxuMvnyHOwuJ+uX5qY=');
  });
});

describe('AliyunSmsSender against a local server speaking the Dysms protocol', () => {
  let server: Server;
  let endpoint: string;
  let received: Record<string, string>[] = [];
  let reply: { status: number; body: unknown } = {
    status: 200,
    body: { Code: 'OK', Message: 'OK', BizId: '1', RequestId: 'r' },
  };

  beforeAll(async () => {
    const answer = async (req: IncomingMessage, res: ServerResponse) => {
      const params = Object.fromEntries(new URLSearchParams(await readBody(req)));
      received.push(params);
      // The server checks the signature the way Aliyun does, with the secret it knows.
      const expected = aliyunSignature(req.method!, params, 'the-secret');
      if (params.Signature !== expected) {
        res.writeHead(400, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ Code: 'SignatureDoesNotMatch', Message: 'bad signature' }));
        return;
      }
      res.writeHead(reply.status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(reply.body));
    };
    // A failed answer resets the connection, which the test then sees as the sender's error.
    server = createServer((req, res) => {
      answer(req, res).catch((err: Error) => res.destroy(err));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise((r) => server.close(r)));
  beforeEach(() => {
    received = [];
    reply = { status: 200, body: { Code: 'OK', Message: 'OK', BizId: '1', RequestId: 'r' } };
  });

  const sender = (secret = 'the-secret') =>
    new AliyunSmsSender({
      accessKeyId: 'AK',
      accessKeySecret: secret,
      signName: 'Site',
      templateCode: 'SMS_1',
      endpoint,
    });

  it('sends a signed SendSms request carrying the code as template parameter', async () => {
    await sender().sendCode('13800138000', '123456', 5);
    expect(received).toHaveLength(1);
    const p = received[0];
    expect(p).toMatchObject({
      Action: 'SendSms',
      PhoneNumbers: '13800138000',
      SignName: 'Site',
      TemplateCode: 'SMS_1',
      Version: '2017-05-25',
    });
    expect(JSON.parse(p.TemplateParam)).toEqual({ code: '123456' });
    expect(p.Timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  });

  it('fails with MessageSendError when the signature is wrong', async () => {
    await expect(sender('wrong-secret').sendCode('13800138000', '123456', 5)).rejects.toBeInstanceOf(MessageSendError);
  });

  it('fails when the vendor answers a business error with HTTP 200', async () => {
    reply = { status: 200, body: { Code: 'isv.BUSINESS_LIMIT_CONTROL', Message: 'limit' } };
    await expect(sender().sendCode('13800138000', '123456', 5)).rejects.toThrow(/BUSINESS_LIMIT_CONTROL/);
  });

  it('fails when the vendor cannot be reached', async () => {
    const s = new AliyunSmsSender({
      accessKeyId: 'AK',
      accessKeySecret: 'x',
      signName: 'S',
      templateCode: 'T',
      endpoint: 'http://127.0.0.1:1',
      timeoutMs: 2000,
    });
    await expect(s.sendCode('13800138000', '1', 5)).rejects.toBeInstanceOf(MessageSendError);
  });
});

describe('LogSmsSender', () => {
  it('is refused in production', () => {
    expect(() => new LogSmsSender('production')).toThrow(/development only/);
    expect(() => new LogSmsSender('test')).not.toThrow();
  });
});
