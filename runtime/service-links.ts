/**
 * The variables Kubernetes injects into a pod for every Service of its namespace ("service links",
 * unless the pod sets `enableServiceLinks: false`), as kubelet writes them (pkg/kubelet/envvars):
 * for a Service `tao-tao-kafka-ingress` with cluster IP 10.0.0.1 and a port `http` 80/TCP,
 *
 *   TAO_TAO_KAFKA_INGRESS_SERVICE_HOST=10.0.0.1        TAO_TAO_KAFKA_INGRESS_PORT=tcp://10.0.0.1:80
 *   TAO_TAO_KAFKA_INGRESS_SERVICE_PORT=80              TAO_TAO_KAFKA_INGRESS_PORT_80_TCP=tcp://10.0.0.1:80
 *   TAO_TAO_KAFKA_INGRESS_SERVICE_PORT_HTTP=80         TAO_TAO_KAFKA_INGRESS_PORT_80_TCP_PROTO=tcp
 *                                                      TAO_TAO_KAFKA_INGRESS_PORT_80_TCP_PORT=80
 *                                                      TAO_TAO_KAFKA_INGRESS_PORT_80_TCP_ADDR=10.0.0.1
 *
 * A release named `tao` makes every such name start with `TAO_`. The start-up check of the
 * environment (runtime/config.ts) ignores these instead of refusing them as unknown settings; it
 * recognises them by name AND value, so that a typo keeps being refused: a name counts only when
 * its Service's `<PREFIX>_SERVICE_HOST` holds an IP address, and its value is what kubelet writes
 * for that name (`TAO_INGRES_PORT=8080`, a typo, is not `tcp://<ip>:<port>`).
 */
import { isIP } from 'node:net';

const PROTOCOLS = new Set(['tcp', 'udp', 'sctp']);
const NUMBER = /^\d{1,5}$/;

/** `ip:port` as Go's net.JoinHostPort writes it (an IPv6 address in brackets). */
const hostPort = (ip: string, port: string): string => (ip.includes(':') ? `[${ip}]:${port}` : `${ip}:${port}`);

/** Whether `rest` (the name after `<PREFIX>_`) with `value` is one of the variables kubelet writes for a Service at `ip`. */
function isLinkOf(rest: string, value: string, ip: string): boolean {
  if (rest === 'SERVICE_HOST') return true; // the anchor itself (its value was checked to be an IP)
  if (rest === 'SERVICE_PORT' || /^SERVICE_PORT_[A-Z0-9_]+$/.test(rest)) return NUMBER.test(value);
  const link = (proto: string, port: string) => PROTOCOLS.has(proto) && value === `${proto}://${hostPort(ip, port)}`;
  if (rest === 'PORT') {
    const m = /^([a-z]+):\/\/.*:(\d{1,5})$/.exec(value);
    return m !== null && link(m[1]!, m[2]!);
  }
  const m = /^PORT_(\d{1,5})_([A-Z]+)(?:_(PROTO|PORT|ADDR))?$/.exec(rest);
  if (!m) return false;
  const [, port, PROTO, field] = m as unknown as [string, string, string, string | undefined];
  const proto = PROTO.toLowerCase();
  if (!PROTOCOLS.has(proto)) return false;
  if (field === undefined) return link(proto, port);
  if (field === 'PROTO') return value === proto;
  if (field === 'PORT') return value === port;
  return value === ip;
}

/**
 * The names in `env` that are Kubernetes service-link variables (see the file's comment), among
 * those starting with `namePrefix` (all when empty).
 */
export function serviceLinkNames(env: NodeJS.ProcessEnv, namePrefix = ''): Set<string> {
  const services = new Map<string, string>(); // <PREFIX> -> cluster IP
  for (const [name, value] of Object.entries(env)) {
    const m = /^([A-Z][A-Z0-9_]*)_SERVICE_HOST$/.exec(name);
    if (m && name.startsWith(namePrefix) && value !== undefined && isIP(value) !== 0) services.set(m[1]!, value);
  }
  const links = new Set<string>();
  if (services.size === 0) return links;
  for (const [name, value] of Object.entries(env)) {
    if (!name.startsWith(namePrefix) || value === undefined) continue;
    for (const [prefix, ip] of services) {
      if (name.startsWith(`${prefix}_`) && isLinkOf(name.slice(prefix.length + 1), value, ip)) {
        links.add(name);
        break;
      }
    }
  }
  return links;
}

/**
 * Whether `name=value` has the shape of a service link (`..._PORT=tcp://<ip>:<port>`, or an IP in
 * `..._SERVICE_HOST`): for the message of a declared setting that such a link set (a Service named
 * `tao-ingress` injects TAO_INGRESS_PORT=tcp://10.0.0.1:80 into every pod of its namespace).
 */
export function looksLikeServiceLink(name: string, value: string): boolean {
  const m = /^([a-z]+):\/\/(.+):(\d{1,5})$/.exec(value);
  if (m && PROTOCOLS.has(m[1]!) && isIP(m[2]!.replace(/^\[|\]$/g, '')) !== 0) return name.endsWith('_PORT') || /_PORT_\d+_[A-Z]+$/.test(name);
  return name.endsWith('_SERVICE_HOST') && isIP(value) !== 0;
}
