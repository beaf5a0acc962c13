/**
 * YAML output; the `yaml` package is loaded only when asked for (JSON and text start faster).
 * Written for YAML 1.1 readers too: kubectl (Go's yaml.v2) reads a bare `y`, `no` or `on` as a bool,
 * so a node named `y` in `showconf --as-peer -o yaml | kubectl apply -f -` must be quoted. The text
 * is the same YAML 1.2 reads.
 */
export async function toYaml(value: unknown): Promise<string> {
  const { stringify } = await import('yaml');
  return stringify(value, { version: '1.1' });
}
