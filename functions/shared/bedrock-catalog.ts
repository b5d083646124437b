/**
 * The Bedrock models the product supports, with their lifecycle on Amazon Bedrock and where each can be called from.
 * Every other list derives from this one: a deployment's default allow-list for its region (active models only),
 * what `publish` accepts, what the twin's Bedrock stand-in answers, and the models the price sheet must price.
 * Lifecycle dates are Bedrock's own, which may differ from the provider's: since 2026 they live on each model's card
 * (docs.aws.amazon.com/bedrock/latest/userguide/model-card-*.html) and, once a model is Legacy or past its end, on
 * model-lifecycle-legacy.html. Each entry says where its facts were read and when (`checked`).
 */
export interface CatalogModel {
  /** The foundation model id. */
  id: string;
  kind: 'text' | 'image';
  /** Who sells it: third-party models need a one-time Marketplace subscription (and Anthropic's a use-case form). */
  provider: 'amazon' | 'anthropic';
  /** A third-party model's AWS Marketplace product: the first call subscribes the account to it. */
  marketplaceProductId?: string;
  /**
   * The system-defined cross-region inference profiles the product allows (`<geography>.<id>`), each with the
   * source regions it can be called from (the model card's "Geo inference" and "Global inference" rows): a
   * deployment uses the profile of its own region's geography.
   */
  profiles: Readonly<Partial<Record<Geography, readonly string[]>>>;
  /** False when Bedrock serves the model on demand only through an inference profile. */
  onDemand: boolean;
  /** Regions where Bedrock serves the model on demand by its own id (the card's "In-Region" row). */
  inRegion: readonly string[];
  /** Set once the model is Legacy: the day (UTC) from which Bedrock refuses every call. */
  endOfLife?: string;
  /**
   * Set with `endOfLife`: what to move to. `model` is a catalog id of the same kind that Bedrock serves; `none` says
   * the catalog holds no other model of that kind, and gives what the author does instead.
   */
  replacement?: { model: string } | { none: string };
  /**
   * Where the lifecycle state and the regions were read, and the day they were checked (from stored copies of those
   * pages: this repository is built offline, so `admin verify` after a deploy is what confirms them live).
   */
  checked: { source: string; on: string; note?: string };
}

/** The geographies Bedrock names cross-region profiles by, geographic ones first, then the global one. */
const GEOGRAPHIES = ['us', 'eu', 'apac', 'jp', 'au', 'ca', 'us-gov', 'global'] as const;
type Geography = (typeof GEOGRAPHIES)[number];

const US = ['us-east-1', 'us-east-2', 'us-west-1', 'us-west-2'];
/** Where the Nova (v1) cards list the `eu.` profile's source regions. */
const NOVA_EU = ['eu-central-1', 'eu-north-1', 'eu-south-1', 'eu-south-2', 'eu-west-1', 'eu-west-3', 'il-central-1'];
/**
 * The regions the Nova (v1) cards mark for geographic inference in Asia Pacific. The cards name no id for it; the
 * profiles there are `apac.<id>` (Bedrock's ListInferenceProfiles in ap-northeast-1, as quoted in public code).
 * `admin verify` calls each allowed model after a deploy, which proves or refutes this.
 */
const NOVA_APAC = ['ap-northeast-1', 'ap-northeast-2', 'ap-south-1', 'ap-southeast-1', 'ap-southeast-2'];
const CHECKED_ON = '2026-11-27';
const NOVA_V1_NOTE =
  'Active; the card\'s "EOL no sooner than 12/4/2025" has passed without a Legacy notice: Bedrock announces Legacy at least 6 months ' +
  'before an end of life';

