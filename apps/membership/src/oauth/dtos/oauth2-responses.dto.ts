import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { MemberLoginResponse } from '../../auth/dtos/member-login.dto';

export class OAuth2AuthUrlResponse {
  @ApiProperty({
    description: 'Send the browser here',
    example:
      'https://github.com/login/oauth/authorize?response_type=code&redirect_uri=https%3A%2F%2Fapi.example.com%2Flogin%2Foauth2%2Fcode%2Fgithub-app&scope=read%3Auser%20user%3Aemail&state=Yl3cF0...&client_id=Iv1.8a61f9b3a7aba766',
  })
  authorizationUrl: string;
  @ApiProperty({ description: 'Random, single use, valid 10 minutes', example: 'Yl3cF0rj2kqz8V1mQw7xPp4nD6sT9bLe' })
  state: string;
  @ApiProperty({ description: 'Client id / WeChat appid', example: 'Iv1.8a61f9b3a7aba766' })
  appId: string;
  @ApiProperty({
    description: 'The redirect_uri sent to the provider',
    example: 'https://api.example.com/login/oauth2/code/github-app',
  })
  redirectUri: string;
  @ApiProperty({ example: 'read:user user:email' })
  scope: string;
  @ApiProperty({ enum: ['oauth2', 'oidc', 'qrcode', 'mobile', 'silent'], example: 'oauth2' })
  authType: string;
}

export class OAuth2QRCodeResponse {
  @ApiProperty({
    description: 'WeChat qrconnect page (show it or embed it on the desktop page)',
    example:
      'https://open.weixin.qq.com/connect/qrconnect?appid=wx3a1b2c3d4e5f6a7b&redirect_uri=https%3A%2F%2Fapi.example.com%2Flogin%2Foauth2%2Fcode%2Fwechat-app&response_type=code&scope=snsapi_login&state=Yl3cF0rj2kqz8V1mQw7xPp4nD6sT9bLe#wechat_redirect',
  })
  authorizationUri: string;
  @ApiProperty({
    description: 'Poll GET /api/v1/app/oauth2/qrcode/state/{state}',
    example: 'Yl3cF0rj2kqz8V1mQw7xPp4nD6sT9bLe',
  })
  state: string;
  @ApiProperty({ example: 'wx3a1b2c3d4e5f6a7b' })
  appId: string;
  @ApiProperty({ example: 'https://api.example.com/login/oauth2/code/wechat-app' })
  redirectUri: string;
  @ApiProperty({ example: 'snsapi_login' })
  scope: string;
}

export class OAuth2QRCodeStateResponse {
  @ApiProperty({ example: 'Yl3cF0rj2kqz8V1mQw7xPp4nD6sT9bLe' })
  state: string;
  @ApiProperty({
    description: '0 WAITED, 1 SCANNED, 2 AUTHORIZED (exchange at /callback), 3 CANCELED, 4 EXPIRED',
    enum: [0, 1, 2, 3, 4],
    example: 0,
  })
  qrcodeState: number;
}

export class QRCodeLoginResponse {
  @ApiProperty({
    description: 'Scene of the QR code; poll /qrcode/state/{sceneStr} and exchange it at /callback',
    example: 'pX3q9Lr2mVb8Kc1Tz7Wn4Yd6Hs0Ja5Fe',
  })
  sceneStr: string;
  @ApiProperty({
    description: 'Content of the QR code (render it yourself)',
    example: 'http://weixin.qq.com/q/02Ab3cD4eF5gH6',
  })
  qrCodeUrl: string;
  @ApiProperty({ example: 'gQH47joAAAAAAAAAASxodHRwOi8vd2VpeGluLnFxLmNvbS9xLzAyQWIzY0Q0ZUY1Z0g2AAIE' })
  ticket: string;
  @ApiProperty({ example: 300 })
  expireSeconds: number;
  @ApiProperty({
    description: 'Ready-made QR image from WeChat',
    example: 'https://mp.weixin.qq.com/cgi-bin/showqrcode?ticket=gQH47joAAAAAAAAAASxodHRw...',
  })
  showQrCodeUrl: string;
}

export class OAuth2LoginResponse extends MemberLoginResponse {
  @ApiProperty({
    description: 'Subject at the provider (WeChat openid, OIDC sub, GitHub id)',
    example: 'oGZUI0egBJY1zhBYw2KhdUfwVJJE',
  })
  openId: string;
  @ApiPropertyOptional({
    description: 'WeChat unionid when the apps share an open-platform account',
    example: 'o6_bmasdasdsad6_2sgVt7hMZOPfL',
    nullable: true,
    type: String,
  })
  unionId: string | null;
  @ApiPropertyOptional({ example: 'Alice', nullable: true, type: String })
  thirdPartyNickname: string | null;
  @ApiPropertyOptional({ example: 'https://thirdwx.qlogo.cn/mmopen/vi_32/alice/132', nullable: true, type: String })
  thirdPartyAvatarUrl: string | null;
  @ApiProperty({ description: 'The member was created by this login', example: false })
  isNewUser: boolean;
  @ApiProperty({
    description: 'The member can also log in without this third party (has a password or phone)',
    example: true,
  })
  isBound: boolean;
}

export class WechatSilentOpenIdResponse {
  @ApiProperty({ example: 'oGZUI0egBJY1zhBYw2KhdUfwVJJE' })
  openId: string;
  @ApiPropertyOptional({ nullable: true, type: String, example: null })
  unionId: string | null;
  @ApiProperty({ example: 'wx9f8e7d6c5b4a3f2e' })
  appId: string;
}

export class MemberIdentityResponse {
  @ApiProperty({ example: '5b0f3c1e-8a53-4f57-9d0c-3c7d2b1a9e44' })
  id: string;
  @ApiProperty({ description: 'Namespace of the subject', example: 'wechat:wx3a1b2c3d4e5f6a7b' })
  provider: string;
  @ApiProperty({ example: 'wechat-app' })
  registrationId: string;
  @ApiProperty({
    description: 'Subject at the provider (openid, sub, user id)',
    example: 'oGZUI0egBJY1zhBYw2KhdUfwVJJE',
  })
  openId: string;
  @ApiPropertyOptional({ nullable: true, type: String, example: 'o6_bmasdasdsad6_2sgVt7hMZOPfL' })
  unionId: string | null;
  @ApiPropertyOptional({ nullable: true, type: String, example: 'Alice' })
  nickname: string | null;
  @ApiPropertyOptional({ nullable: true, type: String, example: 'https://thirdwx.qlogo.cn/mmopen/vi_32/alice/132' })
  avatarUrl: string | null;
  @ApiProperty({ example: '2026-11-22T03:30:00.000Z' })
  createdTime: Date;
  @ApiPropertyOptional({ nullable: true, type: String, example: '2026-11-22T03:40:00.000Z' })
  lastLoginTime: Date | null;
}
