// What other membership features (OAuth, WeChat) use to sign members in.
export { AuthModule } from './auth.module';
export { LoginService, LoginType } from './login.service';
export { MemberLoginResponse, TokenRefreshResponse } from './dtos/member-login.response';
export { MembersService, CreateMemberInput } from '../members/members.service';
export { Member } from '../members/member.entity';
export { LINKED_IDENTITIES, LinkedIdentitiesSource, LinkedIdentity } from '../members/linked-identities';