export const BEDROCK_CATALOG: readonly CatalogModel[] = [
  {
    id: 'amazon.nova-micro-v1:0',
    kind: 'text',
    provider: 'amazon',
    profiles: { us: ['us-east-1', 'us-east-2', 'us-west-2'], eu: NOVA_EU, apac: NOVA_APAC },
    onDemand: true,
    inRegion: ['us-east-1', 'eu-west-2', 'ap-southeast-2'],
    checked: {
      source: 'docs.aws.amazon.com/bedrock/latest/userguide/model-card-amazon-nova-micro.html',
      on: CHECKED_ON,
      note: NOVA_V1_NOTE,
    },
  },
  {
    id: 'amazon.nova-lite-v1:0',
    kind: 'text',
    provider: 'amazon',
    profiles: { us: US, eu: NOVA_EU, apac: NOVA_APAC },
    onDemand: true,
    inRegion: ['us-east-1', 'eu-north-1', 'eu-west-2', 'ap-northeast-1', 'ap-southeast-2', 'ap-southeast-3', 'me-central-1'],
    checked: {
      source: 'docs.aws.amazon.com/bedrock/latest/userguide/model-card-amazon-nova-lite.html',
      on: CHECKED_ON,
      note: NOVA_V1_NOTE,
    },
  },
  {
    id: 'amazon.nova-pro-v1:0',
    kind: 'text',
    provider: 'amazon',
    profiles: { us: US, eu: NOVA_EU, apac: NOVA_APAC },
    onDemand: true,
    inRegion: ['us-east-1', 'eu-west-2', 'ap-southeast-2', 'ap-southeast-3', 'me-central-1'],
    checked: { source: 'docs.aws.amazon.com/bedrock/latest/userguide/model-card-amazon-nova-pro.html', on: CHECKED_ON, note: NOVA_V1_NOTE },
  },
  {
    id: 'amazon.nova-2-lite-v1:0',
    kind: 'text',
    provider: 'amazon',
    profiles: {
      us: [...US, 'ca-central-1', 'ca-west-1'],
      eu: ['eu-central-1', 'eu-north-1', 'eu-south-1', 'eu-south-2', 'eu-west-1', 'eu-west-3'],
      jp: ['ap-northeast-1'],
      global: [
        'eu-west-2',
        'il-central-1',
        'me-central-1',
        'ap-east-2',
        'ap-northeast-2',
        'ap-south-1',
        'ap-southeast-1',
        'ap-southeast-2',
        'ap-southeast-3',
      ],
    },
    onDemand: false,
    inRegion: [],
    checked: {
      source: 'docs.aws.amazon.com/bedrock/latest/userguide/model-card-amazon-nova-2-lite.html',
      on: CHECKED_ON,
      note:
        'Active, launched 2025-12-02, no end of life announced; served through cross-region profiles only (global: only the source ' +
        'regions the card names beyond its geographic ones)',
    },
  },
  {
    id: 'anthropic.claude-haiku-4-5-20251001-v1:0',
    kind: 'text',
    provider: 'anthropic',
    marketplaceProductId: 'prod-xdkflymybwmvi',
    profiles: {
      us: [...US, 'ca-central-1'],
      eu: ['eu-central-1', 'eu-central-2', 'eu-north-1', 'eu-south-1', 'eu-south-2', 'eu-west-1', 'eu-west-2', 'eu-west-3'],
      jp: ['ap-northeast-1', 'ap-northeast-3'],
      au: ['ap-southeast-2', 'ap-southeast-4', 'ap-southeast-6'],
      global: ['ap-northeast-2', 'ap-south-1', 'ap-southeast-1', 'sa-east-1', 'me-central-1', 'af-south-1'],
    },
    onDemand: false,
    inRegion: [],
    checked: {
      source: 'docs.aws.amazon.com/bedrock/latest/userguide/model-card-anthropic-claude-haiku-4-5.html',
      on: CHECKED_ON,
      note:
        'Active on Bedrock (not in the Legacy table); the card\'s "EOL no sooner than 10/1/2026" has passed without a Legacy notice. ' +
        'Global: only the source regions beyond its geographic ones that the card names',
    },
  },
  {
    id: 'anthropic.claude-3-5-haiku-20241022-v1:0',
    kind: 'text',
    provider: 'anthropic',
    marketplaceProductId: 'prod-5oba7y7jpji56',
    profiles: { us: US },
    onDemand: true,
    inRegion: ['us-west-2'],
    endOfLife: '2026-06-19',
    replacement: { model: 'us.anthropic.claude-haiku-4-5-20251001-v1:0' },
    checked: {
      source: 'docs.aws.amazon.com/bedrock/latest/userguide/model-card-anthropic-claude-3-5-haiku.html',
      on: CHECKED_ON,
      note: 'Ended: "Model EOL date: June 19, 2026"',
    },
  },
  {
    id: 'amazon.nova-canvas-v1:0',
    kind: 'image',
    provider: 'amazon',
    profiles: {},
    onDemand: true,
    inRegion: ['us-east-1', 'eu-west-1', 'ap-northeast-1'],
    endOfLife: '2026-09-30',
    // Our choice, not an AWS fact: AWS names no successor, and the catalog takes no other image model.
    replacement: { none: 'use provider "scripted" offline or remove the image node' },
    checked: {
      source: 'docs.aws.amazon.com/bedrock/latest/userguide/model-lifecycle-legacy.html',
      on: CHECKED_ON,
      note:
        'Ended: listed under "Models that have reached EOL" (Legacy 2026-03-30, EOL 2026-09-30); AWS names no replacement, so the ' +
        "catalog names none (the product's choice)",
    },
  },
];

type ModelState = 'active' | 'legacy' | 'ended';

/** What a model id (foundation model or inference profile) names, and its state at `now`. */
export interface ModelLookup {
  model: CatalogModel;
  /** The id as given: the foundation model's or a profile's. */
  id: string;
  viaProfile: boolean;
  state: ModelState;
}

/** Cross-region inference profiles are named by a geography before the model id. */
export const PROFILE_PREFIX = /^(us-gov|us|eu|apac|ca|jp|au|global)\./;

const geographiesOf = (model: CatalogModel) => GEOGRAPHIES.filter((geography) => model.profiles[geography] !== undefined);

