import type { BodyStore, ObjectEncoding } from '#shared/store/body-store.ts';
import { awsError, Faults } from './faults.ts';

/** The bodies bucket in memory; `deleted` keeps every key deleted, so a test can tell a cleanup from a key never written. */
export class InMemoryBodyStore implements BodyStore {
  readonly objects = new Map<string, { body: Uint8Array } & ObjectEncoding>();
  readonly deleted: string[] = [];
  readonly faults = new Faults<keyof BodyStore>();

  async put(key: string, body: Uint8Array, encoding: ObjectEncoding): Promise<void> {
    await this.faults.enter('put');
    this.objects.set(key, { body: Uint8Array.from(body), ...encoding });
  }

  async get(key: string): Promise<Uint8Array> {
    await this.faults.enter('get');
    const object = this.objects.get(key);
    if (!object) throw awsError('NoSuchKey', 'The specified key does not exist.');
    return Uint8Array.from(object.body);
  }

  /** S3 answers a delete of a missing key with success too. */
  async delete(key: string): Promise<void> {
    await this.faults.enter('delete');
    this.objects.delete(key);
    this.deleted.push(key);
  }
}
