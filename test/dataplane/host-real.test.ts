import { LinuxHost } from '../../src/dataplane/host/linux.js';
import { createNamespace, skipNoNetns } from '../helpers/netns.js';
import { hostContract } from './host-contract.js';
import { ipExec } from './routes-exec.js';

hostContract(
  'iproute2 in a network namespace',
  () => {
    const ns = createNamespace('kthost');
    try {
      ns.sh(
        [
          'ip link add priv0 type veth peer name priv1',
          'ip link add kilo0 type veth peer name kilo1',
          'ip addr add 192.168.1.1/24 dev priv0',
          'ip addr add fd00::1/64 dev priv0 nodad',
          'ip link set priv0 up && ip link set priv1 up && ip link set kilo1 up',
        ].join(' && '),
      );
    } catch (e) {
      ns.destroy();
      throw e;
    }
    const exec = ipExec(ns);
    const ip = async (...argv: string[]) => void (await exec.run(['ip', ...argv]));
    return {
      host: new LinuxHost(exec),
      addAddress: (d, c) => ip('addr', 'add', c, 'dev', d, 'nodad'),
      setMTU: (d, mtu) => ip('link', 'set', 'dev', d, 'mtu', String(mtu)),
      addDefaultRoute: (family, gw, dev, metric) =>
        ip(`-${family}`, 'route', 'add', 'default', 'via', gw, 'dev', dev, 'metric', String(metric)),
      destroy: () => ns.destroy(),
    };
  },
  skipNoNetns,
);
