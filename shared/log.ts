import { Logger, LogFields } from './ports/clock';
import { tracing } from './tracing';

type Severity = 'DEBUG' | 'INFO' | 'WARNING' | 'ERROR';

const LEVELS: Record<Severity, number> = { DEBUG: 0, INFO: 1, WARNING: 2, ERROR: 3 };

export interface LoggerOptions {
  /** Lowest severity written; default INFO. */
  level?: Severity;
  write?: (line: string) => void;
  /** Fields on every line (the component, say). */
  base?: LogFields;
}

// Field names that must never reach a log line, whatever a caller passes.
const SECRET_FIELDS = /secret|token|authorization|password/i;

/**
 * One JSON object per line with `severity` and `message`: the shape Cloud Logging parses
 * from a function's stdout. Ids (eventId, destinationId, deliveryId) go in as fields.
 */
export function createLogger(options: LoggerOptions = {}): Logger {
  const min = LEVELS[options.level ?? 'INFO'];
  const write = options.write ?? ((line: string) => process.stdout.write(`${line}\n`));
  const log = (severity: Severity) => (message: string, fields: LogFields = {}) => {
    if (LEVELS[severity] < min) return;
    // Under a span: Cloud Logging's trace fields, so the line shows in its trace (and the trace's logs).
    const entry: LogFields = { severity, message, time: new Date().toISOString(), ...options.base, ...tracing().logFields() };
    for (const [k, v] of Object.entries(fields)) entry[k] = SECRET_FIELDS.test(k) ? '[redacted]' : v instanceof Error ? v.message : v;
    write(JSON.stringify(entry));
  };
  return { debug: log('DEBUG'), info: log('INFO'), warn: log('WARNING'), error: log('ERROR') };
}

export function parseSeverity(value: string | undefined): Severity {
  const v = (value ?? 'INFO').toUpperCase();
  if (v === 'WARN') return 'WARNING';
  return v in LEVELS ? (v as Severity) : 'INFO';
}
