/**
 * A route's path template as the regular expression that matches it, so the path is written
 * once: `{name}` is one segment (a named group, in order), any other segment itself. A path
 * that ends in a fixed segment also takes a trailing slash; one that ends in a parameter does not
 * (`/destinations/` is the list, not a destination with an empty id).
 */
export function patternOf(path: string): RegExp {
  const segments = path.split('/').slice(1);
  const source = segments.map((s) => {
    const param = /^\{([A-Za-z][A-Za-z0-9]*)\}$/.exec(s);
    return param ? `\\/(?<${param[1]}>[^/]+)` : `\\/${s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`;
  });
  const endsInParam = segments.at(-1)?.startsWith('{') ?? false;
  return new RegExp(`^${source.join('')}${endsInParam ? '' : '\\/?'}$`);
}
