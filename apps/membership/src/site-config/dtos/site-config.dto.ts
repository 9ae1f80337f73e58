import { ApiProperty } from '@nestjs/swagger';
import { IsObject, Validate, ValidatorConstraint, ValidatorConstraintInterface } from 'class-validator';

export const SETTING_KEY = /^[a-z][a-z0-9_]*(\.[a-z0-9_]+)+$/;
/** Prefixes readable without a token; other keys stay admin-only. */
export const PUBLIC_PREFIXES = ['site.', 'seo.', 'footer.'];

export class SiteConfigResponse {
  @ApiProperty({
    type: 'object',
    additionalProperties: { type: 'string' },
    example: {
      'site.name': 'My Site',
      'site.logo': '/files/2026/11/logo.png',
      'site.favicon': '/files/2026/11/favicon.png',
      'site.description': 'Member website',
      'seo.title_template': '{page} - {site}',
      'seo.keywords': 'members',
      'footer.copyright': '© 2026 My Site',
      'footer.icp': '',
    },
  })
  values: Record<string, string>;
}

function problemOf(values: unknown): string {
  if (!values || typeof values !== 'object' || Array.isArray(values)) return 'values must be an object';
  const entries = Object.entries(values as Record<string, unknown>);
  if (entries.length === 0 || entries.length > 100) return 'values must hold 1 to 100 settings';
  for (const [key, value] of entries) {
    if (key.length > 100 || !SETTING_KEY.test(key)) return `values.${key}: key must look like "site.name"`;
    if (value !== null && (typeof value !== 'string' || value.length > 4000)) {
      return `values.${key}: must be a string of at most 4000 characters, or null to delete`;
    }
  }
  return '';
}

@ValidatorConstraint({ name: 'settingValues' })
class SettingValues implements ValidatorConstraintInterface {
  private problem = '';
  validate(values: unknown): boolean {
    this.problem = problemOf(values);
    return this.problem === '';
  }
  defaultMessage(): string {
    return this.problem || 'values are invalid';
  }
}

export class UpdateSiteConfigRequest {
  @ApiProperty({
    type: 'object',
    additionalProperties: { type: 'string', nullable: true },
    example: { 'site.name': 'My Site', 'footer.icp': '京ICP备00000000号' },
    description: 'Settings to set; null deletes a key',
  })
  @IsObject()
  @Validate(SettingValues)
  values: Record<string, string | null>;
}
