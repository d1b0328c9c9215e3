// test-needs: kafka
/**
 * A stage's release watcher (runtime/release/watcher.ts) on the real broker: a release pointer that
 * names a manifest the watcher has not read is not put in force (the one before stays) until that
 * manifest arrives; a manifest whose content does not match its digest never does; and a stage's
 * record naming a manifest not read yet waits for it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEFAULT_SYSTEM_RULES } from '../../../processors/thought/model/prompt.ts';
import { withProducer } from '../../../runtime/kafka.ts';
import { createLogger } from '../../../runtime/log.ts';
import { manifestOf, type Manifest } from '../../../runtime/release/manifest.ts';
import { manifestKey, manifestValue, writeReleaseRecords, type ReleasePointer } from '../../../runtime/release/records.ts';
import { ReleaseWatcher } from '../../../runtime/release/watcher.ts';
import { freshCluster } from '../../helpers/cluster.ts';

const pointer = (active: string, candidate: string | null = null, percent = 0): ReleasePointer => ({
  active,
  previous: null,
  candidate,
  percent,
  changed_at: Date.now(),
  reason: 'test',
});

/** Resolves once `check` holds, polling the watcher's state; rejects after `timeoutMs`. */
async function until(check: () => boolean, timeoutMs = 15000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('the watcher did not reach the expected state');
    await new Promise((r) => setTimeout(r, 20));
  }
}

test('a pointer naming a manifest not read yet waits; a tampered manifest never counts', { timeout: 120000 }, async () => {
  const cluster = await freshCluster();
  await cluster.codec.register(['manifests']);
  const release = (repeatCap: string) => manifestOf({ ...cluster.env, TAO_REPEAT_CAP: repeatCap }, DEFAULT_SYSTEM_RULES);
  const [a, b, c, marker1, marker2] = ['2', '3', '4', '5', '6'].map(release) as [Manifest, Manifest, Manifest, Manifest, Manifest];
  const write = (records: Parameters<typeof writeReleaseRecords>[2]) =>
    withProducer(cluster.kafka, (p) => writeReleaseRecords(p, cluster.codec, records, Date.now()));
  await write({ manifests: [{ manifest: a, note: null }], pointer: pointer(a.digest) });

  const watcher = await ReleaseWatcher.start(cluster.kafka, cluster.codec, createLogger({ test: 'watcher' }, { level: 'error' }));
  try {
    assert.equal(watcher.pointer()?.active, a.digest, 'read to the end before it is used');

    // A pointer naming b before b's record is written (a writer that bypassed tao rollout's checks),
    // then a marker manifest: once the marker is read, so is the pointer before it.
    await write({ pointer: pointer(a.digest, b.digest, 50) });
    await write({ manifests: [{ manifest: marker1, note: 'marker' }] });
    await until(() => watcher.manifest(marker1.digest) !== undefined);
    assert.equal(watcher.pointer()?.candidate, null, 'the pointer before stays in force');

    const waiting = watcher.waitForManifest(b.digest, 30000);
    await write({ manifests: [{ manifest: b, note: null }] });
    assert.equal((await waiting).digest, b.digest, 'a record waiting for b gets it once it is read');
    await until(() => watcher.pointer()?.candidate === b.digest);

    // c's record does not match its digest (one file changed): refused, and a pointer naming c is never in force.
    const tampered = structuredClone(c);
    tampered.parts[0]!.files[0]!.content += ' ';
    await withProducer(cluster.kafka, async (p) =>
      p.send({
        topic: cluster.codec.topics.name('manifests'),
        messages: [{ key: manifestKey(c.digest), value: await cluster.codec.encode('manifests', manifestValue(tampered, Date.now(), null)) }],
      }),
    );
    await write({ pointer: pointer(c.digest) });
    await write({ manifests: [{ manifest: marker2, note: 'marker' }] });
    await until(() => watcher.manifest(marker2.digest) !== undefined);
    assert.equal(watcher.manifest(c.digest), undefined);
    assert.deepEqual([watcher.pointer()?.active, watcher.pointer()?.candidate], [a.digest, b.digest]);
    await assert.rejects(watcher.waitForManifest(c.digest, 200), /not in tao.manifests yet/);
  } finally {
    await watcher.stop();
  }
});
