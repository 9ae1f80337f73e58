import { createDecipheriv, createHash } from 'node:crypto';
import {
  WechatMessageCrypto,
  WechatMessageRejected,
  buildWechatXml,
  parseWechatXml,
  pushReplayKey,
  scanWechatXml,
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
    expect(parseWechatXml(xml)).toEqual({
      ToUserName: 'gh_1',
      CreateTime: '123',
      Event: 'SCAN',
      EventKey: 'abc',
      Note: 'a & b',
    });
  });

  it('round-trips values containing the CDATA terminator', () => {
    const xml = buildWechatXml({ A: 'x]]>y', N: 5 });
    expect(parseWechatXml(xml)).toEqual({ A: 'x]]>y', N: '5' });
  });

  it('refuses non-xml bodies', () => {
    expect(() => parseWechatXml('{"a":1}')).toThrow(WechatMessageRejected);
  });

  it('keeps elements named like Object.prototype members as ordinary fields, and an absent one reads undefined', () => {
    const fields = parseWechatXml(
      '<xml><__proto__><![CDATA[p]]></__proto__><constructor>c</constructor><MsgType>event</MsgType></xml>',
    );
    expect(Object.keys(fields)).toEqual(['__proto__', 'constructor', 'MsgType']);
    expect(Object.hasOwn(fields, '__proto__')).toBe(true);
    expect(fields['__proto__']).toBe('p');
    expect(fields.constructor).toBe('c');
    const plain = parseWechatXml('<xml><MsgType>event</MsgType></xml>');
    for (const name of ['constructor', '__proto__', 'toString', 'hasOwnProperty'])
      expect([name, plain[name]]).toEqual([name, undefined]);
  });
});

describe('scanWechatXml: linear work on hostile input (audit M2: a 365-byte push held the event loop 10 s)', () => {
  // The audit's shapes: runs of CDATA sections inside an element that never closes (the old tag regex
  // tried every way to split them: 2^k), nested and unclosed tags, and long runs of '<'.
  const hostile = (k: number): Record<string, string> => ({
    'unclosed CDATA run': `<xml><a>${'<![CDATA[]]>'.repeat(k)}</xml>`,
    'CDATA run, wrong close tag': `<xml><a>${'<![CDATA[x]]>'.repeat(k)}</b></xml>`,
    'nested unclosed tags': `<xml>${'<a>'.repeat(k)}</xml>`,
    "many '<'": `<xml><a>${'<'.repeat(k)}`,
    'unterminated CDATA': `<xml><a><![CDATA[${']]'.repeat(k)}`,
    'text then tags': `<xml><a>${'x<a>'.repeat(k)}</xml>`,
  });

  it.each(Object.keys(hostile(1)))(
    '%s: refused as malformed after examining under 10 characters per input character',
    (shape) => {
      for (const k of [5, 30, 300, 3000]) {
        const xml = hostile(k)[shape];
        const meter = { steps: -1 };
        let thrown: unknown;
        try {
          scanWechatXml(xml, meter);
        } catch (e) {
          thrown = e;
        }
        expect(thrown).toBeInstanceOf(WechatMessageRejected);
        expect((thrown as WechatMessageRejected).reason).toBe('format');
        expect(meter.steps).toBeGreaterThan(0);
        expect(meter.steps).toBeLessThan(10 * xml.length);
      }
    },
  );

  it('counts its work: a valid document of any size costs under 10 steps per character', () => {
    for (const k of [1, 10, 100, 1000]) {
      const xml = `<?xml version="1.0"?>\n<xml>${'<F><![CDATA[v]]></F><N>12</N>'.repeat(k)}<Nested><a>1</a></Nested></xml>`;
      const { fields, steps } = scanWechatXml(xml);
      expect(fields).toEqual({ F: 'v', N: '12' });
      expect(steps).toBeGreaterThan(0);
      expect(steps).toBeLessThan(10 * xml.length);
    }
  });

  it('reads the audit-style 365-byte push without a match explosion and refuses it', () => {
    const xml = `<xml><a>${'<![CDATA[]]>'.repeat(29)}</xml>`;
    expect(xml.length).toBeLessThanOrEqual(365);
    expect(() => parseWechatXml(xml)).toThrow(/format/);
  });

  it('refuses DOCTYPE, entity declarations, attributes, trailing content and oversized input', () => {
    for (const xml of [
      '<!DOCTYPE xml [<!ENTITY e "x">]><xml><A>&e;</A></xml>',
      '<xml><A x="1">v</A></xml>',
      '<xml><A>v</A></xml><xml></xml>',
      '<xml><A>v</B></xml>',
      `<xml><A>${'v'.repeat(70 * 1024)}</A></xml>`,
    ]) {
      expect(() => parseWechatXml(xml)).toThrow(WechatMessageRejected);
    }
    expect(parseWechatXml('  <xml>\n <A>&lt;b&gt; &amp;amp;</A>\n</xml>\n')).toEqual({ A: '<b> &amp;' });
  });
});

describe('pushReplayKey', () => {
  it('names one (appid, timestamp, nonce) pair', () => {
    expect(pushReplayKey('wx1', '1700000000', 'n1')).toBe('wechat-push:wx1:1700000000:n1');
    expect(pushReplayKey('wx1', '1700000000', 'n2')).not.toBe(pushReplayKey('wx1', '1700000000', 'n1'));
  });
});
