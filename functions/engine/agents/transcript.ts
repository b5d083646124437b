import type { ContentBlock, TranscriptMessage } from './agent-model.ts';

/**
 * What a hand-off gives the next agent: the transcript so far, with the earlier agent's tool uses and results
 * told as text. The next agent has other tools (or none), and a model refuses tool blocks its request does not
 * declare. The turn that handed off is not part of it, so the transcript still ends with the user's turn.
 */
export function carriedTranscript(transcript: readonly TranscriptMessage[]): TranscriptMessage[] {
  const told: TranscriptMessage[] = [];
  for (const message of transcript) {
    const text = message.content.map(asText).join('\n');
    const previous = told.at(-1);
    if (previous?.role === message.role) previous.content = [{ text: `${(previous.content[0] as { text: string }).text}\n${text}` }];
    else told.push({ role: message.role, content: [{ text }] });
  }
  if (told.at(-1)?.role === 'assistant') told.pop();
  return told;
}

function asText(block: ContentBlock): string {
  if ('text' in block) return block.text;
  if ('toolUse' in block) return `[called ${block.toolUse.name} with ${JSON.stringify(block.toolUse.input)}]`;
  const { name, answer } = block.toolResult;
  return answer.ok ? `[${name} answered ${JSON.stringify(answer.result)}]` : `[${name} failed: ${answer.error}]`;
}
