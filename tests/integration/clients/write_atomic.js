// SPDX-License-Identifier: GPL-2.0-or-later
// write_atomic.js TARGET CONTENT_FILE
// Write pattern b, Cline's atomicWriteFile: writes
// `${target}.tmp.${Date.now()}.${random}.json`, renames it over TARGET, and on
// failure removes the temp file and rethrows. Like the client, it reads TARGET
// first (common.readBeforeWrite). On failure prints the error code (e.g.
// EINVAL from rename) and exits 1.
'use strict';

const fs = require('fs');
const { run, readBeforeWrite, atomicWriteFile } = require('./common.js');

run(async () => {
	const [target, contentFile] = process.argv.slice(2);
	readBeforeWrite(target);
	await atomicWriteFile(target, fs.readFileSync(contentFile, 'utf8'));
});
