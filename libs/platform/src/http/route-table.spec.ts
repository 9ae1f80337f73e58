import { Controller, Get, INestApplication, Module, Post, Put } from '@nestjs/common';
import { ModulesContainer, NestFactory } from '@nestjs/core';
import { Public } from '@app/auth';
import { BodyLimit, controllerRoutes, pathnameOf, RouteTable } from './route-table';

@Controller('api/auth')
class AuthController {
  @Public() @Post('login') login(): void {}
  @Public() @BodyLimit(64) @Post('tiny') tiny(): void {}
  @Put('profile') profile(): void {}
  @Get('profile') read(): void {}
}

@Public()
@BodyLimit(2048)
@Controller('files')
class FilesController {
  @Get('*path') file(): void {}
  @Post() upload(): void {}
}

@Controller()
class RootController {
  @Get() root(): void {}
}

@Module({ controllers: [AuthController, FilesController, RootController] })
class AppModule {}

describe('controllerRoutes and RouteTable', () => {
  let app: INestApplication;
  let table: RouteTable;
  beforeAll(async () => {
    app = await NestFactory.create(AppModule, { logger: false });
    table = new RouteTable(controllerRoutes(app.get(ModulesContainer), '/ctx'));
  });
  afterAll(() => app.close());

  it("reads each route's @Public() and @BodyLimit from the method or its controller, under the global prefix", () => {
    expect(controllerRoutes(app.get(ModulesContainer), '/ctx')).toEqual([
      { method: 'POST', path: '/ctx/api/auth/login', public: true, bodyLimit: undefined },
      { method: 'POST', path: '/ctx/api/auth/tiny', public: true, bodyLimit: 64 },
      { method: 'PUT', path: '/ctx/api/auth/profile', public: false, bodyLimit: undefined },
      { method: 'GET', path: '/ctx/api/auth/profile', public: false, bodyLimit: undefined },
      { method: 'GET', path: '/ctx/files/*path', public: true, bodyLimit: 2048 },
      { method: 'POST', path: '/ctx/files', public: true, bodyLimit: 2048 },
      { method: 'GET', path: '/ctx', public: false, bodyLimit: undefined },
    ]);
  });

  it('matches as Express routes: by method (HEAD by GET), case-insensitively, with an optional trailing slash, wildcards', () => {
    expect(table.find('POST', '/ctx/api/auth/login')).toEqual({
      public: true,
      bodyLimit: undefined,
      pattern: '/ctx/api/auth/login',
    });
    expect(table.find('post', '/CTX/Api/Auth/Login/')).toEqual({
      public: true,
      bodyLimit: undefined,
      pattern: '/ctx/api/auth/login',
    });
    expect(table.find('PUT', '/ctx/api/auth/profile')).toEqual({
      public: false,
      bodyLimit: undefined,
      pattern: '/ctx/api/auth/profile',
    });
    expect(table.find('HEAD', '/ctx/api/auth/profile')).toEqual({
      public: false,
      bodyLimit: undefined,
      pattern: '/ctx/api/auth/profile',
    });
    expect(table.find('GET', '/ctx/files/a/b.png')).toMatchObject({ public: true, bodyLimit: 2048 });
    expect(table.find('GET', '/ctx/')).toMatchObject({ public: false, bodyLimit: undefined });
  });

  it('finds no route for another method, another path or a path Express would not route there', () => {
    expect(table.find('GET', '/ctx/api/auth/login')).toBeUndefined();
    expect(table.find('POST', '/api/auth/login')).toBeUndefined();
    expect(table.find('POST', '/ctx/api/auth/login//')).toBeUndefined();
    expect(table.find('POST', '/ctx/api/auth/login/x')).toBeUndefined();
    expect(table.find('POST', '/ctx/api/auth/%6Cogin')).toBeUndefined();
    // Twice: the answer is the same from the cache.
    expect(table.find('POST', '/ctx/api/auth/%6Cogin')).toBeUndefined();
  });

  it('pathnameOf reads the path as Express routes it: no query, no fragment, the path of an absolute-form target', () => {
    expect(pathnameOf('/a/b?c=d')).toBe('/a/b');
    expect(pathnameOf(undefined)).toBe('/');
    expect(pathnameOf('/a/b#x')).toBe('/a/b');
    expect(pathnameOf('/a/b#x?y')).toBe('/a/b');
    expect(pathnameOf('http://example.com/a/b?c')).toBe('/a/b');
    expect(pathnameOf('HTTPS://example.com')).toBe('/');
    expect(pathnameOf('//example.com/a')).toBe('//example.com/a');
  });
});
