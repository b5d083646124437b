import { describe, expect, it } from 'vitest';
import { layOutJson, topLevelMemberText } from '#collection/raw-json.ts';

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

describe('layOutJson', () => {
  const samples: unknown[] = [
    { conversations: [] },
    { a: {}, b: [], c: [1, [2, {}], { d: null }], e: 'x, y: {z} [w] "q" \\ \n', f: true, g: -1.5e-7, h: '' },
    [[[]], {}, 'é ☃ \u0001'],
    'just a string',
    42,
  ];

  it('lays out as JSON.stringify does, compact and indented', () => {
    for (const value of samples) {
      const compact = JSON.stringify(value);
      expect(layOutJson(compact)).toBe(compact);
      expect(layOutJson(compact, 2)).toBe(JSON.stringify(value, null, 2));
      expect(layOutJson(JSON.stringify(value, null, 4), 2)).toBe(JSON.stringify(value, null, 2));
    }
  });

  it('lays out a value at the depth it is written at inside a larger one', () => {
    for (const value of samples) {
      const laidOut = `{\n  "conversations": [\n    ${layOutJson(JSON.stringify(value), 2, 2)}\n  ]\n}`;
      expect(laidOut).toBe(JSON.stringify({ conversations: [value] }, null, 2));
    }
  });

  it('keeps numbers and strings as written, whatever the spacing around them', () => {
    const text =
      '{ "m" : {"big" :12345678901234567890123 ,\n\t"n": 9007199254740993, "x":1.00000000000000000001, "s":"caf\\u00e9 \\" ]"} }';
    expect(layOutJson(text)).toBe(
      '{"m":{"big":12345678901234567890123,"n":9007199254740993,"x":1.00000000000000000001,"s":"caf\\u00e9 \\" ]"}}',
    );
    expect(layOutJson(text, 2)).toBe(
      '{\n  "m": {\n    "big": 12345678901234567890123,\n    "n": 9007199254740993,\n    "x": 1.00000000000000000001,\n    "s": "caf\\u00e9 \\" ]"\n  }\n}',
    );
  });
});
