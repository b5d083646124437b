/**
 * The Bedrock models the product supports, with their lifecycle on Amazon Bedrock. Every other list derives from
 * this one: the deployment's default allow-list (active models only), what `publish` accepts, what the twin's
 * Bedrock stand-in answers, and the models the price sheet must price. Lifecycle dates are Bedrock's own
 * (docs.aws.amazon.com/bedrock/latest/userguide/model-lifecycle.html), which may differ from the provider's.
 */
export interface CatalogModel {
  /** The foundation model id. */
  id: string;
  kind: 'text' | 'image';
  /** Who sells it: third-party models need a one-time Marketplace subscription (and Anthropic's a use-case form). */
  provider: 'amazon' | 'anthropic';
  /** A third-party model's AWS Marketplace product: the first call subscribes the account to it. */
  marketplaceProductId?: string;
  /** Cross-region inference profiles the product allows, named by geography (`us.<id>`). */
  profiles: readonly string[];
  /** False when Bedrock serves the model on demand only through an inference profile. */
  onDemand: boolean;
  /** Set once the model is Legacy: the day (UTC) from which Bedrock refuses every call. */
  endOfLife?: string;
  /**
   * Set with `endOfLife`: what to move to. `model` is a catalog id of the same kind that Bedrock serves; `none` says
   * the catalog holds no other model of that kind, and gives what the author does instead.
   */
  replacement?: { model: string } | { none: string };
}

export const BEDROCK_CATALOG: readonly CatalogModel[] = [
  { id: 'amazon.nova-micro-v1:0', kind: 'text', provider: 'amazon', profiles: ['us', 'eu', 'apac'], onDemand: true },
  { id: 'amazon.nova-lite-v1:0', kind: 'text', provider: 'amazon', profiles: ['us', 'eu', 'apac'], onDemand: true },
  { id: 'amazon.nova-pro-v1:0', kind: 'text', provider: 'amazon', profiles: ['us', 'eu', 'apac'], onDemand: true },
  {
    id: 'anthropic.claude-haiku-4-5-20251001-v1:0',
    kind: 'text',
    provider: 'anthropic',
    marketplaceProductId: 'prod-xdkflymybwmvi',
    profiles: ['us', 'eu', 'global'],
    onDemand: false,
  },
  {
    id: 'anthropic.claude-3-5-haiku-20241022-v1:0',
    kind: 'text',
    provider: 'anthropic',
    profiles: ['us'],
    onDemand: true,
    endOfLife: '2026-06-19',
    replacement: { model: 'us.anthropic.claude-haiku-4-5-20251001-v1:0' },
  },
  {
    id: 'amazon.nova-canvas-v1:0',
    kind: 'image',
    provider: 'amazon',
    profiles: [],
    onDemand: true,
    endOfLife: '2026-09-30',
    // No replacement: the catalog holds no other image model, so no Bedrock image node can run.
    replacement: { none: 'use provider "scripted" offline or remove the image node' },
  },
];

export type ModelState = 'active' | 'legacy' | 'ended';

/** What a model id (foundation model or inference profile) names, and its state at `now`. */
export interface ModelLookup {
  model: CatalogModel;
  /** The id as given: the foundation model's or a profile's. */
  id: string;
  viaProfile: boolean;
  state: ModelState;
}

/** Cross-region inference profiles are named by a geography before the model id. */
export const PROFILE_PREFIX = /^(us|eu|apac|us-gov|ca|jp|au|global)\./;

export function stateAt(model: CatalogModel, now: number): ModelState {
  if (model.endOfLife === undefined) return 'active';
  return now >= Date.parse(`${model.endOfLife}T00:00:00Z`) ? 'ended' : 'legacy';
}

/** The catalog entry an id names (a profile the catalog lists, or a foundation model), or undefined. */
export function lookUpModel(id: string, now: number): ModelLookup | undefined {
  const profile = PROFILE_PREFIX.exec(id);
  const baseId = profile ? id.slice(profile[0].length) : id;
  const model = BEDROCK_CATALOG.find((entry) => entry.id === baseId);
  if (!model || (profile && !model.profiles.includes(profile[1]!))) return undefined;
  return { model, id, viaProfile: profile !== null, state: stateAt(model, now) };
}

