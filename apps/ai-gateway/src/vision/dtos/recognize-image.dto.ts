import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsIn, IsOptional, IsString, MinLength } from 'class-validator';

export const VISION_FEATURES = ['labels', 'objects', 'text', 'faces'] as const;

export class RecognizeImageRequest {
  @ApiProperty({
    description: 'Image URL (http/https, public addresses only), a data URL, or bare Base64 data',
    example: 'https://example.com/photo.jpg',
  })
  @IsString()
  @MinLength(1)
  image: string;

  @ApiProperty({ description: 'What to recognize', enum: VISION_FEATURES, isArray: true, example: ['labels', 'text'] })
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(4)
  @IsIn(VISION_FEATURES, {
    each: true,
    message: `each value in features must be one of: ${VISION_FEATURES.join(', ')}`,
  })
  features: Array<(typeof VISION_FEATURES)[number]>;

  @ApiPropertyOptional({
    description: 'OCR language (Chinese and English are read by one model)',
    default: 'zh-CN',
    example: 'zh-CN',
  })
  @IsOptional()
  @IsString()
  language?: string;
}

class BoundingBox {
  @ApiProperty({ example: 12 }) x: number;
  @ApiProperty({ example: 40 }) y: number;
  @ApiProperty({ example: 130 }) width: number;
  @ApiProperty({ example: 128 }) height: number;
}

class Label {
  @ApiProperty({ example: 'person' }) name: string;
  @ApiProperty({ example: 0.92 }) confidence: number;
}

class DetectedObject {
  @ApiProperty({ example: 'person', description: 'COCO class name' }) name: string;
  @ApiProperty({ example: 0.64 }) confidence: number;
  @ApiProperty({ type: BoundingBox, description: 'Pixels of the submitted image' }) bounding_box: BoundingBox;
}

class RecognizedText {
  @ApiProperty({ example: '会员服务平台' }) content: string;
  @ApiProperty({ example: 0.998 }) confidence: number;
  @ApiProperty({ type: BoundingBox, description: 'Axis-aligned box around the line' }) bounding_box: BoundingBox;
}

class DetectedFace {
  @ApiProperty({ example: 0.92 }) confidence: number;
  @ApiProperty({ type: BoundingBox }) bounding_box: BoundingBox;
}

export class RecognizeImageResponse {
  @ApiPropertyOptional({
    type: [Label],
    description: 'Present when requested: distinct object classes found (and "face"), best confidence each',
  })
  labels?: Label[];

  @ApiPropertyOptional({ type: [DetectedObject], description: 'Present when requested' })
  objects?: DetectedObject[];

  @ApiPropertyOptional({
    type: [RecognizedText],
    description: 'Present when requested: one entry per text line, in reading order',
  })
  text?: RecognizedText[];

  @ApiPropertyOptional({
    type: [DetectedFace],
    description: 'Present when requested (shape chosen by this service: confidence and box per face)',
  })
  faces?: DetectedFace[];
}
