import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseMonitorLine, type MonitorFilter, type RoutingEvent } from '../../src/dataplane/monitor-line.js';

const filter: MonitorFilter = { protocol: 107, priority: 1107, interfaces: ['kilo0'] };

function parse(line: string, f: MonitorFilter = filter): RoutingEvent | null {
  return parseMonitorLine(line, f);
}

function route(fields: Partial<Extract<RoutingEvent, { kind: 'route' }>>): RoutingEvent {
  return {
    kind: 'route',
    deleted: false,
    family: 4,
    dst: '',
    table: 254,
    metric: 0,
    gateway: null,
    dev: 'kilo0',
    src: null,
    onlink: false,
    type: 'unicast',
    ...fields,
  };
}

// Every line below was printed by `ip -N -o monitor route rule link address` (iproute2 6.1) in a
// namespace on the development machine, unless marked "without -N" (plain `ip -o monitor …`).
// Link lines are shortened after the MAC address; the parser reads only their start.

test('IPv4 routes of Kilo: via, host route, table 1107, onlink, default, metric, src', () => {
  assert.deepEqual(
    parse('10.42.3.0/24 via 10.4.0.2 dev kilo0 proto 107 '),
    route({ dst: '10.42.3.0/24', gateway: '10.4.0.2' }),
  );
  assert.deepEqual(parse('10.42.4.7 dev kilo0 proto 107 scope 253 '), route({ dst: '10.42.4.7/32' }));
  assert.deepEqual(
    parse('10.42.5.0/24 via 10.4.0.3 dev kilo0 table 1107 proto 107 '),
    route({ dst: '10.42.5.0/24', gateway: '10.4.0.3', table: 1107 }),
  );
  assert.deepEqual(
    parse('10.42.6.0/24 via 192.168.9.9 dev kilo0 proto 107 onlink '),
    route({ dst: '10.42.6.0/24', gateway: '192.168.9.9', onlink: true }),
  );
  assert.deepEqual(
    parse('default via 10.4.0.9 dev kilo0 table 1107 proto 107 '),
    route({ dst: '0.0.0.0/0', gateway: '10.4.0.9', table: 1107 }),
  );
  assert.deepEqual(
    parse('default dev kilo0 table 1107 proto 107 scope 253 linkdown '),
    route({ dst: '0.0.0.0/0', table: 1107 }),
  );
  assert.deepEqual(
    parse('0.0.0.0/1 via 10.4.0.2 dev kilo0 proto 107 '),
    route({ dst: '0.0.0.0/1', gateway: '10.4.0.2' }),
  );
  assert.deepEqual(
    parse('10.42.8.0/24 via 10.4.0.3 dev kilo0 proto 107 metric 5 '),
    route({ dst: '10.42.8.0/24', gateway: '10.4.0.3', metric: 5 }),
  );
  assert.deepEqual(
    parse('10.42.11.0/24 via 10.4.0.2 dev kilo0 proto 107 src 10.4.0.1 mtu 1400 '),
    route({ dst: '10.42.11.0/24', gateway: '10.4.0.2', src: '10.4.0.1' }),
  );
  assert.deepEqual(parse('10.42.21.0/24 dev kilo0 proto 107 scope 253 linkdown '), route({ dst: '10.42.21.0/24' }));
  // RFC 5549: an IPv4 route through an IPv6 next hop.
  assert.deepEqual(
    parse('10.42.20.0/24 via inet6 fe80::1 dev kilo0 proto 107 '),
    route({ dst: '10.42.20.0/24', gateway: 'fe80::1' }),
  );
});

