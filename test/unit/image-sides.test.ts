import { describe, expect, it } from 'vitest';
import { publishedApiDocument } from '#published/openapi.ts';
import { MAX_IMAGE_SIDE, MIN_IMAGE_SIDE } from '#shared/limits.ts';
import { nodeSchema } from '#workflows/definition-schema.ts';

/** An image's sides are bounded where they are written (the image node) and where they are read (its event). */
const imageNode = (side: number) => ({ type: 'image', provider: 'scripted', prompt: 'a cat', width: side, height: side, next: 'done' });

describe('image sides', () => {
  it('bound the image node', () => {
    for (const side of [0, MIN_IMAGE_SIDE - 1, -9_007_199_254_740_991, MAX_IMAGE_SIDE + 1, 1.5])
      expect(nodeSchema.safeParse(imageNode(side)).success, String(side)).toBe(false);
    expect(
      nodeSchema.safeParse({ ...imageNode(MAX_IMAGE_SIDE), provider: 'bedrock', model_id: 'amazon.nova-canvas-v1:0', height: 1024 })
        .success,
    ).toBe(true);
  });

  it('bound the image event the published API documents', () => {
    const { properties } = (publishedApiDocument() as { components: { schemas: Record<string, unknown> } }).components.schemas
      .ImageEvent as { properties: Record<string, object> };
    for (const side of ['width', 'height'])
      expect(properties[side], side).toEqual({ type: 'integer', minimum: MIN_IMAGE_SIDE, maximum: MAX_IMAGE_SIDE });
  });
});
