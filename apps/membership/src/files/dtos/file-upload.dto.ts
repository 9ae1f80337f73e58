import { ApiProperty } from '@nestjs/swagger';

export class FileUploadResponse {
  @ApiProperty({ example: '0b8a3c5e-2f71-4d0e-9a6b-1c2d3e4f5a6b' })
  id: string;
  @ApiProperty({
    example: '/files/2026/11/3f9c0d1e5b2a4c7d8e9f0a1b2c3d4e5f.png',
    description: 'Relative media path, served publicly by this app',
  })
  url: string;
  @ApiProperty({ example: '2026/11/3f9c0d1e5b2a4c7d8e9f0a1b2c3d4e5f.png', description: 'Generated name' })
  filename: string;
  @ApiProperty({ example: 'avatar.png' })
  originalFilename: string;
  @ApiProperty({ example: 48213 })
  size: number;
  @ApiProperty({ example: 'image/png', description: 'Detected from the bytes' })
  contentType: string;
  @ApiProperty({ example: 'png' })
  ext: string;
  @ApiProperty({ example: '9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08' })
  sha256: string;
  @ApiProperty({ example: '2026-11-22T03:00:00.000Z' })
  createdTime: Date;
}
