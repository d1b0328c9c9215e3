/**
 * A full garbage collection on SIGUSR2 in the process that imports this module
 * (`node --expose-gc --import <this file>`, as `bench/thought-memory.ts` starts each Thought
 * instance), so that a heap reading taken after it counts what is live, not garbage a collection
 * has not reached yet (a store that let partitions go after a rebalance leaves their runs as
 * garbage until the next major collection). Plain JavaScript: stages run from the compiled dist/.
 */
process.on('SIGUSR2', () => globalThis.gc?.());
