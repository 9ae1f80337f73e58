/** What a third party told us about the user after a successful authorization. */
export interface ExternalProfile {
  /** Namespace of `subject`: `github`, `gitee`, `oidc:<issuer>`, `oauth2:<origin>`, `wechat:<appid>`. */
  provider: string;
  /** The user's stable id at that provider (OIDC `sub`, GitHub id, WeChat openid). */
  subject: string;
  registrationId: string;
  unionId?: string | null;
  nickname?: string | null;
  avatarUrl?: string | null;
}
