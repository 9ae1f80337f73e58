import { applyDecorators } from '@nestjs/common';
import { ApiBody, ApiConsumes, ApiOperation, ApiParam, ApiProduces, ApiQuery, ApiResponse } from '@nestjs/swagger';

// The OpenAPI operations of the official account's server URL (wechat-portal.controller.ts), with WeChat's own examples.

/** GET /api/v1/wechat/portal/{appid} */
export const ApiPortalHandshake = () =>
  applyDecorators(
    ApiOperation({
      summary: 'Server-URL handshake',
      description:
        'WeChat checks the configured URL: with a valid `signature` (sha1 of token, timestamp, nonce; timestamp within the window) the body is `echostr` as plain text.',
    }),
    ApiParam({ name: 'appid', example: 'wx9f8e7d6c5b4a3f2e' }),
    ApiQuery({ name: 'signature', example: '0f9d5e3a2c1b4d6e8f7a9b0c1d2e3f4a5b6c7d8e' }),
    ApiQuery({ name: 'timestamp', example: '1763782800' }),
    ApiQuery({ name: 'nonce', example: '1388296150' }),
    ApiQuery({ name: 'echostr', example: '5837397520665436492' }),
    ApiProduces('text/plain'),
    ApiResponse({ status: 200, description: 'The echostr, as text' }),
    ApiResponse({ status: 403, description: 'Signature or timestamp rejected (envelope)' }),
  );

/** POST /api/v1/wechat/portal/{appid} */
export const ApiPortalPush = () =>
  applyDecorators(
    ApiOperation({
      summary: 'Event push (SCAN, subscribe with qrscene_)',
      description:
        'Signed pushes. With an EncodingAESKey configured (safe or compatible mode) only AES pushes (`encrypt_type=aes`) whose `msg_signature` ' +
        '(sha1 of sorted token, timestamp, nonce, Encrypt) matches and whose decrypted appid is this account are accepted; plaintext is refused (403). ' +
        'Without a key (plaintext mode) the body is read as is. Each (timestamp, nonce) pair is accepted once (403 on a replay); bodies over 8 KB get 413. ' +
        'Repeated pushes (WeChat retries, new nonce) are processed once. ' +
        'SCAN and subscribe events carrying a login scene move it WAITED -> SCANNED -> AUTHORIZED; the answer is `success` or a passive text reply.',
    }),
    ApiParam({ name: 'appid', example: 'wx9f8e7d6c5b4a3f2e' }),
    ApiQuery({ name: 'signature', example: '0f9d5e3a2c1b4d6e8f7a9b0c1d2e3f4a5b6c7d8e' }),
    ApiQuery({ name: 'timestamp', example: '1763782800' }),
    ApiQuery({ name: 'nonce', example: '1388296150' }),
    ApiQuery({ name: 'openid', required: false, example: 'oGZUI0egBJY1zhBYw2KhdUfwVJJE' }),
    ApiQuery({
      name: 'encrypt_type',
      required: false,
      example: 'aes',
      description: 'Safe mode: the body carries `Encrypt`',
    }),
    ApiQuery({ name: 'msg_signature', required: false, example: '3d7f6b0c5a9e8d1f2a4b6c8e0f1a3b5c7d9e1f2a' }),
    ApiResponse({
      status: 403,
      description: 'Signature, timestamp, replay, plaintext-in-safe-mode or AES check failed (envelope)',
    }),
    ApiResponse({ status: 413, description: 'Body larger than 8 KB (envelope)' }),
    ApiConsumes('text/xml'),
    ApiBody({
      schema: {
        type: 'string',
        example:
          '<xml><ToUserName><![CDATA[gh_1234567890ab]]></ToUserName><FromUserName><![CDATA[oGZUI0egBJY1zhBYw2KhdUfwVJJE]]></FromUserName><CreateTime>1763782800</CreateTime><MsgType><![CDATA[event]]></MsgType><Event><![CDATA[SCAN]]></Event><EventKey><![CDATA[pX3q9Lr2mVb8Kc1Tz7Wn4Yd6Hs0Ja5Fe]]></EventKey><Ticket><![CDATA[gQH47joAAAAAAAAAASxodHRw]]></Ticket></xml>',
      },
    }),
    ApiProduces('text/plain', 'text/xml'),
    ApiResponse({ status: 200, description: '`success`, or a (possibly encrypted) passive text reply' }),
  );
