// SPDX-License-Identifier: GPL-2.0-or-later
//
// memory_compaction.mjs: the Cline CLI 3.x's own compaction functions, for
// memory.sh's part G (the installed client's @cline/core, never a copy):
//
//   make CORE MESSAGES N SESSION   the state the client writes when it compacts
//                                  the first N messages of MESSAGES (JSON Lines)
//                                  into a summary, as it writes it to
//                                  <id>.compaction.json
//   project CORE STATE MESSAGES    what the client sends from STATE and MESSAGES:
//                                  one JSON.stringify() a line; exit 3 if the
//                                  state does not apply
//   norm FILE                      each line of FILE as JSON.stringify(JSON.parse())
import { readFileSync } from "node:fs";

const [cmd, ...args] = process.argv.slice(2);
const lines = (file) => readFileSync(file, "utf8").split("\n").filter((l) => l !== "");
const messages = (file) => lines(file).map((l) => JSON.parse(l));
const out = (list) => process.stdout.write(list.map((m) => JSON.stringify(m) + "\n").join(""));

if (cmd === "make") {
	const [core, file, n, session] = args;
	const { createSessionCompactionState, parseSessionCompactionState } = await import(core);
	// A summary with what JSON.stringify() writes its own way: escapes, numbers, keys that are indexes.
	const summary = {
		role: "user",
		content: [{ type: "text", text: "Summary: the user asked for hello.txt, caf\u00e9 \u2014 \"done\"\n\tnext" }],
		metadata: { kind: "compaction_summary", 2: "b", 1: "a", tokens: 1e21, ratio: 0.000001 },
		ts: 1795505496000.5,
	};
	const state = createSessionCompactionState({
		sourceMessages: messages(file).slice(0, Number(n)),
		compactedMessages: [summary, { role: "assistant", content: "Understood." }],
		conversationId: session,
	});
	process.stdout.write(`${JSON.stringify(parseSessionCompactionState(state), null, 2)}\n`);
} else if (cmd === "project") {
	const [core, stateFile, file] = args;
	const { parseSessionCompactionState, projectSessionCompactionState } = await import(core);
	const state = parseSessionCompactionState(JSON.parse(readFileSync(stateFile, "utf8")));
	const sent = state && projectSessionCompactionState(state, messages(file));
	if (!sent)
		process.exit(3);
	out(sent);
} else if (cmd === "norm") {
	out(messages(args[0]));
} else {
	process.stderr.write(`memory_compaction.mjs: unknown command '${cmd}'\n`);
	process.exit(2);
}
