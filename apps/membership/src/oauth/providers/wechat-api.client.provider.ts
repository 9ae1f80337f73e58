import { Provider } from '@nestjs/common';
import { WechatApiClient } from '@app/wechat';
import { MembershipConfig } from '../../config/membership.config';

/** One WeChat client for the app, pointed at the configured bases (tests use a local server). */
export const WechatApiClientProvider: Provider = {
  provide: WechatApiClient,
  inject: [MembershipConfig],
  useFactory: (config: MembershipConfig) =>
    new WechatApiClient({
      openBase: config.WECHAT_OPEN_BASE,
      apiBase: config.WECHAT_API_BASE,
      mpBase: config.WECHAT_MP_BASE,
    }),
};
