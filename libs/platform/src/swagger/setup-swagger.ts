import { INestApplication } from '@nestjs/common';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import type { RouteEntry } from '../http/route-table';

export interface SwaggerOptions {
  title: string;
  description: string;
  version: string;
  /** Scheme of the bearer credential shown in Swagger UI (JWT or API key). */
  bearerFormat: string;
  tags?: Array<[string, string]>;
}

/**
 * Swagger UI at `{base}/swagger-ui/index.html`, OpenAPI JSON at `{base}/v3/api-docs`. Returns the routes it
 * mounts (on Express, outside Nest's controllers), all open without credentials.
 */
export function setupSwagger(app: INestApplication, options: SwaggerOptions, prefix: string): RouteEntry[] {
  const builder = new DocumentBuilder()
    .setTitle(options.title)
    .setDescription(options.description)
    .setVersion(options.version)
    .addBearerAuth({ type: 'http', scheme: 'bearer', bearerFormat: options.bearerFormat }, 'bearer')
    .addSecurityRequirements('bearer');
  if (prefix) builder.addServer(prefix);
  for (const [name, description] of options.tags ?? []) builder.addTag(name, description);
  // Every operation needs the bearer unless its route is `@Public()` (libs/auth/src/decorators.ts marks those).
  // Tags are only the ones written on controllers: no implicit tag named after an untagged controller's class.
  const document = () =>
    SwaggerModule.createDocument(app, builder.build(), { ignoreGlobalPrefix: !!prefix, autoTagControllers: false });
  SwaggerModule.setup(`${prefix.replace(/^\//, '')}${prefix ? '/' : ''}swagger-ui/index.html`, app, document, {
    jsonDocumentUrl: `${prefix.replace(/^\//, '')}${prefix ? '/' : ''}v3/api-docs`,
    yamlDocumentUrl: `${prefix.replace(/^\//, '')}${prefix ? '/' : ''}v3/api-docs.yaml`,
    customSiteTitle: options.title,
    swaggerOptions: { persistAuthorization: true, displayRequestDuration: true },
  });
  // The UI's page and its assets (SwaggerModule serves them under the UI's path), and the documents.
  return [`${prefix}/swagger-ui{/*rest}`, `${prefix}/v3/api-docs`, `${prefix}/v3/api-docs.yaml`].map((path) => ({
    method: 'GET',
    path,
    public: true,
  }));
}
