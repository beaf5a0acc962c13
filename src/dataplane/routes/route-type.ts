/**
 * Route types by the kernel's number (RTN_*), as `ip -N` prints them: under -N iproute2 prints a
 * blackhole route's type as "6", not "blackhole". Kilo's routes are compared by name. (RTN_* of
 * linux/rtnetlink.h.)
 */
const byNumber: readonly string[] = [
  'unspec',
  'unicast',
  'local',
  'broadcast',
  'anycast',
  'multicast',
  'blackhole',
  'unreachable',
  'prohibit',
  'throw',
  'nat',
  'xresolve',
];

/** Whether `word` names a route type (other than unspec): what a route line starts with when not unicast. */
export function isRouteTypeName(word: string): boolean {
  return word !== 'unspec' && byNumber.includes(word);
}

/** A route type's name, from its name or its number; an unknown number stays as printed. */
export function routeTypeName(text: string): string {
  return /^\d+$/.test(text) ? (byNumber[Number(text)] ?? text) : text;
}
