import type { S3Client } from '@aws-sdk/client-s3';
import { RECORDING_TRANSFER_TIMEOUT_MS } from '#shared/limits.ts';
import { CollectionFailure } from './collection-service.ts';
import { downloadRecording, RecordingDownloadError, s3RecordingSink } from './recording-download.ts';

/** Recordings into the bucket; a download's own failures (redirect, status, timeout, blocked address) count against the event. */
export function createRecordingFetcher(s3: S3Client, bucket: string, options: { allowLoopback: boolean; timeoutMs?: number }) {
  return {
    async fetch(url: string, key: string) {
      try {
        return await downloadRecording(url, s3RecordingSink(s3, bucket, key), {
          allowLoopback: options.allowLoopback,
          timeoutMs: options.timeoutMs ?? RECORDING_TRANSFER_TIMEOUT_MS,
        });
      } catch (error) {
        if (error instanceof RecordingDownloadError) throw new CollectionFailure(error.reason);
        throw error;
      }
    },
  };
}
