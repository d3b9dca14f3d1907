/** What a caught value says, for a log line or an answer: an Error's message, anything else as a string. */
export function errorMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
