'use strict';
/**
 * The embedded DynamoDB (dynalite on LevelDB) in a process of its own, forked by dynamo-process.ts: the store's
 * request handling and LevelDB work take a third of a core while the twin ingests, so it runs on the other one.
 * Plain CommonJS so that it starts in ~100 ms with no TypeScript loader.
 * argv: <LevelDB directory> <port>. It answers `{ port }` over IPC once listening.
 */
const { dirname } = require('node:path');
const dynalite = require('dynalite');
// Writes to indexed tables cost what DynamoDB charges for them (dynamo-index-capacity.cjs).
require('./dynamo-index-capacity.cjs');
// dynalite's own LevelDB binding, to see the lock exactly as dynalite will.
const levelEntry = require.resolve('level', { paths: [dirname(require.resolve('dynalite'))] });
const { Level } = require(levelEntry);

/**
 * dynalite reads every Query and Scan through a LevelDB iterator wrapped in a stream, and closes it when the stream
 * ends or is cut short (at `Limit` or 1 MB) by calling the iterator's `return()`, the async-iterator protocol's close.
 * The iterators of its `level` (abstract-level 3) close with `close()` and have no `return()`, so none was ever
 * closed: each stayed in the database's open resources with the LevelDB iterator behind it, which pins the memtables
 * and table files it started on, so the store's memory grew with every read (a run's event log is re-queried every
 * 40-250 ms while it is tailed) and never came back. Giving the iterators the `return()` dynalite calls closes each one
 * as its request ends; what LevelDB keeps is then its own bounded block cache (8 MB) and write buffer (4 MB).
 */
const abstractLevel = require(require.resolve('abstract-level', { paths: [dirname(require.resolve('classic-level', { paths: [dirname(levelEntry)] }))] }));
for (const Iterator of [abstractLevel.AbstractIterator, abstractLevel.AbstractKeyIterator, abstractLevel.AbstractValueIterator]) {
  if (typeof Iterator.prototype.return !== 'function') {
    Object.defineProperty(Iterator.prototype, 'return', {
      configurable: true,
      writable: true,
      value: function closeIterator() {
        return this.close();
      },
    });
  }
}

const LOCK_WAIT_MS = 10_000;
const [path, port] = process.argv.slice(2);

/**
 * A store whose twin was just killed closes its LevelDB a moment later (on 'disconnect', below), while dynalite
 * fails every request on a locked directory: a twin restarted at once waits out that moment instead.
 */
async function lockFree() {
  for (const deadline = Date.now() + LOCK_WAIT_MS; ; ) {
    const probe = new Level(path);
    try {
      await probe.open();
      return await probe.close();
    } catch (error) {
      if (error.cause?.code !== 'LEVEL_LOCKED' || Date.now() > deadline) throw error;
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

let server;
// The IPC channel is the store's lifeline: it closes when the parent asks (close()) and when the parent dies in any
// way, SIGKILL included. Either way the store closes LevelDB cleanly, releasing its lock for the next start.
process.once('disconnect', () => {
  if (!server?.listening) process.exit(0);
  server.close((error) => {
    if (error) console.error(error);
    process.exit(error ? 1 : 0);
  });
});

async function main() {
  await lockFree();
  server = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0, path });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(Number(port), '127.0.0.1', resolve);
  });
  if (process.connected) process.send({ port: server.address().port });
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
