import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const CHILD = fileURLToPath(new URL('./dynamo-child.cjs', import.meta.url));
/** The store's own output is kept only to explain a failure; this much of its tail is enough for that. */
const OUTPUT_TAIL_CHARS = 16_384;
/**
 * The store keeps about 10 MB of live objects but allocates fast (each request's JSON and LevelDB buffers), and under
 * that load V8 grows a young generation up to 64 MB a semi-space on a 64-bit machine: over the first minutes of traffic
 * the process took some 100 MB more, all of it garbage between two scavenges. Semi-spaces of this size keep it flat.
 */
const STORE_SEMI_SPACE_MB = 8;
/** dynalite gives in-flight requests 30 s to finish when closing; past that the process is stuck, not busy. */
const CLOSE_GRACE_MS = 35_000;

export interface DynamoProcess {
  endpoint: string;
  /** The store's own process, not this one. */
  pid: number;
  close(): Promise<void>;
}

/**
 * The embedded DynamoDB in a child process (dynamo-child.cjs), so its CPU work runs beside the twin's rather than
 * on its one thread. The child lives exactly as long as its IPC channel to this process: close() disconnects and
 * waits for the exit that follows, and a parent that dies, however abruptly, takes the channel and the store with it.
 */
export async function startDynamoProcess(path: string, port: number): Promise<DynamoProcess> {
  const child = fork(CHILD, [path, String(port)], {
    // Not this process's flags: under tsx they would load a TypeScript loader the plain-JS child does not need.
    execArgv: [`--max-semi-space-size=${STORE_SEMI_SPACE_MB}`],
    // Out of the terminal's process group: a Ctrl-C reaches the twin alone, which then closes the store after the
    // functions that write to it, instead of the store dying under them.
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  let output = '';
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-OUTPUT_TAIL_CHARS);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const describeExit = () => (child.signalCode ? `signal ${child.signalCode}` : `exit code ${child.exitCode}`);

  const listeningPort = await new Promise<number>((resolve, reject) => {
    child.once('message', (message: { port: number }) => resolve(message.port));
    child.once('error', reject);
    void exited.then(() => reject(new Error(`The embedded DynamoDB did not start (${describeExit()}):\n${output}`)));
  });

  let closing = false;
  void exited.then(() => {
    if (closing) return;
    // Every table of the twin lives there: nothing works until the twin is restarted, so say so plainly.
    console.error(`\n*** The embedded DynamoDB (pid ${child.pid}) died (${describeExit()}); restart the twin. Its output:\n${output}`);
  });
  return {
    endpoint: `http://127.0.0.1:${listeningPort}`,
    pid: child.pid!,
    async close() {
      if (closing) return exited;
      closing = true;
      if (child.exitCode !== null || child.signalCode !== null) return;
      const stuck = setTimeout(() => child.kill('SIGKILL'), CLOSE_GRACE_MS);
      child.disconnect();
      await exited;
      clearTimeout(stuck);
    },
  };
}
