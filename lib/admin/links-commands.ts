import { createEventsRepository } from '#inbound/events-repository.ts';
import { connectorTypeSchema } from '#inbound/link-model.ts';
import { createLinksRepository } from '#inbound/links-repository.ts';
import { createLinksService } from '#inbound/links-service.ts';
import * as z from '#shared/zod.ts';
import type { AdminTarget } from './target.ts';
import { requireId, UsageError } from './usage-error.ts';

export const LINKS_USAGE = `links issue --type calls|dialogs [--allow-hosts h1,h2]
links bind <link_id>
links reissue <link_id>
links revoke <link_id>
links list
links schema <link_id>
links filters <link_id>`;

const hostList = z.pipe(
  z.string(),
  z.transform((text: string) => text.split(',').map((host) => host.trim()).filter(Boolean)),
);

export async function runLinksCommand(
  target: AdminTarget,
  args: string[],
  flags: { type?: string; 'allow-hosts'?: string },
): Promise<object> {
  const service = createLinksService({
    links: createLinksRepository(target.dynamo, target.tables.links),
    events: createEventsRepository(target.dynamo, target.tables.inboundEvents),
    publicBaseUrl: target.publicBaseUrl,
    now: Date.now,
  });
  const [verb, linkId] = args;
  const requireLinkId = () => requireId(linkId, `links ${verb}`, 'link_id');
  switch (verb) {
    case 'issue': {
      const type = connectorTypeSchema.safeParse(flags.type);
      if (!type.success) throw new UsageError('links issue needs --type calls or --type dialogs');
      return service.issue(type.data, hostList.parse(flags['allow-hosts'] ?? ''));
    }
    case 'bind':
      return service.bind(requireLinkId());
    case 'reissue':
      return service.reissue(requireLinkId());
    case 'revoke':
      return service.revoke(requireLinkId());
    case 'list':
      return service.list();
    case 'schema':
      return service.schema(requireLinkId());
    case 'filters':
      return service.filters(requireLinkId());
    default:
      throw new UsageError(`unknown links command ${verb ?? '(none)'}`);
  }
}
