import { Injectable } from '@nestjs/common';
import { DataSource, Repository } from 'typeorm';
import { MemberFile } from './member-file.entity';

/** The only place that reads or writes uploaded-file records. */
@Injectable()
export class FilesRepository {
  private readonly repo: Repository<MemberFile>;

  constructor(db: DataSource) {
    this.repo = db.getRepository(MemberFile);
  }

  insert(file: Partial<MemberFile>): Promise<MemberFile> {
    return this.repo.save(this.repo.create(file));
  }

  findByFilename(filename: string): Promise<MemberFile | null> {
    return this.repo.findOne({ where: { filename } });
  }
}
