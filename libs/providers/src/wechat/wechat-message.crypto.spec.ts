import { createDecipheriv, createHash } from 'node:crypto';
import {
  WechatMessageCrypto,
  WechatMessageRejected,
  buildWechatXml,
  parseWechatXml,
  signatureMatches,
  verifyPushSignature,
  wechatSignature,
} from './wechat-message.crypto';

const AES_KEY = 'abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG';

describe('wechatSignature / verifyPushSignature', () => {
  it('is sha1 of the sorted, concatenated parts', () => {
    const expected = createHash('sha1').update(['1700000000', 'nonce1', 'tok'].sort().join('')).digest('hex');
    expect(wechatSignature('tok', '1700000000', 'nonce1')).toBe(expected);
    expect(wechatSignature('nonce1', 'tok', '1700000000')).toBe(expected);
  });

  it('accepts a fresh, correctly signed request and refuses tampering, staleness and junk', () => {
    const now = 1_700_000_000_000;
    const ts = String(now / 1000);
    const ok = { timestamp: ts, nonce: 'n1', signature: wechatSignature('tok', ts, 'n1') };
    expect(() => verifyPushSignature('tok', ok, 300, now)).not.toThrow();
    expect(() => verifyPushSignature('other', ok, 300, now)).toThrow(WechatMessageRejected);
    expect(() => verifyPushSignature('tok', { ...ok, nonce: 'n2' }, 300, now)).toThrow(/signature/);
    expect(() => verifyPushSignature('tok', ok, 300, now + 301_000)).toThrow(/timestamp/);
    expect(() => verifyPushSignature('tok', { ...ok, timestamp: 'abc' }, 300, now)).toThrow(/format/);
    expect(() => verifyPushSignature('tok', { ...ok, signature: undefined }, 300, now)).toThrow(/signature/);
  });

  it('compares signatures of different length without throwing', () => {
    expect(signatureMatches('abc', 'abcd')).toBe(false);
    expect(signatureMatches('ABCD', 'abcd')).toBe(true);
    expect(signatureMatches(undefined, 'abcd')).toBe(false);
  });
});

describe('WechatMessageCrypto', () => {
  const crypto = new WechatMessageCrypto('tok', AES_KEY, 'wxappid123');

  it('uses AES-256-CBC with the key IV and 32-byte PKCS#7 blocks as documented', () => {
    const encrypted = crypto.encrypt('<xml>hi</xml>', Buffer.alloc(16, 7));
    const raw = Buffer.from(encrypted, 'base64');
    expect(raw.length % 32).toBe(0);
    // Decrypt independently of the class to check the layout: random(16) + len(4, BE) + msg + appid + pad.
    const key = Buffer.from(AES_KEY + '=', 'base64');
    const d = createDecipheriv('aes-256-cbc', key, key.subarray(0, 16));
    d.setAutoPadding(false);
    const plain = Buffer.concat([d.update(raw), d.final()]);
    expect(plain.subarray(0, 16)).toEqual(Buffer.alloc(16, 7));
    expect(plain.readUInt32BE(16)).toBe(13);
    expect(plain.subarray(20, 33).toString()).toBe('<xml>hi</xml>');
    expect(plain.subarray(33, 43).toString()).toBe('wxappid123');
    const pad = plain[plain.length - 1];
    expect(pad).toBe(32 - (43 % 32));
  });

  it('round-trips Chinese text and refuses another appid, a wrong key and garbage', () => {
    const msg = '<xml><Content><![CDATA[扫码登录]]></Content></xml>';
    expect(crypto.decrypt(crypto.encrypt(msg))).toBe(msg);
    const other = new WechatMessageCrypto('tok', AES_KEY, 'wxother');
    expect(() => crypto.decrypt(other.encrypt(msg))).toThrow(/appid/);
    const wrongKey = new WechatMessageCrypto('tok', 'A'.repeat(43), 'wxappid123');
    expect(() => wrongKey.decrypt(crypto.encrypt(msg))).toThrow(WechatMessageRejected);
    expect(() => crypto.decrypt('bm90IGEgYmxvY2s=')).toThrow(/decrypt/);
  });

  it('signs and verifies msg_signature and wraps replies', () => {
    const enc = crypto.encrypt('x');
    const sig = crypto.messageSignature('1', 'n', enc);
    expect(sig).toBe(wechatSignature('tok', '1', 'n', enc));
    expect(() => crypto.verifyMessageSignature(sig, '1', 'n', enc)).not.toThrow();
    expect(() => crypto.verifyMessageSignature(sig, '2', 'n', enc)).toThrow(/signature/);
    const reply = parseWechatXml(crypto.encryptReply('<xml>r</xml>', '5', 'nn'));
    expect(reply.MsgSignature).toBe(crypto.messageSignature('5', 'nn', reply.Encrypt));
    expect(crypto.decrypt(reply.Encrypt)).toBe('<xml>r</xml>');
  });

  it('refuses a malformed EncodingAESKey', () => {
    expect(() => new WechatMessageCrypto('t', 'short', 'a')).toThrow();
  });
});

describe('parseWechatXml / buildWechatXml', () => {
  it('reads CDATA and plain values of an event push', () => {
    const xml = `<xml><ToUserName><![CDATA[gh_1]]></ToUserName><CreateTime>123</CreateTime><Event><![CDATA[SCAN]]></Event><EventKey><![CDATA[abc]]></EventKey><Note>a &amp; b</Note></xml>`;
    expect(parseWechatXml(xml)).toEqual({ ToUserName: 'gh_1', CreateTime: '123', Event: 'SCAN', EventKey: 'abc', Note: 'a & b' });
  });

  it('round-trips values containing the CDATA terminator', () => {
    const xml = buildWechatXml({ A: 'x]]>y', N: 5 });
    expect(parseWechatXml(xml)).toEqual({ A: 'x]]>y', N: '5' });
  });

  it('refuses non-xml bodies', () => {
    expect(() => parseWechatXml('{"a":1}')).toThrow(WechatMessageRejected);
  });
});
