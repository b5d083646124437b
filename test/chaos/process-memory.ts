import { readdirSync, readFileSync } from 'node:fs';

/**
 * Resident memory of a process tree, read from Linux's /proc: what the kernel holds for each process (VmRSS), which is
 * what a machine running the twin runs out of, whatever V8 or the allocator think of it.
 */
export interface ProcessMemory {
  pid: number;
  /** The command line, space-joined (enough to tell the embedded DynamoDB from anything else). */
  command: string;
  rssBytes: number;
}

/** VmRSS of one process, or undefined once it has gone. */
function residentBytes(pid: number): number | undefined {
  let status: string;
  try {
    status = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return undefined;
  }
  const kib = /^VmRSS:\s+(\d+)\s+kB$/m.exec(status)?.[1];
  // A zombie has no VmRSS line: it holds no memory any more.
  return kib === undefined ? 0 : Number(kib) * 1024;
}

function commandOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ');
  } catch {
    return '';
  }
}

/** The direct children of a process: every thread's `children` list (a child belongs to the thread that forked it). */
function childrenOf(pid: number): number[] {
  let threads: string[];
  try {
    threads = readdirSync(`/proc/${pid}/task`);
  } catch {
    return [];
  }
  const children = new Set<number>();
  for (const thread of threads) {
    try {
      for (const child of readFileSync(`/proc/${pid}/task/${thread}/children`, 'utf8').split(' ')) {
        if (child.trim()) children.add(Number(child));
      }
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return [...children];
}

/** Every process below `pid` (children, their children, ...), detached ones included: they keep their parent. */
function descendantsOf(pid: number): number[] {
  const found: number[] = [];
  const queue = childrenOf(pid);
  while (queue.length > 0) {
    const next = queue.shift()!;
    if (found.includes(next)) continue;
    found.push(next);
    queue.push(...childrenOf(next));
  }
  return found;
}

/** The process and each of its descendants, with their resident memory (processes that ended meanwhile left out). */
export function processTreeMemory(pid: number): { root: ProcessMemory | undefined; descendants: ProcessMemory[] } {
  const read = (one: number): ProcessMemory | undefined => {
    const rssBytes = residentBytes(one);
    return rssBytes === undefined ? undefined : { pid: one, command: commandOf(one), rssBytes };
  };
  return { root: read(pid), descendants: descendantsOf(pid).flatMap((one) => read(one) ?? []) };
}

/** Whether a process still exists (and is not a zombie waiting for its parent). */
export function isAlive(pid: number): boolean {
  try {
    return !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'));
  } catch {
    return false;
  }
}
