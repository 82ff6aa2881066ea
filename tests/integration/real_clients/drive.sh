# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# drive.sh: driving the real Cline CLIs headless against the stand-in model
# server (model_server.js), for the tests that run them (real_clients.sh,
# containers.sh). Sourced after lib.sh; it defines settings and functions and
# runs nothing.
#
# The layout of a run is the caller's: $B (the run's folder: workspaces
# $B/ws-<i>, each client's output in $B/<name>.{out,err}, exit statuses in
# $B/task-<i>.rc), $HOME_ (the client's HOME), $CFG (2.x's --config), $DATA
# (the client's data folder as this shell reads it). `cline V HOME ARGS...`
# runs a CLI here; a test whose clients run elsewhere (in a container)
# defines its own cline() after sourcing this file, running "${CLINE_ARGV[@]}"
# there.
#
# Environment:
#   CONVFS_CLIENT_CACHE  where the CLIs are installed (default ~/.cache/convfs/clients)
#   REAL_CLIENT_TIMEOUT  seconds one client run may take (default 240)
#   REAL_CLIENT_GAP      seconds between the starts of 1.x tasks run at once (default 8)
#   CI=true              a reason to skip (no npm registry, node < 20) fails

RCDIR=$TESTS_DIR/real_clients
CACHE=${CONVFS_CLIENT_CACHE:-$HOME/.cache/convfs/clients}
CLIENT_SECS=${REAL_CLIENT_TIMEOUT:-240}
GREETING='Hello from fake LLM'

declare -a REPORT=()
# note MSG: a line for the report printed at the end (and at once).
note()
{
	say "report: $*"
	REPORT+=("$*")
}

skip()
{
	if [[ ${CI:-} == true ]]; then
		fail "$* (CI=true: not skipped)"
	fi
	say "SKIP: $*"
	exit 77
}

# step NAME: prints how long the previous step took.
STEP=
STEP_T=$SECONDS
step()
{
	[[ -z $STEP ]] || say "time: $STEP took $((SECONDS - STEP_T)) s"
	STEP=$1
	STEP_T=$SECONDS
	[[ -z $STEP ]] || say "--- $STEP"
}

# at_exit FN: at the test's end, whatever happens, FN runs (it stops what the
# test started: clients, the model server), then lib.sh's cleanup, which
# takes the test's status from $?.
at_exit()
{
	trap 'st=$?; trap - ERR; trap "" INT TERM HUP; set +e; '"$1"'; status_is $st; cleanup' EXIT
}
status_is() { return "$1"; }

# clients_preconditions: node >= 20 and npm, or the test skips; jq.
clients_preconditions()
{
	local node_major
	node_major=$(node -p 'process.versions.node.split(".")[0]')
	((node_major >= 20)) || skip "node $(node --version) is older than 20, the oldest the Cline CLIs run on"
	command -v npm >/dev/null || skip "npm is missing"
	command -v jq >/dev/null || fail "jq is missing"
}

# install_client V: npm's `cline@V` in $CACHE/V, once; a run that did not end
# leaves no .installed mark and is done again.
install_client()
{
	local v=$1 dir=$CACHE/$1
	[[ -f $dir/.installed && -x $dir/node_modules/.bin/cline ]] && return 0
	timeout 60 npm ping >/dev/null 2>&1 || skip "the npm registry cannot be reached (npm ping failed) to install cline@$v"
	say "installing cline@$v into $dir"
	mkdir -p "$CACHE"
	(
		flock 9
		[[ -f $dir/.installed ]] && exit 0
		rm -rf "$dir"
		NO_AUTO_UPDATE=1 CLINE_NO_AUTO_UPDATE=1 timeout 900 \
			npm install --prefix "$dir" "cline@$v" --no-audit --no-fund >"$T/npm-$v.log" 2>&1 || exit 1
		[[ -x $dir/node_modules/.bin/cline ]] || exit 1
		touch "$dir/.installed"
	) 9>"$CACHE/.lock" || {
		tail -n 20 "$T/npm-$v.log" >&2
		skip "npm install cline@$v failed"
	}
}

# start_model_server: the stand-in model server on 127.0.0.1; sets
# MODEL_PID, PORT and BASE_URL. It logs every request to $T/model.log and
# ends once this test does.
start_model_server()
{
	node "$RCDIR/model_server.js" "$T/port" "$T/model.log" $$ 2>"$T/model.err" &
	MODEL_PID=$!
	wait_for "$T/port" 10 || fail "the model server did not start:\n$(cat "$T/model.err")"
	PORT=$(cat "$T/port")
	BASE_URL=http://127.0.0.1:$PORT/v1
	say "model server on $BASE_URL"
}

# clients_ready V...: each CLI V installed, the model server started.
clients_ready()
{
	local v
	step "install the CLIs"
	for v in "$@"; do
		install_client "$v"
	done
	step "start the model server"
	start_model_server
}

