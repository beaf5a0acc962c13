/** YAML output; the `yaml` package is loaded only when asked for (JSON and text start faster). */
export async function toYaml(value: unknown): Promise<string> {
  const { stringify } = await import('yaml');
  return stringify(value);
}
