#!/usr/bin/env node
'use strict';
// The `herald` CLI: the compiled build when there is one (npm run build), else the
// TypeScript source through tsx.
const fs = require('node:fs');
const path = require('node:path');

const built = path.join(__dirname, '..', 'dist', 'apps', 'cli', 'main.js');
let cli;
if (fs.existsSync(built)) {
  cli = require(built);
} else {
  require('tsx/cjs');
  cli = require('../apps/cli/main.ts');
}
cli.main();
