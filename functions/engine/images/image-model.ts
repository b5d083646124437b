export interface ImageRequest {
  prompt: string;
  width: number;
  height: number;
  seed?: number;
  modelId: string;
}

/** Draws one PNG. */
export interface ImageModel {
  generate(request: ImageRequest): Promise<Buffer>;
}
