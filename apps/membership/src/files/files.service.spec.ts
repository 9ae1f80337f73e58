import { createHash } from 'crypto';
import { existsSync, readdirSync, rmSync } from 'fs';
import * as path from 'path';
import { ErrorCode } from '@app/envelope';
import { RunningApp, startMembership } from '../../../../test/support/apps';
import { queryRows } from '../../../../test/support/database';
import { tinyPng } from '../../../../test/support/png';
import { MembersService } from '../members/members.service';
import { FilesService } from './files.service';

const PDF = Buffer.from('%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n');
const GIF = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64');
const MAX_BYTES = 4096;
const QUOTA = 6000;

// The real use case with the local-disk storage under the app's DATA_DIR and a real database.
describe('FilesService: member uploads and public media', () => {
  let app: RunningApp;
  let files: FilesService;
  let seq = 0;

  const newMember = async () =>
    (await app.app.get(MembersService).create({ username: `files_spec_${++seq}` }, { method: 'password' })).id;
  const storedFiles = (dir = path.join(app.dataDir, 'files')): number =>
    existsSync(dir)
      ? readdirSync(dir, { withFileTypes: true }).reduce(
          (n, e) => n + (e.isDirectory() ? storedFiles(path.join(dir, e.name)) : 1),
          0,
        )
      : 0;
  const recorded = async (memberId: string) =>
    (
      await queryRows(
        app.dbUrl,
        `SELECT (SELECT count(*) FROM member_files WHERE member_id = $1)::int AS files,
                (SELECT bytes FROM member_file_usage WHERE member_id = $1)::int AS bytes`,
        [memberId],
      )
    )[0];
  const readAll = async (body: NodeJS.ReadableStream) => {
    const chunks: Buffer[] = [];
    for await (const c of body) chunks.push(Buffer.from(c as Buffer));
    return Buffer.concat(chunks);
  };

  beforeAll(async () => {
    app = await startMembership({
      LOG_LEVEL: 'silent',
      UPLOAD_MAX_BYTES: String(MAX_BYTES),
      UPLOAD_MAX_BYTES_PER_MEMBER: String(QUOTA),
      // Files count their own size here (no floor): these tests are about the bytes (the floor: test/membership/files.e2e-spec.ts).
      UPLOAD_MIN_CHARGED_BYTES: '1',
      // Spaces and capitals as an operator may write them: the list is read trimmed and lower-cased.
      UPLOAD_ALLOWED_TYPES: ' image/png , IMAGE/GIF ',
    });
    files = app.app.get(FilesService);
  });
  afterAll(() => app?.close());

  it('stores the bytes under a generated name with the type they show, and records them against the member', async () => {
    const memberId = await newMember();
    const bytes = tinyPng();
    const file = await files.upload(memberId, { buffer: bytes, originalname: '../../etc/"avatar".gif', size: 1 });
    expect(file).toMatchObject({
      memberId,
      filename: expect.stringMatching(/^\d{4}\/\d{2}\/[0-9a-f]{32}\.png$/),
      originalFilename: 'avatar.gif',
      size: bytes.length,
      contentType: 'image/png',
      ext: 'png',
      sha256: createHash('sha256').update(bytes).digest('hex'),
      storage: 'local',
    });
    const opened = await files.open(file.filename);
    expect(opened?.file.id).toBe(file.id);
    expect(Buffer.compare(await readAll(opened!.object.body), bytes)).toBe(0);
    expect(await recorded(memberId)).toEqual({ files: 1, bytes: bytes.length });
    // A type the operator wrote in capitals is allowed too.
    expect((await files.upload(memberId, { buffer: GIF, size: GIF.length })).contentType).toBe('image/gif');
  });

  it('refuses a missing part, empty or oversize bytes and a type not allowed, storing and recording nothing', async () => {
    const memberId = await newMember();
    const before = storedFiles();
    await expect(files.upload(memberId, undefined)).rejects.toMatchObject({
      code: ErrorCode.VALIDATION_FAILED,
      extras: { details: { fields: [{ field: 'file' }] } },
    });
    const refusals: [Buffer, ErrorCode, RegExp][] = [
      [Buffer.alloc(0), ErrorCode.UNSUPPORTED_MEDIA_TYPE, /^Empty file$/],
      [tinyPng(MAX_BYTES), ErrorCode.PAYLOAD_TOO_LARGE, new RegExp(String(MAX_BYTES))],
      // Recognised, but not in UPLOAD_ALLOWED_TYPES (the message lists what is).
      [PDF, ErrorCode.UNSUPPORTED_MEDIA_TYPE, /image\/png, image\/gif/],
      // Not recognised at all, whatever the name says.
      [Buffer.from('just some text, named like a picture'), ErrorCode.UNSUPPORTED_MEDIA_TYPE, /not allowed/],
    ];
    for (const [buffer, code, message] of refusals)
      await expect(
        files.upload(memberId, { buffer, originalname: 'a.png', size: buffer.length }),
      ).rejects.toMatchObject({ code, message: expect.stringMatching(message) });
    expect(storedFiles()).toBe(before);
    expect(await recorded(memberId)).toEqual({ files: 0, bytes: null });
  });

  it("takes uploads up to exactly the member's quota and refuses the next, storing nothing; other members are not affected", async () => {
    const memberId = await newMember();
    const first = tinyPng(2500);
    await files.upload(memberId, { buffer: first, size: first.length });
    // A tEXt chunk adds 12 bytes of framing to its data (test/support/png.ts).
    const rest = tinyPng(QUOTA - first.length - tinyPng().length - 12);
    expect(first.length + rest.length).toBe(QUOTA);
    await files.upload(memberId, { buffer: rest, size: rest.length });

    const before = storedFiles();
    await expect(files.upload(memberId, { buffer: GIF, size: GIF.length })).rejects.toMatchObject({
      code: ErrorCode.PAYLOAD_TOO_LARGE,
      message: expect.stringContaining(String(QUOTA)),
    });
    expect(storedFiles()).toBe(before);
    expect(await recorded(memberId)).toEqual({ files: 2, bytes: QUOTA });
    await files.upload(await newMember(), { buffer: first, size: first.length });
  });

  it('opens nothing for an unknown name, a name that leaves the storage root, or a record whose bytes are gone', async () => {
    const file = await files.upload(await newMember(), { buffer: tinyPng(), size: 1 });
    for (const name of ['2026/01/nope.png', '../package.json', `${file.filename}/..`, '/etc/passwd', ''])
      expect(await files.open(name)).toBeNull();
    rmSync(path.join(app.dataDir, 'files', file.filename));
    expect(await files.open(file.filename)).toBeNull();
  });
});