/** Every id the catalog allows a workflow to name: each on-demand model and each listed profile (of `geographies`). */
export function catalogIds(models: readonly CatalogModel[] = BEDROCK_CATALOG, geographies?: readonly string[]): string[] {
  return models.flatMap((model) => [
    ...(model.onDemand ? [model.id] : []),
    ...model.profiles.filter((geography) => !geographies || geographies.includes(geography)).map((geography) => `${geography}.${model.id}`),
  ]);
}

/**
 * Why a node may not name this model, or what to warn about: unknown ids, a model of the other kind, a model
 * Bedrock serves only through a profile, and ended models are refused; a Legacy model is a warning with its date.
 */
export function modelProblem(id: string, kind: CatalogModel['kind'], now: number): { refuse?: string; warn?: string } {
  const found = lookUpModel(id, now);
  if (!found) {
    const served = servedIds(kind, now);
    return { refuse: `"${id}" is not a supported Bedrock model; ${served.length > 0 ? `supported: ${served.join(', ')}` : noneServed(kind)}` };
  }
  const { model, state } = found;
  if (model.kind !== kind) return { refuse: `"${id}" is ${model.kind === 'image' ? 'an image' : 'a text'} model` };
  if (!found.viaProfile && !model.onDemand) {
    return { refuse: `"${id}" is served on demand only through an inference profile: name ${model.profiles.map((geography) => `${geography}.${model.id}`).join(' or ')}` };
  }
  if (state === 'ended') return { refuse: endedMessage(id, model) };
  if (state === 'legacy') return { warn: `"${id}" is Legacy on Bedrock and stops answering on ${model.endOfLife}${insteadOf(model, state)}` };
  return {};
}

/** Why an id of a model past its end of life may not be called, with what to do instead. */
export function endedMessage(id: string, model: CatalogModel): string {
  return `"${id}" reached end of life on Bedrock on ${model.endOfLife}${insteadOf(model, 'ended')}`;
}

/**
 * Why a Bedrock node of `kind` that names no model is refused: it must name one, and when no model of that kind is
 * served at `now`, the refusal says which ended, on what day, and what to do instead.
 */
export function missingModelProblem(kind: CatalogModel['kind'], now: number): string {
  if (servedIds(kind, now).length > 0) return 'required for provider bedrock';
  const ended = BEDROCK_CATALOG.filter((model) => model.kind === kind).map((model) => `"${model.id}" reached end of life on Bedrock on ${model.endOfLife}`);
  return `required for provider bedrock, and ${[...ended, noneServed(kind)].join('; ')}`;
}

/** The ids a node of `kind` may name at `now`: the catalog's, past their end of life left out. */
function servedIds(kind: CatalogModel['kind'], now: number): string[] {
  return catalogIds().filter((known) => {
    const found = lookUpModel(known, now);
    return found?.model.kind === kind && found.state !== 'ended';
  });
}

/** That the catalog serves no model of `kind`, with what its ended models of that kind say to do instead. */
function noneServed(kind: CatalogModel['kind']): string {
  const instead = new Set(BEDROCK_CATALOG.flatMap((model) => (model.kind === kind && model.replacement && 'none' in model.replacement ? [model.replacement.none] : [])));
  return `no Bedrock ${kind} model is supported now${instead.size > 0 ? `: ${[...instead].join('; ')}` : ''}`;
}

/**
 * What to move to from a Legacy or ended model: its replacement, or, without one (the catalog holds no other model of
 * its kind), that there is none and what to do instead.
 */
function insteadOf(model: CatalogModel, state: ModelState): string {
  const replacement = model.replacement;
  if (replacement === undefined) return '';
  if ('model' in replacement) return `; use ${replacement.model}`;
  return state === 'ended' ? `; ${noneServed(model.kind)}` : `; the product supports no other Bedrock ${model.kind} model: ${replacement.none}`;
}
