/**
 * An allocation profile of the process that imports this module (`node --import <this file>?dir=D`,
 * as `bench/profile.ts --alloc` starts each stage): V8's sampling heap profiler from the first
 * moment, keeping the samples of objects the garbage collector has since freed, so the profile
 * says where the process allocated, not what it still holds. Written to `D/<pid>.heapprofile` when
 * the process exits (the inspector session on the main thread answers synchronously, so this works
 * inside an 'exit' listener). Plain JavaScript: stages run from the compiled dist/, without tsx.
 */
import { Session } from 'node:inspector';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const dir = new URL(import.meta.url).searchParams.get('dir');
if (dir) {
  const session = new Session();
  session.connect();
  let sampling = false;
  session.post('HeapProfiler.enable', () => {
    session.post(
      'HeapProfiler.startSampling',
      { samplingInterval: 16384, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true },
      (err) => {
        if (err) process.stderr.write(`alloc-sampler: ${err.message}\n`);
        else sampling = true;
      },
    );
  });
  process.on('exit', () => {
    if (!sampling) return;
    session.post('HeapProfiler.stopSampling', (err, res) => {
      if (err) return process.stderr.write(`alloc-sampler: ${err.message}\n`);
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, `${process.pid}.heapprofile`), JSON.stringify(res.profile));
    });
  });
}
