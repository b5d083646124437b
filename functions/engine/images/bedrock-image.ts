import { InvokeModelCommand, type BedrockRuntimeClient } from '@aws-sdk/client-bedrock-runtime';
import { ExecutionFailure } from '../execution-failure.ts';
import { invocationModelId } from '../inference-profiles.ts';
import type { ImageModel } from './image-model.ts';

interface NovaCanvasResponse {
  images?: string[];
  error?: string | null;
}

/** Amazon Nova Canvas through InvokeModel (TEXT_IMAGE, one image): its answer is the base64 PNG. */
export function bedrockImageModel(client: BedrockRuntimeClient): ImageModel {
  return {
    async generate({ prompt, width, height, seed, quality, modelId }) {
      const response = await client.send(
        new InvokeModelCommand({
          modelId: invocationModelId(modelId),
          contentType: 'application/json',
          accept: 'application/json',
          body: JSON.stringify({
            taskType: 'TEXT_IMAGE',
            textToImageParams: { text: prompt },
            imageGenerationConfig: {
              width,
              height,
              numberOfImages: 1,
              ...(seed === undefined ? {} : { seed }),
              ...(quality === undefined ? {} : { quality }),
            },
          }),
        }),
      );
      const answer = JSON.parse(new TextDecoder().decode(response.body)) as NovaCanvasResponse;
      const image = answer.images?.[0];
      if (answer.error || !image) throw new ExecutionFailure(`The image model gave no image${answer.error ? `: ${answer.error}` : ''}`);
      return Buffer.from(image, 'base64');
    },
  };
}
