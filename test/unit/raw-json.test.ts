import { describe, expect, it } from 'vitest';
import { topLevelMemberText } from '#collection/raw-json.ts';

describe('the source text of a top-level member', () => {
  it('answers a value exactly as written, numbers JSON.parse would round included', () => {
    const text = '{"type":"call", "metadata" : {"big":12345678901234567890123,"n":9007199254740993,"s":"a\\"}{,]"} ,"z":1}';
    expect(topLevelMemberText(text, 'metadata')).toBe('{"big":12345678901234567890123,"n":9007199254740993,"s":"a\\"}{,]"}');
    expect(topLevelMemberText(text, 'z')).toBe('1');
    expect(topLevelMemberText(text, 'type')).toBe('"call"');
    expect(topLevelMemberText(text, 'missing')).toBeUndefined();
  });

  it('skips nested members of the same name and answers the last of a repeated name, as JSON.parse keeps it', () => {
    const text = '{"a":{"metadata":1},"metadata":[1,{"x":[2]}],"b":"metadata","metadata":\n\t-1.5e+300\n}';
    expect(topLevelMemberText(text, 'metadata')).toBe('-1.5e+300');
    expect(topLevelMemberText('{"\\u006detadata":true}', 'metadata')).toBe('true');
  });

  it('answers nothing for a text whose top level is not an object', () => {
    expect(topLevelMemberText('[{"metadata":1}]', 'metadata')).toBeUndefined();
    expect(topLevelMemberText(' {} ', 'metadata')).toBeUndefined();
  });
});
