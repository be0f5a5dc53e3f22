import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

export interface Certificates {
  ca: string;
  cert: string;
  key: string;
}

/**
 * A throwaway CA (a day long) and one certificate signed by it for server and client
 * use, naming the given IP addresses, made with the openssl command into `dir`; for
 * the TLS benchmark and the multi-host test.
 */
export function makeCertificates(dir: string, addresses: string[]): Certificates {
  const file = (name: string): string => path.join(dir, name);
  const openssl = (...args: string[]): void => void execFileSync('openssl', args, { stdio: 'pipe' });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];
  openssl('req', '-x509', ...ec, '-keyout', file('ca.key'), '-out', file('ca.pem'), '-days', '1', '-subj', '/CN=spillway test CA',
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign');
  openssl('req', ...ec, '-keyout', file('node.key'), '-out', file('node.csr'), '-subj', '/CN=spillway node');
  fs.writeFileSync(
    file('node.ext'),
    `subjectAltName=${addresses.map((a) => `IP:${a}`).join(',')}\nextendedKeyUsage=serverAuth,clientAuth\nbasicConstraints=CA:FALSE\n`,
  );
  openssl('x509', '-req', '-in', file('node.csr'), '-CA', file('ca.pem'), '-CAkey', file('ca.key'), '-CAcreateserial', '-out', file('node.pem'), '-days', '1',
    '-extfile', file('node.ext'));
  return { ca: file('ca.pem'), cert: file('node.pem'), key: file('node.key') };
}
