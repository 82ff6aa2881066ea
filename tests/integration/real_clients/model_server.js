// SPDX-License-Identifier: GPL-2.0-or-later
// model_server.js PORT_FILE LOG_FILE [PARENT_PID]
// A stand-in OpenAI-compatible model server for the real Cline CLIs, on
// 127.0.0.1 at a free port (written to PORT_FILE once listening). It has no
// model: each reply is decided from the conversation it is sent.
//
//   POST /v1/chat/completions   streaming SSE (or one JSON body if "stream"
//                               is not true), usage included
//   GET  /v1/models             one model, "fake-model"
//
// The first reply of a task writes hello.txt in the workspace; once the
// conversation holds that tool's result, the reply finishes the task:
//   - native tools (the request has "tools", as Cline 3.x sends with its
//     "editor" tool): an OpenAI tool_call of editor {path, new_text}, then
//     plain text (3.x ends a turn that has no tool call);
//     if classic Cline ever sends native tools, write_to_file and
//     attempt_completion are answered the same way;
//   - otherwise (classic Cline 1.x/2.x): XML tool text, <write_to_file> and
//     then <attempt_completion>.
// A prompt holding "[slow N]" makes the first reply wait N ms (a task the
// test wants alive for a while). With MODEL_SERVER_END_DELAY_MS in its
// environment, every reply that ends a task waits that long: Cline 1.0.10
// records a checkpoint's commit id in its ui_messages.json only once the
// commit is done, and exits as soon as the task ends (make-fixtures waits so
// that the second checkpoint has its id). Every request is appended to LOG_FILE as
// one JSON line {t, method, url, tools, messages, reply, tool, last} for the
// report. With PARENT_PID it exits once that process is gone (a test that
// died leaves no server behind).
//
// Scripted tasks, for tests/integration/memory.sh (the task's first message
// holds the marker; each conversation's turns are counted here, by its first
// message, since a truncated conversation no longer shows them all):
//   [window]  classic Cline: write hello.txt, read it twice, write notes.txt,
//             then complete; from the first request that holds 6 messages
//             (the system prompt aside) on, the usage reported is near the
//             context window of a model the client does not know (99,000 of
//             its 128,000 less 30,000), so that the client drops part of the
//             conversation before its next request
//   [spawn]   Cline 3.x with its spawn_agent tool: the parent's first reply
//             spawns a subagent (its task holds "[child]"), whose first
//             reply writes child.txt with the editor tool, and whose second
//             ends it; the parent then ends
//   [spawn nested]  the same, but the subagent (its task holds "[nest]")
//             spawns one of its own, which writes grandchild.txt
// With MODEL_SERVER_RECORD=FILE in its environment, each request's whole
// body is appended to FILE as one JSON line {n, t, body}, n from 1.
'use strict';

const http = require('http');
const fs = require('fs');

const [portFile, logFile, parentPid] = process.argv.slice(2);
if (!portFile || !logFile) {
	console.error('usage: model_server.js PORT_FILE LOG_FILE');
	process.exit(2);
}

let calls = 0;
let requests = 0;
const endDelay = Number(process.env.MODEL_SERVER_END_DELAY_MS || 0);
const recordFile = process.env.MODEL_SERVER_RECORD || '';
// The turns each scripted conversation has had, by its first message.
const turns = new Map();
// The usage a model near its window reports: the client counts the window
// of a model it does not know as 128,000 tokens less 30,000.
const WINDOW_USAGE = 99000;

function log(entry)
{
	fs.appendFileSync(logFile, JSON.stringify({ t: Date.now(), ...entry }) + '\n');
}

// All the text of a message's content (a string or an array of blocks).
function textOf(content)
{
	if (typeof content === 'string')
		return content;
	if (Array.isArray(content))
		return content.map((b) => (typeof b === 'string' ? b : b && (b.text || textOf(b.content)) || '')).join('\n');
	return '';
}

// The workspace the client runs in, from the prompt's environment details.
function workspaceOf(messages)
{
	for (const m of messages) {
		const t = textOf(m.content);
		let r = /# Current Working Directory \(([^)]+)\)/.exec(t) || /Working Directory: (\S+)/.exec(t);
		if (r)
			return r[1];
	}
	return null;
}

function toolNames(body)
{
	return (body.tools || []).map((t) => (t.function ? t.function.name : t.name)).filter(Boolean);
}

// The conversation's messages, the system prompt aside.
function chatOf(messages)
{
	return messages.filter((m) => m.role !== 'system');
}