test('deleted routes carry the same key as the added ones', () => {
  assert.deepEqual(
    parse('Deleted 10.42.3.0/24 via 10.4.0.2 dev kilo0 proto 107 '),
    route({ deleted: true, dst: '10.42.3.0/24', gateway: '10.4.0.2' }),
  );
  assert.deepEqual(
    parse('Deleted 10.42.4.7 dev kilo0 proto 107 scope 253 '),
    route({ deleted: true, dst: '10.42.4.7/32' }),
  );
  assert.deepEqual(
    parse('Deleted 10.42.5.0/24 via 10.4.0.3 dev kilo0 table 1107 proto 107 '),
    route({ deleted: true, dst: '10.42.5.0/24', gateway: '10.4.0.3', table: 1107 }),
  );
  assert.deepEqual(
    parse('Deleted fd00:42:3::/64 via fd00:4::2 dev kilo0 proto 107 metric 1024 pref medium'),
    route({ deleted: true, family: 6, dst: 'fd00:42:3::/64', gateway: 'fd00:4::2', metric: 1024 }),
  );
});

test('IPv6 routes: via, host route, table, default with and without a gateway, expires', () => {
  assert.deepEqual(
    parse('fd00:42:3::/64 via fd00:4::2 dev kilo0 proto 107 metric 1024 pref medium'),
    route({ family: 6, dst: 'fd00:42:3::/64', gateway: 'fd00:4::2', metric: 1024 }),
  );
  assert.deepEqual(
    parse('fd00:42:4::/64 dev kilo0 table 1107 proto 107 metric 1024 pref medium'),
    route({ family: 6, dst: 'fd00:42:4::/64', table: 1107, metric: 1024 }),
  );
  assert.deepEqual(
    parse('Deleted fd00:42:5::1 dev kilo0 proto 107 metric 1024 pref medium'),
    route({ deleted: true, family: 6, dst: 'fd00:42:5::1/128', metric: 1024 }),
  );
  assert.deepEqual(
    parse('default via fe80::1 dev kilo0 table 1107 proto 107 metric 1024 pref medium'),
    route({ family: 6, dst: '::/0', gateway: 'fe80::1', table: 1107, metric: 1024 }),
  );
  // No gateway and "default": only the IPv6-only "pref" tells the family.
  assert.deepEqual(
    parse('default dev kilo0 table 1107 proto 107 metric 1024 linkdown pref medium'),
    route({ family: 6, dst: '::/0', table: 1107, metric: 1024 }),
  );
  assert.deepEqual(
    parse('fd00:21::/64 dev kilo0 proto 107 metric 1024 linkdown expires 300sec pref medium'),
    route({ family: 6, dst: 'fd00:21::/64', metric: 1024 }),
  );
});

test('route types under -N are numbers before the destination; multipath has no single device', () => {
  assert.deepEqual(parse('6 10.42.9.0/24 proto 107 '), route({ dst: '10.42.9.0/24', dev: null, type: 'blackhole' }));
  assert.deepEqual(
    parse('7 10.42.13.0/24 table 1107 proto 107 '),
    route({ dst: '10.42.13.0/24', dev: null, table: 1107, type: 'unreachable' }),
  );
  assert.deepEqual(
    parse('7 default dev lo table 1108 proto 107 metric 1024 pref medium'),
    route({ family: 6, dst: '::/0', dev: 'lo', table: 1108, metric: 1024, type: 'unreachable' }),
  );
  assert.deepEqual(
    parse(
      '10.42.10.0/24 proto 107 \\\tnexthop via 10.4.0.2 dev kilo0 weight 1 \\\tnexthop via 10.9.0.2 dev dum weight 1 ',
    ),
    route({ dst: '10.42.10.0/24', dev: null }),
  );
  // Without -N (plain `ip -o monitor`): names instead of numbers.
  assert.deepEqual(
    parse('blackhole 10.42.9.0/24 proto 107 '),
    route({ dst: '10.42.9.0/24', dev: null, type: 'blackhole' }),
  );
});

