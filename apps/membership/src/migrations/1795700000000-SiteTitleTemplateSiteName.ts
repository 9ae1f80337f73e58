import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The default page-title template names the site through its placeholder, as mortise does: the website
 * (usePublicSiteConfig) replaces `{page}` with the page title and `{site}` with `site.name`, so renaming
 * the site renames every title. The first default, `%s - Membership`, kept "Membership" after a rename.
 * Only the untouched default is changed; a template an admin set is left alone.
 */
export class SiteTitleTemplateSiteName1795700000000 implements MigrationInterface {
  name = 'SiteTitleTemplateSiteName1795700000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(
      `UPDATE site_settings SET value = '{page} - {site}', updated_time = now() WHERE key = 'seo.title_template' AND value = '%s - Membership'`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(
      `UPDATE site_settings SET value = '%s - Membership', updated_time = now() WHERE key = 'seo.title_template' AND value = '{page} - {site}'`,
    );
  }
}