// The next turn of a scripted conversation (1 for its first reply).
function nextTurn(messages)
{
	const chat = chatOf(messages);
	const key = chat.length ? textOf(chat[0].content).slice(0, 4000) : '';
	const n = (turns.get(key) || 0) + 1;
	turns.set(key, n);
	return n;
}

const xmlWrite = (path, content) => '<write_to_file>\n<path>' + path + '</path>\n<content>\n' + content + '\n</content>\n</write_to_file>';
const xmlRead = (path) => '<read_file>\n<path>' + path + '</path>\n</read_file>';
const xmlDone = (result) => '<attempt_completion>\n<result>\n' + result + '\n</result>\n</attempt_completion>';

// A scripted reply, or null for a conversation that is not scripted.
function scripted(body, messages, first, tools)
{
	const chat = chatOf(messages);
	if (/\[window\]/.test(first) && !tools.length) {
		const n = nextTurn(messages);
		const steps = [
			() => xmlWrite('hello.txt', 'Hello from fake LLM'),
			() => xmlRead('hello.txt'),
			() => xmlRead('hello.txt'),
			() => xmlWrite('notes.txt', 'Notes of the fake LLM'),
		];
		const r = n <= steps.length ? { step: 'write', text: '<thinking>Step ' + n + '.</thinking>\n' + steps[n - 1]() }
			: { step: 'done', text: xmlDone('Created hello.txt and notes.txt. Task done.') };
		if (chat.length >= 6)
			r.usage = { prompt_tokens: WINDOW_USAGE, completion_tokens: 20, total_tokens: WINDOW_USAGE + 20 };
		return r;
	}
	const answered = messages.some((m) => m.role === 'tool');
	const spawn = (task) => ({ step: 'spawn', tool: { name: 'spawn_agent', args: { systemPrompt: 'You write files when asked.', task } }, text: 'I will ask a subagent.' });
	if (/\[child\]/.test(first) && /\[nest\]/.test(first) && tools.includes('spawn_agent'))
		return answered ? { step: 'done', text: 'The nested subagent is done.' } : spawn('Write grandchild.txt containing a greeting [child]');
	if (/\[child\]/.test(first) && tools.includes('editor')) {
		const file = (/Write (\S+)/.exec(first) || [])[1] || 'child.txt';
		if (!answered)
			return { step: 'write', tool: { name: 'editor', args: { path: file, new_text: 'Written by a subagent\n' } }, text: 'I will write ' + file + '.' };
		return { step: 'done', text: 'The subagent wrote ' + file + '.' };
	}
	if (/\[spawn( nested)?\]/.test(first) && tools.includes('spawn_agent')) {
		if (answered)
			return { step: 'done', text: 'The subagent is done. Task done.' };
		return spawn(/\[spawn nested\]/.test(first) ? 'Spawn a helper that writes a file [child] [nest]' : 'Write child.txt containing a greeting [child]');
	}
	return null;
}

// The reply: {text} or {tool: {name, args}}, and which step it is.
function decide(body)
{
	const messages = body.messages || [];
	const chat = chatOf(messages);
	const s = scripted(body, messages, chat.length ? textOf(chat[0].content) : '', toolNames(body));
	if (s)
		return s;
	const all = messages.map((m) => textOf(m.content)).join('\n');
	const tools = toolNames(body);
	const native = tools.length > 0;
	// A result of our tool is in the conversation: the task is done.
	const done = messages.some((m) => m.role === 'tool') ||
		/\[write_to_file for '[^']*'\] Result:/.test(all) ||
		/File created successfully/.test(all);
	const ws = workspaceOf(messages);
	if (native) {
		if (!done) {
			if (tools.includes('editor'))
				return { step: 'write', tool: { name: 'editor', args: { path: (ws ? ws + '/' : '') + 'hello.txt', new_text: 'Hello from fake LLM\n' } }, text: 'I will create hello.txt.' };
			if (tools.includes('write_to_file'))
				return { step: 'write', tool: { name: 'write_to_file', args: { path: 'hello.txt', content: 'Hello from fake LLM\n' } } };
		}
		if (tools.includes('attempt_completion'))
			return { step: 'done', tool: { name: 'attempt_completion', args: { result: 'Created hello.txt. Task done.' } } };
		return { step: 'done', text: 'Created hello.txt. Task done.' };
	}
	if (!done)
		return { step: 'write', text: '<thinking>Create the file.</thinking>\n<write_to_file>\n<path>hello.txt</path>\n<content>\nHello from fake LLM\n</content>\n</write_to_file>' };
	return { step: 'done', text: '<attempt_completion>\n<result>\nCreated hello.txt. Task done.\n</result>\n</attempt_completion>' };
}

