import { createEventsRepository } from '#inbound/events-repository.ts';
import { connectorTypeSchema } from '#inbound/link-model.ts';
import { createLinksRepository } from '#inbound/links-repository.ts';
import { createLinksService } from '#inbound/links-service.ts';
import { isIPv6 } from 'node:net';
import { publicUrlProblem } from '#shared/network/public-url.ts';
import type { AdminTarget } from './target.ts';
import { requireId, UsageError } from './usage-error.ts';

/**
 * `--allow-hosts`: what ingest compares each call's recording link with (hostMatches, after publicUrlProblem): the
 * link's host as the URL parser spells it, equal to an entry or, for `*.example.com`, ending in `.example.com`.
 * An entry no such host can match would make the link refuse recordings it was meant to accept, or all of them
 * (a list of such entries), so each is refused here with the reason.
 */
function allowHostsOption(text: string | undefined): string[] {
  if (text === undefined) return [];
  const entries = text.split(',').map((entry) => entry.trim());
  // An empty list would mean no allow-list at all: every public host, the opposite of what was asked.
  if (entries.some((entry) => entry === ''))
    throw new UsageError('--allow-hosts needs one or more host names, separated by commas, none empty');
  for (const entry of entries) {
    const problem = allowHostProblem(entry.toLowerCase());
    if (problem) throw new UsageError(`--allow-hosts entry ${JSON.stringify(entry)} ${problem}`);
  }
  return entries;
}

function allowHostProblem(entry: string): string | undefined {
  if (entry.includes('/'))
    return 'has a scheme or path: give the host name alone (records.example.com); a recording link is matched on its host only';
  // Before the port: `2606:4700::1111` ends in what looks like one.
  if (isIPv6(entry)) return `is an IPv6 address without brackets: write it as a link does, [${entry}]`;
  const port = entry.startsWith('[') ? /\]:\d*$/.test(entry) : /:\d*$/.test(entry);
  if (port) return 'has a port: give the host name alone; a recording link to any port of the host matches';
  if (entry === '*')
    return 'matches no host: "*" is not a wildcard for every host; to accept recordings from any public host, leave --allow-hosts out';
  const wildcard = entry.startsWith('*.');
  const name = wildcard ? entry.slice(2) : entry;
  if (name.includes('*')) return 'has a "*" that is not a leading "*.": the only wildcard is *.example.com (any subdomain of example.com)';
  // A host this entry matches, if any can; the link check then says whether ingest would accept a link to it.
  const host = wildcard ? `${subdomainLabels(name)}.${name}` : name;
  const url = `https://${host}/`;
  const problem = publicUrlProblem(url, [entry]);
  if (!problem) return undefined;
  if (URL.canParse(url) && !publicUrlProblem(url)) {
    const spelled = new URL(url).hostname;
    const written = wildcard ? `*.${spelled.slice(spelled.indexOf('.') + 1)}` : spelled;
    return `never equals a link's host, which is compared as the URL parser spells it: write ${written}`;
  }
  return `can match no recording link: ${problem}`;
}

/**
 * What goes before `.name` in a host `*.name` matches: a host whose last label is a number must be a whole public
 * IPv4 address (any under 1.0.0.0/8 is), every other host is a name, for which one more label does.
 */
function subdomainLabels(name: string): string {
  const labels = name.split('.');
  if (!/^\d+$/.test(labels.at(-1) ?? '')) return 'a';
  return Array.from({ length: Math.max(1, 4 - labels.length) }, () => '1').join('.');
}

export async function runLinksCommand(
  target: AdminTarget,
  args: string[],
  flags: { type?: string; 'allow-hosts'?: string },
): Promise<object> {
  const service = createLinksService({
    links: createLinksRepository(target.dynamo, target.tables.links),
    events: createEventsRepository(target.dynamo, target.tables.inboundEvents),
    publicBaseUrl: target.webhookBaseUrl,
    now: Date.now,
  });
  const [verb, linkId] = args;
  const requireLinkId = () => requireId(linkId, `links ${verb}`, 'link_id');
  switch (verb) {
    case 'issue': {
      const type = connectorTypeSchema.safeParse(flags.type);
      if (!type.success) throw new UsageError('links issue needs --type calls or --type dialogs');
      return service.issue(type.data, allowHostsOption(flags['allow-hosts']));
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
