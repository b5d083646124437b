import { createHash } from 'node:crypto';
import { PNG } from 'pngjs';

type Json = Record<string, unknown>;

export const NOVA_CANVAS_MODEL = 'amazon.nova-canvas-v1:0';

/**
 * Nova Canvas's documented request rules for TEXT_IMAGE (the only task the product uses): sides 320-4096 and
 * divisible by 16, at most 4,194,304 pixels, aspect ratio within 1:4..4:1, prompt text 1-1024 characters, 1-5 images.
 */
export function novaCanvasProblem(modelId: string, body: Json): string | undefined {
  if (modelId !== NOVA_CANVAS_MODEL) return `The stand-in answers InvokeModel for ${NOVA_CANVAS_MODEL} only, not ${modelId}`;
  if (body.taskType !== 'TEXT_IMAGE') return `taskType ${JSON.stringify(body.taskType)} is not supported by the stand-in (TEXT_IMAGE only)`;
  const text = (body.textToImageParams as { text?: unknown } | undefined)?.text;
  if (typeof text !== 'string' || text.length < 1 || text.length > 1024) return 'textToImageParams.text must be 1-1024 characters';
  const config = (body.imageGenerationConfig ?? {}) as { width?: unknown; height?: unknown; numberOfImages?: unknown };
  const width = config.width ?? 1024;
  const height = config.height ?? 1024;
  if (typeof width !== 'number' || typeof height !== 'number') return 'imageGenerationConfig.width and height must be numbers';
  for (const [side, value] of [['width', width], ['height', height]] as const) {
    if (!Number.isInteger(value) || value < 320 || value > 4096 || value % 16 !== 0) return `imageGenerationConfig.${side} must be 320-4096 and divisible by 16`;
  }
  if (width * height > 4_194_304) return 'The total pixel count must be less than 4,194,304';
  if (Math.max(width, height) / Math.min(width, height) > 4) return 'The aspect ratio must be between 1:4 and 4:1';
  const count = config.numberOfImages ?? 1;
  if (typeof count !== 'number' || !Number.isInteger(count) || count < 1 || count > 5) return 'imageGenerationConfig.numberOfImages must be 1-5';
  return undefined;
}

/** A deterministic picture of the request: same prompt, size and seed, same bytes. */
export function drawNovaCanvasImage(body: Json): Buffer {
  const config = (body.imageGenerationConfig ?? {}) as { width?: number; height?: number; seed?: number };
  const width = config.width ?? 1024;
  const height = config.height ?? 1024;
  const text = (body.textToImageParams as { text: string }).text;
  const digest = createHash('sha256').update(`nova\n${config.seed ?? 0}\n${text}`, 'utf8').digest();
  const png = new PNG({ width, height });
  for (let y = 0; y < height; y += 1) {
    for (let x = 0; x < width; x += 1) {
      const offset = (y * width + x) * 4;
      png.data[offset] = digest[(x >> 4) % 32]!;
      png.data[offset + 1] = digest[(y >> 4) % 32]!;
      png.data[offset + 2] = digest[((x + y) >> 5) % 32]!;
      png.data[offset + 3] = 255;
    }
  }
  return PNG.sync.write(png);
}