const usage = { prompt_tokens: 100, completion_tokens: 20, total_tokens: 120 };

function chunk(id, delta, finish)
{
	return { id, object: 'chat.completion.chunk', created: Math.floor(Date.now() / 1000), model: 'fake-model', choices: [{ index: 0, delta, finish_reason: finish || null }] };
}

function reply(res, body, r)
{
	const n = ++calls;
	const id = 'chatcmpl-fake-' + n;
	const callId = 'call_fake_' + n;
	const toolCall = r.tool && { index: 0, id: callId, type: 'function', function: { name: r.tool.name, arguments: JSON.stringify(r.tool.args) } };
	const finish = r.tool ? 'tool_calls' : 'stop';
	const use = r.usage || usage;
	if (body.stream !== true) {
		const message = { role: 'assistant', content: r.text || null };
		if (toolCall) {
			const { index, ...c } = toolCall;
			message.tool_calls = [c];
		}
		res.writeHead(200, { 'content-type': 'application/json' });
		res.end(JSON.stringify({ id, object: 'chat.completion', created: Math.floor(Date.now() / 1000), model: 'fake-model', choices: [{ index: 0, message, finish_reason: finish }], usage: use }));
		return;
	}
	res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
	const send = (o) => res.write('data: ' + JSON.stringify(o) + '\n\n');
	send(chunk(id, { role: 'assistant', content: '' }));
	if (r.text && r.step === 'write') {
		// In two pieces, as a model streams.
		const half = Math.floor(r.text.length / 2);
		send(chunk(id, { content: r.text.slice(0, half) }));
		send(chunk(id, { content: r.text.slice(half) }));
	} else if (r.text) {
		// The completion in one piece: Cline 1.0.10 stops as soon as it sees
		// a completion_result, even a partial one, and would save the
		// first piece only.
		send(chunk(id, { content: r.text }));
	}
	if (toolCall)
		send(chunk(id, { tool_calls: [toolCall] }));
	send(chunk(id, {}, finish));
	const last = chunk(id, {}, null);
	last.choices = [];
	last.usage = use;
	send(last);
	res.write('data: [DONE]\n\n');
	res.end();
}

const server = http.createServer((req, res) => {
	let data = '';
	req.setEncoding('utf8');
	req.on('data', (d) => { data += d; });
	req.on('end', () => {
		const url = req.url.replace(/\?.*/, '');
		if (req.method === 'GET' && /\/models$/.test(url)) {
			log({ method: req.method, url });
			res.writeHead(200, { 'content-type': 'application/json' });
			res.end(JSON.stringify({ object: 'list', data: [{ id: 'fake-model', object: 'model', created: 0, owned_by: 'convfs-test' }] }));
			return;
		}
		if (req.method === 'POST' && /\/chat\/completions$/.test(url)) {
			let body;
			try {
				body = JSON.parse(data || '{}');
			} catch (e) {
				log({ method: req.method, url, error: 'bad json' });
				res.writeHead(400);
				res.end();
				return;
			}
			if (recordFile)
				fs.appendFileSync(recordFile, JSON.stringify({ n: ++requests, t: Date.now(), body }) + '\n');
			const r = decide(body);
			const msgs = body.messages || [];
			const lastMsg = msgs.length ? textOf(msgs[msgs.length - 1].content).slice(0, 200) : '';
			log({ method: req.method, url, stream: body.stream === true, tools: toolNames(body), messages: msgs.length, reply: r.step, tool: r.tool && r.tool.name, last: lastMsg });
			const slow = /\[slow (\d+)\]/.exec(msgs.map((m) => textOf(m.content)).join('\n'));
			const wait = slow && r.step === 'write' ? Number(slow[1]) : r.step === 'done' ? endDelay : 0;
			setTimeout(() => reply(res, body, r), wait);
			return;
		}
		log({ method: req.method, url, status: 404 });
		res.writeHead(404, { 'content-type': 'application/json' });
		res.end(JSON.stringify({ error: { message: 'not here: ' + req.method + ' ' + url } }));
	});
});

server.listen(0, '127.0.0.1', () => {
	const tmp = portFile + '.tmp';
	fs.writeFileSync(tmp, String(server.address().port) + '\n');
	fs.renameSync(tmp, portFile);
});
process.on('SIGTERM', () => process.exit(0));
if (parentPid) {
	setInterval(() => {
		try {
			process.kill(Number(parentPid), 0);
		} catch (e) {
			process.exit(0);
		}
	}, 1000).unref();
}
