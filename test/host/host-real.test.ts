import { LinuxHost } from '../../src/dataplane/host/linux.js';
import { skipNoNetns } from '../helpers/netns.js';
import { hostContract } from './host-contract.js';
import { linksNamespace } from '../dataplane/namespaces.js';
import { ipExec } from '../dataplane/routes-exec.js';

hostContract(
  'iproute2 in a network namespace',
  () => {
    const ns = linksNamespace('kthost');
    // A new namespace copies the host's ip_forward (devconf_inherit_init_net=0), and a host that
    // ran a container build or a router has it on: the harness promises it off.
    ns.sh('sysctl -qw net.ipv4.ip_forward=0 net.ipv6.conf.all.forwarding=0');
    const exec = ipExec(ns);
    const ip = async (...argv: string[]) => void (await exec.run(['ip', ...argv]));
    return {
      host: new LinuxHost(exec),
      addAddress: (d, c) => ip('addr', 'add', c, 'dev', d, 'nodad'),
      setMTU: (d, mtu) => ip('link', 'set', 'dev', d, 'mtu', String(mtu)),
      addDefaultRoute: (family, gw, dev, metric) =>
        ip(`-${family}`, 'route', 'add', 'default', 'via', gw, 'dev', dev, 'metric', String(metric)),
      setForwarding: async (on, family = 4) =>
        void ns.sh(`sysctl -qw ${family === 6 ? 'net.ipv6.conf.all.forwarding' : 'net.ipv4.ip_forward'}=${on ? 1 : 0}`),
      destroy: () => ns.destroy(),
    };
  },
  skipNoNetns,
);
