import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { traced } from '../lambda/powertools.ts';

/** The EventBridge client (hand-off announcements), created once per process. */
export const eventBridge = /* @__PURE__ */ traced(new EventBridgeClient({}));
