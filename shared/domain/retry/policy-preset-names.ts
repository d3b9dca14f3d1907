/**
 * The names of the five policy presets (policy-presets.ts holds their values), in the order the CLI
 * and the console offer them, the default first. In a module that imports nothing, so the
 * console can bundle the list for the browser rather than keep a copy of its own.
 */
export const POLICY_PRESET_NAMES = ['event-platform', 'eventarc', 'adobe-best-effort', 'adobe-configurable', 'cloud-elements'] as const;
export type PolicyPresetName = (typeof POLICY_PRESET_NAMES)[number];
