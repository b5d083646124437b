interface ImageRequest {
  prompt: string;
  width: number;
  height: number;
  seed?: number;
  /** Nova Canvas's `quality` (its default: standard); priced per image by quality and size class. */
  quality?: 'standard' | 'premium';
  modelId: string;
}

/** Draws one PNG. */
export interface ImageModel {
  generate(request: ImageRequest): Promise<Buffer>;
}
