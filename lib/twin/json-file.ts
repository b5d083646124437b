import { readFileSync } from 'node:fs';

/**
 * A stand-in's state file, read at start: a missing file is an empty store; an unreadable one stops the twin rather
 * than be overwritten on its next write (`whenMovedAway` says what starting without it means).
 */
export function loadJsonRecord<T>(file: string, whenMovedAway: string): Record<string, T> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw error;
  }
  try {
    return JSON.parse(text) as Record<string, T>;
  } catch {
    throw new Error(`${file} is not valid JSON; move it away to start with ${whenMovedAway}`);
  }
}
