import { METRICS, MetricKey } from '../telemetry-catalogue';

/**
 * Herald's own metrics, as the app code records them: by the catalogue's key, with exactly the
 * labels the catalogue allows (shared/telemetry-catalogue.ts), so a label can be neither an id
 * nor forgotten. Only shared/adapters/ implements this, with OpenTelemetry or as nothing.
 */

type Catalogue = typeof METRICS;
type KeysOfKind<K extends Catalogue[MetricKey]['kind']> = { [M in MetricKey]: Catalogue[M]['kind'] extends K ? M : never }[MetricKey];

export type CounterKey = KeysOfKind<'counter'>;
export type HistogramKey = KeysOfKind<'histogram'>;

/** The labels metric `K` carries: each a value of its closed set (or a bounded string). */
export type LabelsOf<K extends MetricKey> = {
  -readonly [L in keyof Catalogue[K]['labels']]: Catalogue[K]['labels'][L] extends readonly (infer V)[] ? V : string;
};

/** No argument for a metric without labels, the labels object for one with. */
export type LabelArgs<K extends MetricKey> = [keyof Catalogue[K]['labels']] extends [never] ? [] : [labels: LabelsOf<K>];

export interface Metrics {
  /** Adds `value` (≥ 0) to counter `key`. */
  add<K extends CounterKey>(key: K, value: number, ...labels: LabelArgs<K>): void;
  /** Records one observation of histogram `key`. */
  record<K extends HistogramKey>(key: K, value: number, ...labels: LabelArgs<K>): void;
}

/**
 * The process's telemetry: its metrics now; its tracer will join them here, made in the same
 * place (shared/runtime/telemetry.ts), so every exporter setting applies to both.
 */
export interface Telemetry {
  metrics: Metrics;
  /** Exports what is recorded and not yet exported (before an instance stops, or in tests). */
  flush(): Promise<void>;
  /** Flushes, then stops exporting. */
  shutdown(): Promise<void>;
}
