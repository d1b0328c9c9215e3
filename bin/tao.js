#!/usr/bin/env node
// Entry point of the `tao` command: runs the TypeScript CLI through tsx's loader.
import { register } from 'tsx/esm/api';

register();
await import('../cli/main.ts');
