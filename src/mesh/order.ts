/** Kilo's order of objects of one kind: by name, as `<` compares strings. */
export const byName = (a: { name: string }, b: { name: string }) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

/**
 * The objects by name: the list itself when it already is (lists come so from the API server, and
 * readyMesh keeps them so), else a sorted copy. One look at each neighbour instead of a sort's calls
 * of a comparator (docs/performance.md#cold-code).
 */
export function inNameOrder<T extends { name: string }>(list: readonly T[]): readonly T[] {
  for (let i = 1; i < list.length; i++) if (!(list[i - 1]!.name < list[i]!.name)) return [...list].sort(byName);
  return list;
}
