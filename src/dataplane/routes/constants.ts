/**
 * How Kilo's routes and rules are told apart from everything else on a node. Ownership is a
 * property the kernel stores, never a guess from a route's content: a route is Kilo's when it
 * carries Kilo's protocol number, a rule when it sits at Kilo's priority.
 */

/**
 * The route protocol (`ip route … proto 107`) stamped on every route Kilo installs, in every table.
 * 107 is free in iproute2's rt_protos (0–4 kernel/boot/static, 8–18 routing daemons, 42 babel,
 * 99 openr, 186–192 bgp/isis/ospf/rip/eigrp) and is not used by the common CNI and routing daemons
 * (Calico 80, BIRD 12, Zebra/FRR 11 and 186+, keepalived 18); it echoes Kilo's table 1107.
 * Upstream Kilo uses `proto static`, which it shares with administrators; we deliberately do not.
 */
export const kiloRouteProtocol = 107;

/**
 * The priority of every policy rule Kilo installs (IPv4 and IPv6). Lower than the main table's
 * 32766 so encapsulated traffic is steered to table 1107 first, and well clear of the defaults
 * other tools use (0 local, 32766 main, 32767 default). Every rule at this priority is Kilo's.
 */
export const kiloRulePriority = 1107;

/** The kernel's number for table `main` (`ip -N` prints numbers). */
export const mainTableId = 254;
