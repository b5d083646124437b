'use strict';
/**
 * The embedded DynamoDB (dynalite on LevelDB) in a process of its own, forked by dynamo-process.ts: the store's
 * request handling and LevelDB work take a third of a core while the twin ingests, so it runs on the other one.
 * Plain CommonJS so that it starts in ~100 ms with no TypeScript loader.
 * argv: <LevelDB directory> <port>. It answers `{ port }` over IPC once listening.
 */
const { dirname } = require('node:path');
const dynalite = require('dynalite');
// dynalite's own LevelDB binding, to see the lock exactly as dynalite will.
const { Level } = require(require.resolve('level', { paths: [dirname(require.resolve('dynalite'))] }));

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
