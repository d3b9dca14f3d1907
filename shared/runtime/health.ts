import { noHealth } from '../adapters/otel/off';
import { HeraldConfig } from '../config-schema';
import { LaneAges } from '../domain/health/lane-ages';
import { HealthReader } from '../ports/health';
import { TelemetrySetup } from './telemetry';

/**
 * Where the console's Overview panel reads Herald's health (GET /admin/overview): the process's
 * own metrics in local mode (every function in one process), Cloud Monitoring when deployed
 * with it, else nowhere, saying why. Each adapter is loaded only when chosen.
 */

type HealthSettings = Pick<HeraldConfig, 'telemetry' | 'cloudMonitoring' | 'projectId' | 'topicPrefix'>;

const OFF = 'Telemetry is off (HERALD_TELEMETRY=off): Herald records no metrics. Set HERALD_TELEMETRY=on (the default) and restart to see these numbers.';

/* eslint-disable @typescript-eslint/no-require-imports */

/** Local mode: what its GET /metrics shows, from `setup` (made at the same time: its first sample is their zeros). */
export function localHealth(config: HealthSettings, setup: TelemetrySetup, laneAges: LaneAges, startedAt: Date): HealthReader {
  if (config.telemetry === 'off') return noHealth(OFF);
  if (!setup.collect) return noHealth('This process collects no metrics it can read back.');
  const { ProcessHealth } = require('../adapters/otel/process-health') as typeof import('../adapters/otel/process-health');
  return new ProcessHealth(setup.collect, laneAges, startedAt);
}

/** Deployed: Cloud Monitoring, where the functions export (on Cloud Run, or with HERALD_CLOUD_MONITORING=true). */
export function deployedHealth(config: HealthSettings, env: NodeJS.ProcessEnv = process.env): HealthReader {
  if (config.telemetry === 'off') return noHealth(OFF);
  if (!(config.cloudMonitoring ?? env.K_SERVICE !== undefined)) {
    return noHealth('Herald exports no metrics to Cloud Monitoring here (only over OTLP, if HERALD_OTLP_ENDPOINT is set): read them where they go, or set HERALD_CLOUD_MONITORING=true.');
  }
  const { cloudMonitoringHealth } = require('../adapters/cloud-monitoring/health') as typeof import('../adapters/cloud-monitoring/health');
  return cloudMonitoringHealth(config.projectId, config.topicPrefix);
}