# cline_argv V HOME: sets CLINE_ARGV to the command that runs the CLI V with
# HOME (its arguments follow). BACKEND= (empty) lets 3.x start its
# background hub.
cline_argv()
{
	local v=$1 home=$2 backend=(CLINE_SESSION_BACKEND_MODE=local)
	[[ ${BACKEND-local} == local ]] || backend=()
	CLINE_ARGV=(env -u CLINE_DIR -u CLINE_DATA_DIR -u CLINE_SESSION_BACKEND_MODE -u XDG_CONFIG_HOME
		-u XDG_DATA_HOME -u XDG_CACHE_HOME -u XDG_STATE_HOME
		HOME="$home" PATH="$CACHE/$v/node_modules/.bin:$PATH" NO_COLOR=1
		NO_AUTO_UPDATE=1 CLINE_NO_AUTO_UPDATE=1 "${backend[@]}"
		timeout -k 10 "$CLIENT_SECS" "$CACHE/$v/node_modules/.bin/cline")
}

# cline V HOME ARGS...: runs the CLI V with HOME (in the current directory).
cline()
{
	cline_argv "$1" "$2"
	shift 2
	"${CLINE_ARGV[@]}" "$@"
}

# 1.x runs its core (node on a 45 MB bundle) as a child and gives it about
# 12 s to register; on a loaded machine, or with four starting at once on two
# cores, that is not always enough ("failed to start instance: ... instance
# not found in registry"), before anything reached the data folder. Such a run
# is tried again, up to twice, and counted in $B/retries.
STARTUP_FAILURE='failed to start (new |auth )?instance'

# retry_startup V NAME CMD...: CMD, again while a 1.x start-up failed; its
# output in $B/NAME.out and .err.
retry_startup()
{
	local v=$1 name=$2 rc attempt
	shift 2
	for ((attempt = 1; ; attempt++)); do
		rc=0
		"$@" </dev/null >"$B/$name.out" 2>"$B/$name.err" || rc=$?
		((rc != 0 && attempt < 3)) && [[ $v == 1.* ]] &&
			grep -q -E "$STARTUP_FAILURE" "$B/$name.out" "$B/$name.err" || return $rc
		echo "$name" >>"$B/retries"
		sleep $((RANDOM % 3 + 1))
	done
}

# auth V: points the client at the model server.
auth()
{
	local v=$1
	mkdir -p "$B/ws-0"
	case $v in
	1.*) retry_startup "$v" auth eval '(cd "$B/ws-0" && cline "$v" "$HOME_" auth -p openai -k sk-fake -m fake-model -b "$BASE_URL")' ;;
	2.*) retry_startup "$v" auth cline "$v" "$HOME_" auth -p openai -k sk-fake -m fake-model -b "$BASE_URL" --config "$CFG" ;;
	*) retry_startup "$v" auth cline "$v" "$HOME_" auth -p openai -k sk-fake -m fake-model -b "$BASE_URL" ;;
	esac
}

tag_of() { echo "rc-$1-$(basename "$B")-$2"; }

# run_task V I: one task in workspace $B/ws-I; output in $B/task-I.{out,err},
# exit status in $B/task-I.rc.
run_task()
{
	local v=$1 i=$2 ws=$B/ws-$2 rc=0 prompt
	prompt="Create a file hello.txt containing a greeting ($(tag_of "$v" "$i"))"
	((${SLOW_MS:-0} > 0)) && prompt+=" [slow $SLOW_MS]"
	mkdir -p "$ws"
	case $v in
	1.*) retry_startup "$v" "task-$i" eval '(cd "$ws" && cline "$v" "$HOME_" "$prompt" -y -m act -F json)' || rc=$? ;;
	2.*) retry_startup "$v" "task-$i" cline "$v" "$HOME_" task "$prompt" -y --config "$CFG" -c "$ws" || rc=$? ;;
	*) retry_startup "$v" "task-$i" cline "$v" "$HOME_" --json "$prompt" -c "$ws" || rc=$? ;;
	esac
	echo "$rc" >"$B/task-$i.rc"
}

# run_tasks V FROM TO: tasks FROM..TO at once; waits for all.
# 1.x starts a core of its own for each task (node on a 45 MB bundle) and
# gives it about 12 s to come up, which two cores cannot do for four at once:
# 1.x tasks start GAP s apart, and the model holds each one's first reply
# until the last has started, so that they still work and save at once.
run_tasks()
{
	local v=$1 i pids=() gap=0 dumper
	[[ $v == 1.* ]] && gap=${REAL_CLIENT_GAP:-8}
	# Shortly before the first client's timeout, what is stuck (lib.sh's
	# dump_stuck: processes waiting in the kernel, the daemons' threads),
	# into $B/stuck-FROM, which check_run prints if a task timed out.
	(
		trap - ERR
		set +e
		sleep $((CLIENT_SECS - 5))
		dump_stuck gdb >"$B/stuck-$2" 2>&1
	) </dev/null >/dev/null 2>&1 &
	dumper=$!
	for ((i = $2; i <= $3; i++)); do
		(
			trap - ERR
			set +e
			SLOW_MS=$(((gap > 0) * (($3 - i) * gap * 1000 + 2000))) run_task "$v" "$i"
		) &
		pids+=($!)
		((i < $3 && gap > 0)) && sleep "$gap"
	done
	wait "${pids[@]}" || true
	kill "$dumper" 2>/dev/null || true
	wait "$dumper" 2>/dev/null || true
}

