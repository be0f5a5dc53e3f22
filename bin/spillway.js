#!/usr/bin/env node
// The `spillway` command; the TypeScript is compiled to dist/ by `npm ci` (prepare).
import '../dist/src/cli/main.js';
