import { MetricKey } from '../shared/telemetry-catalogue';
import { TopologyNames } from '../shared/topology';
import type { AlertThresholds } from './monitoring-config';
import { Aggregation, countPer, functionRequestsFilter, heraldMetricFilter, laneAgeFilter } from './monitoring-plan';

/**
 * Herald's Cloud Monitoring dashboard as the JSON `gcp.monitoring.Dashboard` takes: one chart
 * per question an operator asks first, on the same filters the alert policies watch
 * (infra/monitoring-plan.ts), with the alert's threshold drawn where there is one.
 */

interface DataSet {
  timeSeriesQuery: { timeSeriesFilter: { filter: string; aggregation: Aggregation } };
  plotType: 'LINE' | 'STACKED_BAR';
  legendTemplate?: string;
}

interface Chart {
  title: string;
  dataSets: DataSet[];
  yLabel: string;
  threshold?: number;
}

const MINUTE = 60;
const rate = (groupByFields?: string[]): Aggregation => ({
  alignmentPeriod: `${MINUTE}s`,
  perSeriesAligner: 'ALIGN_RATE',
  crossSeriesReducer: 'REDUCE_SUM',
  ...(groupByFields ? { groupByFields } : {}),
});
// A histogram's percentile across every instance: the deltas of each minute merged, then the percentile read.
const percentile = (p: 50 | 99): Aggregation => ({ alignmentPeriod: `${MINUTE}s`, perSeriesAligner: 'ALIGN_DELTA', crossSeriesReducer: `REDUCE_PERCENTILE_${p}` });

const series = (filter: string, aggregation: Aggregation, plotType: DataSet['plotType'] = 'LINE', legendTemplate?: string): DataSet => ({
  timeSeriesQuery: { timeSeriesFilter: { filter, aggregation } },
  plotType,
  ...(legendTemplate !== undefined ? { legendTemplate } : {}),
});
const herald = (key: MetricKey, aggregation: Aggregation, plotType?: DataSet['plotType'], legend?: string) => series(heraldMetricFilter(key), aggregation, plotType, legend);
const perMinute = (key: MetricKey): DataSet => herald(key, countPer(MINUTE), 'STACKED_BAR');

export interface DashboardArgs {
  names: TopologyNames;
  region: string;
  thresholds: AlertThresholds;
}

export function dashboardCharts({ names, region, thresholds }: DashboardArgs): Chart[] {
  return [
    { title: 'Events accepted /s', yLabel: 'events/s', dataSets: [herald('eventsAccepted', rate())] },
    { title: 'Events refused /s by reason', yLabel: 'events/s', dataSets: [herald('eventsRefused', rate(['metric.label.reason']), 'STACKED_BAR')] },
    { title: 'Delivery attempts /s by outcome', yLabel: 'attempts/s', dataSets: [herald('attempts', rate(['metric.label.outcome']), 'STACKED_BAR')] },
    { title: 'Attempt duration p50 and p99', yLabel: 'ms', dataSets: [herald('attemptDuration', percentile(50), 'LINE', 'p50'), herald('attemptDuration', percentile(99), 'LINE', 'p99')] },
    { title: 'End-to-end latency p99 (accepted to delivered)', yLabel: 'ms', dataSets: [herald('endToEnd', percentile(99), 'LINE', 'p99')] },
    { title: 'Dead letters per minute', yLabel: 'deliveries', dataSets: [perMinute('deadLettered')], ...(thresholds.deadLetterThreshold > 0 ? {} : { threshold: 0 }) },
    { title: 'Reconciler recoveries per minute (a loss signal: 0 when all is well)', yLabel: 'deliveries', dataSets: [perMinute('recovered')], threshold: 0 },
    { title: 'Destinations suspended per minute', yLabel: 'destinations', dataSets: [perMinute('suspensions')] },
    {
      title: 'Lane oldest unacked message age',
      yLabel: 's',
      dataSets: [series(laneAgeFilter(names), { alignmentPeriod: `${MINUTE}s`, perSeriesAligner: 'ALIGN_MAX', crossSeriesReducer: 'REDUCE_MAX', groupByFields: ['resource.label.subscription_id'] })],
      threshold: thresholds.laneAgeSeconds,
    },
    { title: 'Function 5xx answers /s by function', yLabel: 'requests/s', dataSets: [series(functionRequestsFilter(region, true), rate(['resource.label.service_name']), 'STACKED_BAR')] },
  ];
}

const COLUMNS = 48;
const TILE = { width: 24, height: 16 };

/** The dashboard, two charts a row. */
export function dashboardJson(args: DashboardArgs): string {
  const tiles = dashboardCharts(args).map((chart, i) => ({
    xPos: (i % 2) * TILE.width,
    yPos: Math.floor(i / 2) * TILE.height,
    ...TILE,
    widget: {
      title: chart.title,
      xyChart: {
        dataSets: chart.dataSets,
        yAxis: { label: chart.yLabel, scale: 'LINEAR' },
        ...(chart.threshold !== undefined ? { thresholds: [{ value: chart.threshold, color: 'RED', direction: 'ABOVE', label: 'alert' }] } : {}),
      },
    },
  }));
  return JSON.stringify({ displayName: `Herald (${args.names.prefix})`, mosaicLayout: { columns: COLUMNS, tiles } });
}
