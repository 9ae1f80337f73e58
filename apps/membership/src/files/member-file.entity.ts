import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';

/** An uploaded file. `filename` is generated and is also the storage key and the public path. */
@Entity('member_files')
@Index('idx_member_files_member', ['memberId'])
export class MemberFile {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'member_id', type: 'bigint' })
  memberId: string;

  @Column({ type: 'varchar', length: 128, unique: true })
  filename: string;

  @Column({ name: 'original_filename', type: 'varchar', length: 255 })
  originalFilename: string;

  @Column({ type: 'int' })
  size: number;

  @Column({ name: 'content_type', type: 'varchar', length: 128 })
  contentType: string;

  @Column({ type: 'varchar', length: 16 })
  ext: string;

  @Column({ type: 'char', length: 64 })
  sha256: string;

  @Column({ type: 'varchar', length: 16 })
  storage: string;

  @CreateDateColumn({ name: 'created_time', type: 'timestamptz' })
  createdTime: Date;
}
