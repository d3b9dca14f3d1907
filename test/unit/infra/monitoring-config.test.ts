import * as pulumi from '@pulumi/pulumi';
import { InfraConfig, readInfraConfig } from '../../../infra/config';
import { alertPlans } from '../../../infra/monitoring-plan';
import { REGION, stackConfig } from './mocks';

/** herald:monitoring, herald:alertEmails, herald:alertChannels and herald:alerts as the program reads them. */

function read(overrides: Record<string, string | undefined>): InfraConfig {
  pulumi.runtime.setAllConfig(stackConfig(overrides), ['herald:adminToken', 'herald:ingestToken']);
  return readInfraConfig();
}

function failure(overrides: Record<string, string | undefined>): string {
  try {
    read(overrides);
  } catch (e) {
    return (e as Error).message;
  }
  throw new Error('the config was accepted');
}

test('a stack that sets none: monitoring on, no channel, the documented thresholds', () => {
  const config = read({});
  expect(config.monitoring).toBe(true);
  expect(config.alertEmails).toEqual([]);
  expect(config.alertChannels).toEqual([]);
  expect(config.alerts).toEqual({ sloRatio: 0.99, sloWindowSeconds: 3600, laneAgeSeconds: 300, deadLetterThreshold: 0, deadLetterWindowSeconds: 300, functionErrorRatio: 0.05 });
  // The defaults reach the policies: 99 % over an hour, a lane five minutes behind, any dead letter.
  const byKey = Object.fromEntries(alertPlans({ names: { prefix: config.topicPrefix }, region: config.region, thresholds: config.alerts }).map((p) => [p.key, p.condition]));
  expect([byKey.successRatio!.thresholdValue, byKey.successRatio!.aggregations[0]!.alignmentPeriod]).toEqual([0.99, '3600s']);
  expect(byKey.laneAge!.thresholdValue).toBe(300);
  expect([byKey.deadLetters!.thresholdValue, byKey.deadLetters!.aggregations[0]!.alignmentPeriod]).toEqual([0, '300s']);
});

test('one threshold set keeps the defaults of the others; the switch turns monitoring off', () => {
  const config = read({ 'herald:alerts': JSON.stringify({ laneAgeSeconds: 900 }), 'herald:monitoring': 'false', 'herald:region': REGION });
  expect(config.alerts).toMatchObject({ laneAgeSeconds: 900, sloRatio: 0.99, sloWindowSeconds: 3600 });
  expect(config.monitoring).toBe(false);
});

test('a threshold Pulumi stored as a string of digits is read as the number', () => {
  expect(read({ 'herald:alerts': JSON.stringify({ sloRatio: '0.995', laneAgeSeconds: '600' }) }).alerts).toMatchObject({ sloRatio: 0.995, laneAgeSeconds: 600 });
});

test.each([
  ['a switch that is not one', { 'herald:monitoring': 'off' }, 'herald:monitoring: monitoring must be true or false'],
  ['an email list that is one string', { 'herald:alertEmails': JSON.stringify('oncall@example.com') }, 'herald:alertEmails: alertEmails must be a list of email addresses'],
  ['two addresses in one entry', { 'herald:alertEmails': JSON.stringify(['a@example.com,b@example.com']) }, 'herald:alertEmails[0]: each must be one email address'],
  ['an address listed twice', { 'herald:alertEmails': JSON.stringify(['a@example.com', 'a@example.com']) }, 'herald:alertEmails: alertEmails lists an address twice'],
  ['a channel given by its id alone', { 'herald:alertChannels': JSON.stringify(['4242']) }, 'herald:alertChannels[0]: each must be an existing notification channel, projects/PROJECT/notificationChannels/ID'],
  ['an SLO of 99 (a percentage)', { 'herald:alerts': JSON.stringify({ sloRatio: 99 }) }, 'herald:alerts.sloRatio: sloRatio must be between 0 and 1 (exclusive), like 0.99'],
  ['an SLO window of 90 s', { 'herald:alerts': JSON.stringify({ sloWindowSeconds: 90 }) }, 'herald:alerts.sloWindowSeconds: sloWindowSeconds must be 300–86400 seconds'],
  ['an SLO window not in whole minutes', { 'herald:alerts': JSON.stringify({ sloWindowSeconds: 3630 }) }, 'herald:alerts.sloWindowSeconds: sloWindowSeconds must be a whole number of minutes'],
  ['a lane age past the retention', { 'herald:alerts': JSON.stringify({ laneAgeSeconds: 700_000 }) }, 'herald:alerts.laneAgeSeconds: laneAgeSeconds must be 60–604800 seconds'],
  ['a negative dead-letter threshold', { 'herald:alerts': JSON.stringify({ deadLetterThreshold: -1 }) }, 'herald:alerts.deadLetterThreshold: deadLetterThreshold must be 0 or more'],
  ['a threshold as a string', { 'herald:alerts': JSON.stringify({ functionErrorRatio: '5%' }) }, 'herald:alerts.functionErrorRatio: functionErrorRatio must be a number between 0 and 1'],
  ['an unknown threshold', { 'herald:alerts': JSON.stringify({ laneAge: 300 }) }, 'herald:alerts: unknown field laneAge'],
])('%s fails with the field named', (_what, overrides, message) => {
  const error = failure(overrides);
  expect(error).toMatch(/^invalid Pulumi config:\n/);
  expect(error).toContain(message);
});
