import { Module } from '@nestjs/common';
import { Clock, UploadSlots } from '@app/platform';
import { GatewayConfig } from '../config/gateway.config';
import { UploadAdmission, uploadSlotsFor } from './upload-admission';

/**
 * The replica's one UploadSlots, for the multipart routes of the vision and speech modules: a Nest interceptor is
 * made once per module that uses it, so the count lives here, shared, not in the interceptor.
 */
@Module({
  providers: [{ provide: UploadSlots, inject: [Clock, GatewayConfig], useFactory: uploadSlotsFor }, UploadAdmission],
  exports: [UploadSlots, UploadAdmission],
})
export class UploadsModule {}
