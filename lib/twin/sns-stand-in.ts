import { randomUUID } from 'node:crypto';
import type { ResourcePolicyStatement } from '#lib/cdk/alarm-topic-policy.ts';
import { evaluateResourcePolicy, type Caller } from './iam/resource-policy.ts';

/** What a publisher sends, and the condition keys its request carries (`aws:SourceArn`, `aws:SourceAccount`, `aws:SecureTransport`). */
interface PublishRequest {
  caller: Caller;
  context: Readonly<Record<string, string>>;
  subject: string;
  message: string;
}

interface PublishedMessage {
  messageId: string;
  subject: string;
  message: string;
  /** The service or identity that published it. */
  publisher: string;
  publishedAtMs: number;
}

/** SNS's refusal of a publish its topic policy does not allow (AuthorizationError, 403). */
class SnsAuthorizationError extends Error {
  override name = 'AuthorizationError';
}

export interface LocalTopic {
  readonly arn: string;
  /** Publishes when the topic policy allows it; throws SnsAuthorizationError otherwise. */
  publish(request: PublishRequest): { messageId: string };
  /** The newest messages published (at most MAX_KEPT_MESSAGES), oldest first: what the subscribers were sent. */
  readonly published: readonly PublishedMessage[];
}

/** The twin keeps the newest messages only, so its memory does not grow with what it has published. */
const MAX_KEPT_MESSAGES = 100;

/**
 * A topic of the twin's SNS, in the twin's process (no caller of the product reaches SNS over the wire): a publish is
 * held to the topic's policy as SNS holds it, by the IAM evaluator of resource policies. The twin's alarm topic gets
 * the statements CDK deploys (lib/cdk/alarm-topic-policy.ts), and its CloudWatch stand-in publishes the alarms'
 * actions through it. Subscribers are not modelled: a published message is kept for tests to read.
 */
export function createLocalTopic(options: { arn: string; policy: readonly ResourcePolicyStatement[]; now?: () => number }): LocalTopic {
  const now = options.now ?? Date.now;
  const published: PublishedMessage[] = [];
  return {
    arn: options.arn,
    published,
    publish(request) {
      const { decision } = evaluateResourcePolicy(options.policy, {
        caller: request.caller,
        action: 'sns:Publish',
        resource: options.arn,
        context: request.context,
      });
      if (decision !== 'allow') {
        // How SNS names a service's caller: the resource the service acts for (the alarm), else the identity.
        const who =
          'service' in request.caller
            ? `Resource: ${request.context['aws:SourceArn'] ?? request.caller.service}`
            : `User: ${request.caller.arn}`;
        throw new SnsAuthorizationError(`${who} is not authorized to perform: SNS:Publish on resource: ${options.arn}`);
      }
      const messageId = randomUUID();
      published.push({
        messageId,
        subject: request.subject,
        message: request.message,
        publisher: 'service' in request.caller ? request.caller.service : request.caller.arn,
        publishedAtMs: now(),
      });
      if (published.length > MAX_KEPT_MESSAGES) published.shift();
      return { messageId };
    },
  };
}
