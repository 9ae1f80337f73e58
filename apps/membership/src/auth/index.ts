// What other membership features (OAuth, WeChat) use to sign members in.
export { AuthModule } from './auth.module';
export { LoginService } from './login.service';
export type { LoginType } from './login.service';
export { MemberLoginResponse, TokenRefreshResponse } from './dtos/member-login.dto';
export { MembersService } from '../members/members.service';
export type { CreateMemberInput } from '../members/members.service';
export { Member } from '../members/member.entity';
export { LINKED_IDENTITIES } from '../members/linked-identities';
export type { LinkedIdentitiesSource, LinkedIdentity } from '../members/linked-identities';