# task_id V I: the id the client gave task I, found in its own files.
task_id()
{
	local v=$1 tag f
	tag="($(tag_of "$v" "$2"))"
	case $v in
	3.*)
		for f in "$DATA"/sessions/*/*.json; do
			[[ $f == *.messages.json ]] && continue
			grep -q -F -- "$tag" "$f" 2>/dev/null && { basename "$f" .json; return 0; }
		done
		;;
	*)
		for f in "$DATA"/tasks/*/ui_messages.json "$DATA"/tasks/*/api_conversation_history.json; do
			grep -q -F -- "$tag" "$f" 2>/dev/null && { basename "$(dirname "$f")"; return 0; }
		done
		;;
	esac
	return 0
}

# err_text FILE...: the lines of a client's output that say what went wrong,
# or, if none does, its last lines; never fails.
err_text()
{
	local text
	text=$(cat "$@" 2>/dev/null | sed 's/\x1b\[[0-9;]*m//g' |
		grep -a -i -E 'error|EPERM|EACCES|ENOENT|EINVAL|EIO|ENOTCONN|fail|denied' |
		grep -a -v -E 'DeprecationWarning|^\s+at ' | head -n 3 | cut -c1-300 | tr '\n' ' ') || true
	[[ -n $text ]] || text="no error in its output, which ends: $(cat "$@" 2>/dev/null | sed 's/\x1b\[[0-9;]*m//g' |
		tail -n 3 | cut -c1-200 | tr '\n' ' ')" || true
	printf '%s' "$text"
}

# exit_text RC: what a client's exit status says.
exit_text()
{
	case $1 in
	124 | 137) echo "timed out after $CLIENT_SECS s (status $1)" ;;
	*) echo "exit status $1" ;;
	esac
}

# task_problems V I ID: why task I did not end well (empty if it did).
task_problems()
{
	local v=$1 i=$2 id=$3 rc why=() f
	rc=$(cat "$B/task-$i.rc")
	((rc == 0)) || why+=("$(exit_text "$rc"): $(err_text "$B/task-$i.err" "$B/task-$i.out")")
	grep -q -F "$GREETING" "$B/ws-$i/hello.txt" 2>/dev/null || why+=("no hello.txt in its workspace")
	if [[ -z $id ]]; then
		why+=("none of its files in the data folder")
	else
		case $v in
		3.*)
			grep -q '"type":"run_result","finishReason":"completed"' "$B/task-$i.out" ||
				why+=("no completed run_result in its output")
			f=$DATA/sessions/$id/$id.json
			[[ $(jq -r .status "$f" 2>/dev/null) == completed ]] || why+=("its manifest's status is not completed")
			for f in "$DATA/sessions/$id/$id.json" "$DATA/sessions/$id/$id.messages.json"; do
				jq empty "$f" 2>/dev/null || why+=("${f#"$DATA"/} is missing or not valid JSON")
			done
			;;
		*)
			jq -e 'any(.[]; .say == "completion_result" and .partial != true)' \
				"$DATA/tasks/$id/ui_messages.json" >/dev/null 2>&1 ||
				why+=("no completion_result in tasks/$id/ui_messages.json")
			for f in ui_messages.json api_conversation_history.json task_metadata.json; do
				jq empty "$DATA/tasks/$id/$f" 2>/dev/null || why+=("tasks/$id/$f is missing or not valid JSON")
			done
			;;
		esac
	fi
	((${#why[@]} == 0)) || (IFS=';'; echo "${why[*]}")
}

# retries: "; N start-up retries" if there were any in $B.
retries()
{
	[[ -s $B/retries ]] && echo "; $(wc -l <"$B/retries") start-up retries ($(sort "$B/retries" | uniq -c | awk '{ printf "%s%s x%d", s, $2, $1; s = ", " }'))"
	return 0
}

# history_ids V: the ids in the client's own history.
history_ids()
{
	case $1 in
	3.*) (cd "$B" && cline "$1" "$HOME_" history --json --limit 500 </dev/null 2>"$B/history.err") |
		jq -r '.[].sessionId' 2>/dev/null || true ;;
	*) jq -r '.[].id' "$DATA/state/taskHistory.json" 2>/dev/null || true ;;
	esac
}

history_name()
{
	case $1 in
	3.*) echo '`cline history --json`' ;;
	*) echo state/taskHistory.json ;;
	esac
}

# view_ids: the task folders in the workspaces view.
view_ids()
{
	[[ -d $DATA/workspaces ]] || return 0
	find "$DATA/workspaces" -mindepth 3 -maxdepth 3 -path "$DATA/workspaces/*/tasks/*" -printf '%f\n' 2>/dev/null | sort -u
}

# has_line LIST WORD: WORD is a line of LIST.
has_line() { grep -q -x -F -- "$2" <<<"$1"; }