function stateAt(model: CatalogModel, now: number): ModelState {
  if (model.endOfLife === undefined) return 'active';
  return now >= Date.parse(`${model.endOfLife}T00:00:00Z`) ? 'ended' : 'legacy';
}

/** The catalog entry an id names (a profile the catalog lists, or a foundation model), or undefined. */
export function lookUpModel(id: string, now: number): ModelLookup | undefined {
  const profile = PROFILE_PREFIX.exec(id);
  const baseId = profile ? id.slice(profile[0].length) : id;
  const model = BEDROCK_CATALOG.find((entry) => entry.id === baseId);
  if (!model || (profile && model.profiles[profile[1] as Geography] === undefined)) return undefined;
  return { model, id, viaProfile: profile !== null, state: stateAt(model, now) };
}

/** Every id the catalog allows a workflow to name: each on-demand model and each listed profile (of `geographies`). */
export function catalogIds(models: readonly CatalogModel[] = BEDROCK_CATALOG, geographies?: readonly string[]): string[] {
  return models.flatMap((model) => [
    ...(model.onDemand ? [model.id] : []),
    ...geographiesOf(model)
      .filter((geography) => !geographies || geographies.includes(geography))
      .map((geography) => `${geography}.${model.id}`),
  ]);
}

/**
 * The cross-region profile a deployment in `region` calls `model` through: the first geography whose profile
 * can be called from there (geographic profiles keep requests within one geography, so they come before `global`),
 * or undefined when the catalog knows none callable from that region.
 */
function regionalProfile(model: CatalogModel, region: string): string | undefined {
  const geography = geographiesOf(model).find((candidate) => model.profiles[candidate]!.includes(region));
  return geography === undefined ? undefined : `${geography}.${model.id}`;
}

/**
 * The ids of `models` a deployment in `region` can call: the model's own id where Bedrock serves it on demand in
 * that region, and the profile of the region's geography (`regionalProfile`).
 */
export function regionalIds(models: readonly CatalogModel[], region: string): string[] {
  return models.flatMap((model) => {
    const profile = regionalProfile(model, region);
    return [...(model.onDemand && model.inRegion.includes(region) ? [model.id] : []), ...(profile ? [profile] : [])];
  });
}

/**
 * Why `id` cannot be called from a deployment in `region`, or undefined when it can: a profile whose geography has
 * no source in that region, or a foundation model Bedrock does not serve on demand there. The answer names the id
 * that works there, when there is one.
 */
export function regionProblem(id: string, region: string): string | undefined {
  const found = lookUpModel(id, 0);
  if (!found) return undefined;
  const { model } = found;
  const callable = found.viaProfile
    ? model.profiles[PROFILE_PREFIX.exec(id)![1] as Geography]!.includes(region)
    : model.inRegion.includes(region);
  if (callable) return undefined;
  const instead = regionalIds([model], region);
  const where = found.viaProfile ? `its profile cannot be called from ${region}` : `Bedrock does not serve it on demand in ${region}`;
  const otherwise = instead.length > 0 ? `use ${instead.join(' or ')}` : `the catalog knows no way to call ${model.id} from ${region}`;
  return `${id} cannot be called from ${region}: ${where}; ${otherwise}`;
}

/**
 * Why a node may not name this model, or what to warn about: unknown ids, a model of the other kind, a model
 * Bedrock serves only through a profile, and ended models are refused; a Legacy model is a warning with its date.
 */
export function modelProblem(id: string, kind: CatalogModel['kind'], now: number): { refuse?: string; warn?: string } {
  const found = lookUpModel(id, now);
  if (!found) {
    const served = servedIds(kind, now);
    return {
      refuse: `"${id}" is not a supported Bedrock model; ${served.length > 0 ? `supported: ${served.join(', ')}` : noneServed(kind)}`,
    };
  }
  const { model, state } = found;
  if (model.kind !== kind) return { refuse: `"${id}" is ${model.kind === 'image' ? 'an image' : 'a text'} model` };
  if (!found.viaProfile && !model.onDemand) {
    return {
      refuse: `"${id}" is served on demand only through an inference profile: name ${geographiesOf(model)
        .map((geography) => `${geography}.${model.id}`)
        .join(' or ')}`,
    };
  }
  if (state === 'ended') return { refuse: endedMessage(id, model) };
  if (state === 'legacy')
    return { warn: `"${id}" is Legacy on Bedrock and stops answering on ${model.endOfLife}${insteadOf(model, state)}` };
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
  const ended = BEDROCK_CATALOG.filter((model) => model.kind === kind).map(
    (model) => `"${model.id}" reached end of life on Bedrock on ${model.endOfLife}`,
  );
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
  const instead = new Set(
    BEDROCK_CATALOG.flatMap((model) =>
      model.kind === kind && model.replacement && 'none' in model.replacement ? [model.replacement.none] : [],
    ),
  );
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
  return state === 'ended'
    ? `; ${noneServed(model.kind)}`
    : `; the product supports no other Bedrock ${model.kind} model: ${replacement.none}`;
}
