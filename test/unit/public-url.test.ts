import { describe, expect, it } from 'vitest';
import { publicUrlProblem } from '#shared/network/public-url.ts';

describe('recording link rules', () => {
  it.each([
    'https://records.example.com/calls/1.mp3',
    'https://records.example.com:8443/calls/1.mp3?sig=abc&exp=1700000000',
    'HTTPS://Records.Example.com/a.wav',
    'https://8.8.8.8/a.mp3',
    'https://[2606:4700:4700::1111]/a.mp3',
    'https://xn--80ak6aa92e.xn--p1ai/a.mp3',
    'https://пример.рф/a.mp3',
  ])('accepts a public https link %s', (url) => {
    expect(publicUrlProblem(url)).toBeUndefined();
  });

  it.each([
    ['http://records.example.com/a.mp3', 'scheme must be https'],
    ['ftp://records.example.com/a.mp3', 'scheme must be https'],
    ['records.example.com/a.mp3', 'scheme must be https'],
    ['https:records.example.com/a.mp3', 'must be an absolute https://host/... address'],
    ['https://user:pass@records.example.com/a.mp3', 'must not contain credentials'],
    ['https://user@records.example.com/a.mp3', 'must not contain credentials'],
    ['https://records.example.com/a b.mp3', 'must not contain spaces'],
    ['https://records.example.com/a\tb.mp3', 'must not contain spaces'],
    ['https://records.example.com:http/a.mp3', 'host or port is malformed'],
  ])('refuses %s: %s', (url, problem) => {
    expect(publicUrlProblem(url)).toBe(problem);
  });

  it.each([
    '127.0.0.1',
    '10.1.2.3',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '169.254.169.254',
    '0.0.0.0',
    '100.64.0.1',
    '192.0.0.8',
    '192.0.2.1',
    '198.18.0.1',
    '198.51.100.7',
    '203.0.113.9',
    '224.0.0.1',
    '239.255.255.250',
    '240.0.0.1',
    '255.255.255.255',
  ])('refuses the non-public IPv4 host %s', (host) => {
    expect(publicUrlProblem(`https://${host}/a.mp3`)).toBe('host must be a public address');
  });

  it.each([
    '::1',
    '::',
    '::ffff:127.0.0.1',
    '::ffff:10.0.0.1',
    '::ffff:8.8.8.8',
    '::127.0.0.1',
    '64:ff9b::a00:1',
    'fc00::1',
    'fd12:3456::1',
    'fe80::1',
    'fec0::1',
    'ff02::1',
    '2001:db8::1',
    '2001::1',
    '2002:7f00:1::1',
    '100::1',
    '3fff::1',
  ])('refuses the non-public IPv6 host [%s]', (host) => {
    expect(publicUrlProblem(`https://[${host}]/a.mp3`)).toBe('host must be a public address');
  });

  it.each(['2130706433', '0x7f.1', '0177.0.0.1', '127.1', '012.0.0.1', '0x7f000001', '127.0.0.1.', '1.2.3.04', 'foo.0x7f', '256.1.1.1'])(
    'refuses the ambiguous numeric host %s that a URL parser would rewrite',
    (host) => {
      expect(publicUrlProblem(`https://${host}/a.mp3`)).toBe('host is an ambiguous numeric address');
    },
  );

  it('refuses percent-encoded and full-width hosts that decode to a private address', () => {
    expect(publicUrlProblem('https://%31%32%37.0.0.1/a.mp3')).toBe('host must not be percent-encoded');
    expect(publicUrlProblem('https://１２７.０.０.１/a.mp3')).toBe('host must be a public address');
  });

  it.each(['localhost', 'files.localhost', 'nas.local', 'db.internal', 'router.home.arpa', 'intranet', 'x.test'])(
    'refuses the local or service name %s',
    (host) => {
      expect(publicUrlProblem(`https://${host}/a.mp3`)).toBe('host must be a public domain name');
    },
  );

  it('applies the per-source allow-list to the parsed host, with *.domain for subdomains', () => {
    const allowList = ['records.example.com', '*.cdn.example.net'];
    expect(publicUrlProblem('https://records.example.com/a.mp3', allowList)).toBeUndefined();
    expect(publicUrlProblem('https://eu.cdn.example.net/a.mp3', allowList)).toBeUndefined();
    expect(publicUrlProblem('https://other.example.com/a.mp3', allowList)).toBe('host is not in the allow-list of this source');
    expect(publicUrlProblem('https://cdn.example.net.evil.com/a.mp3', allowList)).toBe('host is not in the allow-list of this source');
  });
});
