import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsInt, IsOptional, IsString, Length, Max, MaxLength, Min, ValidateIf } from 'class-validator';
import { LimitFieldsRequest, LimitFieldsResponse } from '../../limits/dtos/limit-fields.dto';

export class CreateProjectRequest extends LimitFieldsRequest {
  @ApiProperty({ example: 'web', description: 'Label shown in lists' })
  @IsString()
  @Length(1, 100)
  name: string;
}

/** Every field optional; `null` clears a limit. */
export class UpdateProjectRequest extends LimitFieldsRequest {
  @ApiPropertyOptional({ example: 'web (renamed)' })
  // Not nullable: a name cannot be removed (null is refused, not skipped).
  @ValidateIf((_, v) => v !== undefined)
  @IsString()
  @Length(1, 100)
  name?: string;
}

export class ListProjectsQuery {
  @ApiPropertyOptional({
    example: 'web',
    description: 'Only projects whose name contains this text (case-insensitive)',
  })
  @IsOptional()
  @IsString()
  @MaxLength(100)
  q?: string;

  @ApiPropertyOptional({ default: 100, minimum: 1, maximum: 500 })
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(500)
  limit?: number;

  @ApiPropertyOptional({ default: 0, minimum: 0 })
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(0)
  offset?: number;
}

export class ProjectResponse extends LimitFieldsResponse {
  @ApiProperty({ example: '3f0c9a52-6f3e-4a8e-9d51-2b1f6c0e7a10' }) id: string;
  @ApiProperty({ example: 'web' }) name: string;
  @ApiProperty({
    example: 2,
    description: 'Keys of the project that are not revoked (a project with any cannot be deleted)',
  })
  key_count: number;
  @ApiProperty({ example: '2026-11-22T02:00:00.000Z' }) created_at: string;
  @ApiProperty({ example: '2026-11-22T02:00:00.000Z' }) updated_at: string;
}

export class ProjectListResponse {
  @ApiProperty({ example: 'list' }) object: 'list';
  @ApiProperty({ type: [ProjectResponse] }) data: ProjectResponse[];
  @ApiProperty({ example: 1 }) total: number;
}

export class DeletedProjectResponse {
  @ApiProperty({ example: '3f0c9a52-6f3e-4a8e-9d51-2b1f6c0e7a10' }) id: string;
  @ApiProperty({ example: 'project' }) object: 'project';
  @ApiProperty({ example: true }) deleted: true;
}