test('routes of other protocols are not reported, however alike', () => {
  for (const line of [
    '10.42.7.0/24 via 10.4.0.2 dev kilo0 proto 4 ',
    'Deleted 10.42.7.0/24 via 10.4.0.2 dev kilo0 proto 4 ',
    // without -N
    '10.42.7.0/24 via 10.4.0.2 dev kilo0 proto static ',
    '10.4.0.0/16 dev kilo0 proto 2 scope 253 src 10.4.0.1 ',
    '2 10.4.0.1 dev kilo0 table 255 proto 2 scope 254 src 10.4.0.1 ',
    '3 10.4.255.255 dev kilo0 table 255 proto 2 scope 253 src 10.4.0.1 ',
    '5 ff00::/8 dev kilo0 table 255 proto 2 metric 256 pref medium',
    'Deleted fe80::/64 dev kilo0 proto 2 metric 256 linkdown pref medium',
    // proto 1070 starts with "proto 107"
    '10.42.3.0/24 via 10.4.0.2 dev kilo0 proto 1070 ',
  ]) {
    assert.equal(parse(line), null, line);
  }
  // The same line is Kilo's when Kilo's protocol is configured as static.
  assert.deepEqual(
    parse('10.42.7.0/24 via 10.4.0.2 dev kilo0 proto static ', { ...filter, protocol: 4 }),
    route({ dst: '10.42.7.0/24', gateway: '10.4.0.2' }),
  );
});

test('rules at Kilo priority, with the family their selectors tell', () => {
  assert.deepEqual(parse('1107:\tfrom 10.42.0.0/16 lookup 1107'), { kind: 'rule', deleted: false, family: 4 });
  assert.deepEqual(parse('Deleted 1107:\tfrom 10.42.0.0/16 lookup 1107'), { kind: 'rule', deleted: true, family: 4 });
  assert.deepEqual(parse('1107:\tfrom fd00:42::/48 lookup 1107'), { kind: 'rule', deleted: false, family: 6 });
  assert.deepEqual(parse('Deleted 1107:\tfrom fd00:42::/48 lookup 1107'), { kind: 'rule', deleted: true, family: 6 });
  assert.deepEqual(parse('1107:\tfrom all to fd00:1::/64 lookup 1107'), { kind: 'rule', deleted: false, family: 6 });
  assert.deepEqual(parse('1107:\tnot from 10.0.0.0/8 iif kilo0 lookup 254'), {
    kind: 'rule',
    deleted: false,
    family: 4,
  });
  // "from all" looks the same in both families.
  assert.deepEqual(parse('1107:\tfrom all lookup 1107'), { kind: 'rule', deleted: false, family: null });
  assert.deepEqual(parse('Deleted 1107:\tfrom all lookup 1107'), { kind: 'rule', deleted: true, family: null });
  assert.deepEqual(parse('1107:\tfrom all fwmark 0x453 lookup 1107'), { kind: 'rule', deleted: false, family: null });
  assert.deepEqual(parse('1107:\tnot from all fwmark 0x1/0xff lookup 254'), {
    kind: 'rule',
    deleted: false,
    family: null,
  });
  assert.equal(parse('1200:\tfrom all lookup 1107'), null);
  assert.equal(parse('32766:\tfrom all lookup 254'), null);
});

