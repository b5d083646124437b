import { createHash } from 'node:crypto';
import type { ImageModel } from './image-model.ts';

/**
 * The embedded default: a deterministic PNG (same prompt, size and seed, same bytes) of colour bands derived from
 * the prompt's hash, so image nodes run offline and a test can check what it got. pngjs loads with the first image.
 */
export const scriptedImageModel: ImageModel = {
  async generate({ prompt, width, height, seed }) {
    const { PNG } = await import('pngjs');
    const digest = createHash('sha256')
      .update(`${seed ?? 0}\n${prompt}`, 'utf8')
      .digest();
    const png = new PNG({ width, height });
    for (let y = 0; y < height; y += 1) {
      const band = Math.floor((y * 8) / height) * 3;
      for (let x = 0; x < width; x += 1) {
        const offset = (y * width + x) * 4;
        const shade = (x * 255) / Math.max(1, width - 1);
        png.data[offset] = digest[band]! ^ shade;
        png.data[offset + 1] = digest[band + 1]!;
        png.data[offset + 2] = digest[band + 2]!;
        png.data[offset + 3] = 255;
      }
    }
    return PNG.sync.write(png);
  },
};
