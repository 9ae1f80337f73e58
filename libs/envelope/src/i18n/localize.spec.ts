import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { BusinessException } from '../business.exception';
import { ErrorCode } from '../error-code';
import { FieldErrorsText, fieldError } from '../validation';
import { codeMessage, getDefaultLocale, localizedMessage, msg, negotiateLocale, setDefaultLocale } from './localize';
import { EN } from './messages.en';
import { ZH_CN } from './messages.zh-CN';

describe('envelope messages: catalogs and Accept-Language', () => {
  afterEach(() => setDefaultLocale('en'));

  it('negotiates with quality values and language prefixes; nothing usable means DEFAULT_LOCALE', () => {
    expect(negotiateLocale('zh-CN,zh;q=0.9,en;q=0.8')).toBe('zh-CN');
    expect(negotiateLocale('zh')).toBe('zh-CN');
    expect(negotiateLocale('zh-TW')).toBe('zh-CN');
    expect(negotiateLocale('zh-cn')).toBe('zh-CN');
    expect(negotiateLocale('en-US,en;q=0.9,zh;q=0.1')).toBe('en');
    expect(negotiateLocale('en;q=0.2,zh;q=0.9')).toBe('zh-CN');
    expect(negotiateLocale('fr')).toBe('en');
    expect(negotiateLocale(undefined)).toBe('en');
    expect(negotiateLocale('')).toBe('en');
    expect(negotiateLocale(';;;,q=x,,')).toBe('en');
    expect(negotiateLocale('x'.repeat(5000))).toBe('en');
    setDefaultLocale('zh-CN');
    expect(getDefaultLocale()).toBe('zh-CN');
    expect(negotiateLocale(undefined)).toBe('zh-CN');
    expect(negotiateLocale('fr')).toBe('zh-CN');
    expect(negotiateLocale('*')).toBe('zh-CN');
    expect(negotiateLocale('en')).toBe('en');
    expect(() => setDefaultLocale('de' as never)).toThrow(/unknown locale/);
  });

  it('every language has every key with the same placeholders', () => {
    const placeholders = (t: string) => [...t.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort();
    expect(Object.keys(ZH_CN).sort()).toEqual(Object.keys(EN).sort());
    for (const key of Object.keys(EN) as (keyof typeof EN)[]) {
      expect({ key, p: placeholders(ZH_CN[key]) }).toEqual({ key, p: placeholders(EN[key]) });
      expect(ZH_CN[key].trim()).not.toBe('');
    }
    for (const code of Object.values(ErrorCode).filter(
      (c): c is ErrorCode => typeof c === 'number' && c !== ErrorCode.OK,
    )) {
      expect({ code, has: codeMessage(code) !== undefined }).toEqual({ code, has: true });
    }
  });

  it('renders a message per locale with its parameters; English for logs', () => {
    const m = msg('members.taken', { field: msg('field.email') });
    expect(m.render('zh-CN')).toBe('邮箱已被占用');
    expect(String(m)).toBe('email is already taken');
    const e = new BusinessException(ErrorCode.CODE_INVALID, msg('verification.codeInvalidTriesLeft', { tries: 3 }));
    expect(e.message).toBe('Verification code is wrong, expired or used up (3 tries left)');
    expect(e.text?.render('zh-CN')).toBe('验证码错误、已过期或已被使用（还可尝试 3 次）');
    expect(new BusinessException(ErrorCode.UNAUTHORIZED).text?.render('zh-CN')).toBe('请先登录');
  });

  it('text without a key: as is in English, the code message in other languages', () => {
    const e = new BusinessException(ErrorCode.SERVICE_UNAVAILABLE, 'upstream said: invalid_client');
    expect(e.text).toBeUndefined();
    expect(localizedMessage('en', e.code, e.text, e.message)).toBe('upstream said: invalid_client');
    expect(localizedMessage('zh-CN', e.code, e.text, e.message)).toBe('服务暂不可用');
  });

  it('validation failures keep field names; English keeps the validator text, Chinese uses the constraint text', () => {
    const text = new FieldErrorsText([
      { field: 'email', constraint: 'isEmail', message: 'email must be an email address' },
      { field: 'extra', constraint: 'whitelistValidation', message: 'property extra should not exist' },
      { field: 'x', constraint: 'someUnknownConstraint', message: 'x is odd' },
    ]);
    expect(text.render('en')).toBe(
      'email: email must be an email address; property extra should not exist'.replace('; ', '; extra: ') +
        '; x: x is odd',
    );
    expect(text.render('zh-CN')).toBe('email：必须是有效的邮箱地址；extra：不允许的字段；x：无效');
    const short = fieldError('password', 'passwordTooShort', 'password must be 8 to 128 characters', { min: 8 });
    expect(short.message).toBe('password: password must be 8 to 128 characters');
    expect(short.text?.render('zh-CN')).toBe('password：至少 8 个字符');
    expect(short.extras.details).toEqual({
      fields: [{ field: 'password', message: 'password must be 8 to 128 characters' }],
    });
  });

  // Class sweep: a message written as a string literal in a BusinessException bypasses the catalogs.
  it('no BusinessException in apps/ or libs/ is given a literal message (use msg(key) from the catalogs)', () => {
    const root = join(__dirname, '../../../..');
    const offenders: string[] = [];
    const walk = (dir: string) => {
      for (const name of readdirSync(dir)) {
        const p = join(dir, name);
        if (statSync(p).isDirectory()) {
          if (name !== 'node_modules') walk(p);
        } else if (p.endsWith('.ts') && !p.endsWith('.spec.ts')) {
          const src = readFileSync(p, 'utf8');
          for (const m of src.matchAll(/new BusinessException\(\s*ErrorCode\.\w+\s*,\s*(['"`])/g))
            offenders.push(`${p}: ${src.slice(m.index, m.index + 90)}`);
        }
      }
    };
    walk(join(root, 'apps'));
    walk(join(root, 'libs'));
    expect(offenders).toEqual([]);
  });
});
