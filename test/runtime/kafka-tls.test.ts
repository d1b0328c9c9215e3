/**
 * The TLS and SASL settings without a broker: how KAFKA_SSL_CA_FILE and
 * KAFKA_SSL_REJECT_UNAUTHORIZED become kafkajs's `ssl` option, the one-line errors for settings that
 * do not fit together, and which start-up failures end the wait at once (a refused login, an
 * untrusted certificate) while the rest keep waiting. The errors are the ones kafkajs 2.2.4 throws.
 * test/runtime/sasl-ssl.test.ts runs the same paths against a real SASL_SSL broker.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { rootCertificates } from 'node:tls';
import { test } from 'node:test';
import kafkajs from 'kafkajs';
import { loadRuntimeConfig } from '../../runtime/config.ts';
import { kafkaSetupError, kafkaTlsOptions } from '../../runtime/kafka.ts';

const { KafkaJSConnectionError, KafkaJSNumberOfRetriesExceeded } = kafkajs;
// kafkajs's type declarations give this class no constructor arguments; at run time it takes the message.
const KafkaJSSASLAuthenticationError = kafkajs.KafkaJSSASLAuthenticationError as unknown as new (message: string) => Error;
const dir = mkdtempSync(join(tmpdir(), 'tao-kafka-tls-'));
const PEM = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';

test('without KAFKA_SSL there is no TLS; with it alone, the system CAs verify the brokers', () => {
  assert.equal(kafkaTlsOptions(loadRuntimeConfig({}).kafka), false);
  assert.equal(kafkaTlsOptions(loadRuntimeConfig({ KAFKA_SSL: 'true' }).kafka), true);
});

test('KAFKA_SSL_CA_FILE is trusted besides the system CAs; KAFKA_SSL_REJECT_UNAUTHORIZED=false turns verification off', () => {
  const file = join(dir, 'ca.pem');
  writeFileSync(file, PEM);
  const withCa = kafkaTlsOptions(loadRuntimeConfig({ KAFKA_SSL: 'true', KAFKA_SSL_CA_FILE: file }).kafka);
  assert.ok(typeof withCa === 'object');
  assert.equal(withCa.rejectUnauthorized, true);
  assert.deepEqual(withCa.ca, [...rootCertificates, PEM]);
  const lax = kafkaTlsOptions(loadRuntimeConfig({ KAFKA_SSL: 'true', KAFKA_SSL_REJECT_UNAUTHORIZED: 'false' }).kafka);
  assert.deepEqual(lax, { rejectUnauthorized: false });
});

test('a CA file that cannot be read or holds no certificate is one line naming KAFKA_SSL_CA_FILE', () => {
  const missing = join(dir, 'nope.pem');
  assert.throws(() => kafkaTlsOptions(loadRuntimeConfig({ KAFKA_SSL: 'true', KAFKA_SSL_CA_FILE: missing }).kafka), {
    code: 'CONFIG_INVALID',
    message: new RegExp(`^KAFKA_SSL_CA_FILE=${missing} cannot be read: ENOENT`),
  });
  const notPem = join(dir, 'key.txt');
  writeFileSync(notPem, 'not a certificate');
  assert.throws(() => kafkaTlsOptions(loadRuntimeConfig({ KAFKA_SSL: 'true', KAFKA_SSL_CA_FILE: notPem }).kafka), {
    code: 'CONFIG_INVALID',
    message: /^KAFKA_SSL_CA_FILE=.* holds no PEM certificate/,
  });
});

test('TLS settings without KAFKA_SSL=true are refused, not ignored', () => {
  assert.throws(
    () => loadRuntimeConfig({ KAFKA_SSL_CA_FILE: '/etc/ca.pem' }),
    /^ConfigError: KAFKA_SSL_CA_FILE is set but KAFKA_SSL is not true: set KAFKA_SSL=true/,
  );
  assert.throws(
    () => loadRuntimeConfig({ KAFKA_SSL: 'false', KAFKA_SSL_REJECT_UNAUTHORIZED: 'false' }),
    /KAFKA_SSL_REJECT_UNAUTHORIZED=false is set but KAFKA_SSL is not true/,
  );
  assert.throws(
    () => loadRuntimeConfig({ KAFKA_SSL: 'true', KAFKA_SSL_REJECT_UNAUTHORIZED: 'no' }),
    /KAFKA_SSL_REJECT_UNAUTHORIZED must be true or false, got "no"/,
  );
});

test('a refused SASL login ends the start-up wait with the user and mechanism named, never the password', () => {
  const config = loadRuntimeConfig({
    KAFKA_SSL: 'true',
    KAFKA_SASL_MECHANISM: 'scram-sha-512',
    KAFKA_SASL_USERNAME: 'svc-tao',
    KAFKA_SASL_PASSWORD: 'pa55-not-shown',
  }).kafka;
  const refused = new KafkaJSSASLAuthenticationError(
    'SASL SCRAM SHA512 authentication failed: Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512',
  );
  for (const thrown of [refused, new KafkaJSNumberOfRetriesExceeded(refused, { retryCount: 0, retryTime: 0 })]) {
    const err = kafkaSetupError(thrown, config);
    assert.equal(err?.code, 'CONFIG_INVALID');
    assert.match(
      err!.message,
      /^Kafka refused the SASL login of KAFKA_SASL_USERNAME=svc-tao \(KAFKA_SASL_MECHANISM=scram-sha-512\): SASL SCRAM SHA512 authentication failed: .*; check KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD$/,
    );
    assert.ok(!err!.message.includes('pa55-not-shown'));
  }
});

test('an untrusted broker certificate ends the wait naming KAFKA_SSL_CA_FILE; a refused or closed connection keeps waiting', () => {
  const untrusted = new KafkaJSConnectionError('Connection error: self-signed certificate in certificate chain', {
    broker: '127.0.0.1:9094',
    code: 'SELF_SIGNED_CERT_IN_CHAIN',
  });
  assert.match(
    kafkaSetupError(untrusted, loadRuntimeConfig({ KAFKA_SSL: 'true' }).kafka)!.message,
    /^Kafka's TLS certificate does not verify \(SELF_SIGNED_CERT_IN_CHAIN: .*\): set KAFKA_SSL_CA_FILE to the PEM file of the CA/,
  );
  const file = join(dir, 'other-ca.pem');
  writeFileSync(file, PEM);
  assert.match(
    kafkaSetupError(untrusted, loadRuntimeConfig({ KAFKA_SSL: 'true', KAFKA_SSL_CA_FILE: file }).kafka)!.message,
    new RegExp(`KAFKA_SSL_CA_FILE=${file} is not the CA that signed the brokers' certificates$`),
  );
  const refused = new KafkaJSConnectionError('Connection error: connect ECONNREFUSED 127.0.0.1:9092', { broker: '127.0.0.1:9092', code: 'ECONNREFUSED' });
  assert.equal(kafkaSetupError(refused, loadRuntimeConfig({}).kafka), null);
  assert.equal(kafkaSetupError(new KafkaJSNumberOfRetriesExceeded(refused, { retryCount: 8, retryTime: 5000 })), null);
  assert.equal(kafkaSetupError(new Error('Closed connection')), null);
});
