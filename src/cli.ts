#!/usr/bin/env node
// The switchyard command: its subcommands live in cli/.
import { main } from './cli/index.js';

const code = await main(process.argv.slice(2));
if (code !== 'running') process.exitCode = code;