test('links named in the filter: up, down, MTU, deleted; a veth peer suffix is not part of the name', () => {
  const mac = ' \\    link/[1] 2e:50:2f:93:57:77 brd ff:ff:ff:ff:ff:ff';
  assert.deepEqual(
    parse(`3: kilo0@kpeer: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc noqueue state UP group 0${mac}`),
    { kind: 'link', name: 'kilo0', deleted: false, up: true, mtu: 1500 },
  );
  assert.deepEqual(parse(`3: kilo0@kpeer: <BROADCAST,MULTICAST> mtu 1500 qdisc noqueue state DOWN group 0${mac}`), {
    kind: 'link',
    name: 'kilo0',
    deleted: false,
    up: false,
    mtu: 1500,
  });
  assert.deepEqual(
    parse(
      `3: kilo0@kpeer: <NO-CARRIER,BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1420 qdisc noqueue state LOWERLAYERDOWN group 0${mac}`,
    ),
    { kind: 'link', name: 'kilo0', deleted: false, up: true, mtu: 1420 },
  );
  assert.deepEqual(parse(`Deleted 3: kilo0@NONE: <BROADCAST,MULTICAST> mtu 1420 qdisc noop state DOWN group 0${mac}`), {
    kind: 'link',
    name: 'kilo0',
    deleted: true,
    up: false,
    mtu: 1420,
  });
  // wireguard-go's TUN device has no peer suffix.
  assert.deepEqual(
    parse(
      '2: kilo0: <POINTOPOINT,MULTICAST,NOARP,UP,LOWER_UP> mtu 1380 qdisc pfifo_fast state UNKNOWN group 0 \\    link/[65534] ',
    ),
    { kind: 'link', name: 'kilo0', deleted: false, up: true, mtu: 1380 },
  );
  assert.deepEqual(
    parse('Deleted 2: kilo0: <POINTOPOINT,MULTICAST,NOARP> mtu 1380 qdisc noop state DOWN group 0 \\    link/[65534] '),
    { kind: 'link', name: 'kilo0', deleted: true, up: false, mtu: 1380 },
  );
  // "M-DOWN" (the veth peer is down) is not "UP".
  assert.deepEqual(parse(`3: kilo0@kpeer: <BROADCAST,MULTICAST,M-DOWN> mtu 1500 qdisc noop state DOWN group 0${mac}`), {
    kind: 'link',
    name: 'kilo0',
    deleted: false,
    up: false,
    mtu: 1500,
  });
  assert.equal(
    parse(`2: kpeer@kilo0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc noqueue state UP group 0${mac}`),
    null,
  );
  assert.equal(
    parse(`4: kilo00: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc noqueue state UP group 0${mac}`),
    null,
  );
});

test('addresses of the named interfaces; kernel-made IPv6 link-local ones are left out', () => {
  const lft = '\\       valid_lft forever preferred_lft forever';
  assert.deepEqual(parse(`3: kilo0    inet 10.4.0.1/16 scope 0 kilo0${lft}`), {
    kind: 'address',
    name: 'kilo0',
    deleted: false,
    family: 4,
    cidr: '10.4.0.1/16',
  });
  assert.deepEqual(parse(`Deleted 3: kilo0    inet 10.4.0.1/16 scope global kilo0${lft}`) /* without -N */, {
    kind: 'address',
    name: 'kilo0',
    deleted: true,
    family: 4,
    cidr: '10.4.0.1/16',
  });
  assert.deepEqual(parse(`3: kilo0    inet6 fd00:4::1/64 scope 0 nodad ${lft}`), {
    kind: 'address',
    name: 'kilo0',
    deleted: false,
    family: 6,
    cidr: 'fd00:4::1/64',
  });
  assert.deepEqual(parse(`3: kilo0    inet 192.168.7.1 peer 192.168.7.2/32 scope 0 kilo0${lft}`), {
    kind: 'address',
    name: 'kilo0',
    deleted: false,
    family: 4,
    cidr: '192.168.7.1/32',
  });
  assert.equal(parse(`Deleted 3: kilo0    inet6 fe80::2c50:2fff:fe93:5777/64 scope 253 tentative ${lft}`), null);
  assert.equal(parse(`Deleted 3: kilo0    inet6 fe80::2c50:2fff:fe93:5777/64 scope link tentative ${lft}`), null); // without -N
  assert.equal(parse(`2: kilo0    inet6 fe80::9f69:a3b6:2dc5:84fd/64 scope 253 stable-privacy ${lft}`), null);
  assert.equal(parse(`5: dum    inet 10.9.0.1/24 scope 0 dum${lft}`), null);
});

test('lines it cannot read are ignored, never thrown', () => {
  for (const line of [
    '',
    'Deleted ',
    '\\',
    'garbage proto 107',
    '10.42.300.0/24 dev kilo0 proto 107 ',
    '10.42.3.0/24 via not-an-ip dev kilo0 proto 107 ',
    '1107:',
    '3: kilo0    inet not-an-ip/16 scope 0 kilo0',
    'Timestamp: Wed Dec  2 12:00:00 2026 123456 usec',
  ]) {
    assert.equal(parse(line), null, JSON.stringify(line));
  }
});
