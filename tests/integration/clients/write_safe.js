// SPDX-License-Identifier: GPL-2.0-or-later
// write_safe.js TARGET CONTENT_FILE
// Write pattern c, Roo Code's safeWriteJson (with proper-lockfile's lock):
//   mkdir `${target}.lock`; write `.${name}.new_${ts}_${rand}.tmp`; rename
//   TARGET to `.${name}.bak_${ts}_${rand}.tmp`; rename the new file to TARGET;
//   unlink the backup; rmdir the lock.
// On failure it does what Roo does: renames the backup back, removes the new
// file, releases the lock, and rethrows. Like the client, it reads TARGET
// first (common.readBeforeWrite). Prints the error code (e.g. EINVAL from the
// rename) and exits 1.
'use strict';

const fs = require('fs');
const path = require('path');
const { run, readBeforeWrite } = require('./common.js');

const rand = () => Math.random().toString(36).slice(2);

async function safeWriteJson(filePath, data) {
	const dir = path.dirname(filePath);
	const name = path.basename(filePath);
	const lock = `${filePath}.lock`;
	await fs.promises.mkdir(lock);
	let newPath = null;
	let bakPath = null;
	try {
		newPath = path.join(dir, `.${name}.new_${Date.now()}_${rand()}.tmp`);
		await fs.promises.writeFile(newPath, data, 'utf8');
		let exists = false;
		try {
			await fs.promises.access(filePath);
			exists = true;
		} catch (e) {
			if (e.code !== 'ENOENT')
				throw e;
		}
		if (exists) {
			bakPath = path.join(dir, `.${name}.bak_${Date.now()}_${rand()}.tmp`);
			await fs.promises.rename(filePath, bakPath);
		}
		await fs.promises.rename(newPath, filePath);
		newPath = null;
		if (bakPath) {
			await fs.promises.unlink(bakPath);
			bakPath = null;
		}
	} catch (error) {
		if (bakPath)
			await fs.promises.rename(bakPath, filePath).catch((e) =>
				process.stderr.write(`write_safe.js: cannot restore the backup: ${e.message}\n`));
		if (newPath)
			await fs.promises.unlink(newPath).catch(() => {});
		throw error;
	} finally {
		await fs.promises.rmdir(lock);
	}
}

run(async () => {
	const [target, contentFile] = process.argv.slice(2);
	readBeforeWrite(target);
	await safeWriteJson(target, fs.readFileSync(contentFile, 'utf8'));
});
