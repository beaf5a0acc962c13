/**
 * Two plans' lists of one kind (routes, guard routes, WireGuard peers) matched entry by entry, for a
 * pass that builds and diffs only what the plans do not share (routes/incremental.ts,
 * wireguard/incremental.ts). A plan lists what did not change in the same order as the last one.
 */

/**
 * How far apart a kept entry may have moved between two plans for the walk to find it again. A node
 * joining or leaving adds or removes a few entries at one place in each part of the plan.
 */
const reach = 16;

/**
 * Which old entry each new one is (its index, or -1: new or changed), walking both lists in their
 * order. `gone` gets the old indices no new entry took. null once more than `limit` entries differ.
 */
export function align<T>(
  older: readonly T[],
  newer: readonly T[],
  same: (a: T, b: T) => boolean,
  gone: number[],
  limit: number,
): Int32Array | null {
  const taken = new Int32Array(newer.length).fill(-1);
  let changes = 0;
  let j = 0;
  for (let i = 0; i < newer.length; i++) {
    if (j < older.length && same(newer[i]!, older[j]!)) {
      taken[i] = j++;
      continue;
    }
    // Old entries removed here: the new one is a little further on in the old list.
    let d = 1;
    while (d <= reach && j + d < older.length && !same(newer[i]!, older[j + d]!)) d++;
    if (d <= reach && j + d < older.length) {
      for (let k = j; k < j + d; k++) gone.push(k);
      changes += d;
      taken[i] = j + d;
      j += d + 1;
    } else {
      // New here (added, or changed in place: then the old one at j is gone once nothing takes it).
      changes++;
      if (j < older.length && !newer.slice(i + 1, i + 1 + reach).some((n) => same(n, older[j]!))) gone.push(j++);
    }
    if (changes > limit) return null;
  }
  for (; j < older.length; j++) gone.push(j);
  return gone.length > limit ? null : taken;
}
