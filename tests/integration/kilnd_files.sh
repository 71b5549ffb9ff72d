# kilnd's files API (docs/api.md, the files endpoints): metadata, archives and their
# escapes, and file watching, on one sandbox. Helpers: kilnd_lib.sh.

# File watching (docs/api.md, "Watching files") on the sandbox of
# test_kilnd_file_metadata_and_archives (no boot of its own): a recursive
# watch through kilnd's endpoint (curl) and one through `kiln fs watch` at
# once see create, modify, rename, delete and a file in a new
# subdirectory, in order; both streams end, saying why, when the sandbox
# is deleted. kd_watch_until FILE PATTERN: wait (bounded) for PATTERN.
kd_watch_until() {
  local i
  for i in $(seq 1 240); do
    grep -q -- "$2" "$1" 2>/dev/null && return 0
    sleep 0.5
  done
  return 1
}

# kd_watch_begin: bad requests, then both watches, then the changes.
kd_watch_begin() {
  local t0=$SECONDS
  api POST "/v1/sandboxes/$sid/files/mkdir" -d '{"path":"/home/user/w/old","parents":true}'
  kd_check '[ $status = 200 ]' "mkdir of the watched directory"
  api GET "/v1/sandboxes/$sid/files/watch?path=/home/user/w&recursive=maybe"
  kd_check '[ $status = 400 ] && [ "$(jget .error.code)" = bad_field ]' "a bad watch parameter is 400 bad_field"
  api GET "/v1/sandboxes/$sid/files/watch?path=/home/user/none"
  kd_check '[ $status = 404 ] && [ "$(jget .error.code)" = not_found ]' "watching a missing directory is 404"
  heartbeat "watch streams"
  curl -sS -N --max-time 900 --unix-socket "$kds" \
    "http://kiln/v1/sandboxes/$sid/files/watch?path=/home/user/w&recursive=true" >"$kd/watch.ndjson" 2>"$kd/watch.err" &
  kd_wpid=$!
  timeout -k 5 900 "$KILN_CLI" --socket "$kds" fs watch -r "$sid:/home/user/w" >"$kd/watch.cli" 2>"$kd/watch.cli.err" </dev/null &
  kd_wcpid=$!
  kd_check 'kd_watch_until "$kd/watch.ndjson" "\"watching\"" && kd_watch_until "$kd/watch.cli.err" "kiln: watching"' \
    "both watches started ($(cat "$kd/watch.err" "$kd/watch.cli.err" 2>/dev/null))"
  kd_sh "$sid" 'cd /home/user/w && echo one >a.txt && echo two >>a.txt && mv a.txt b.txt && rm b.txt && mkdir sub && echo x >sub/c.txt && echo y >old/d.txt'
  kd_check '[ $status = 200 ]' "the changes ran"
  kd_check 'kd_watch_until "$kd/watch.ndjson" old/d.txt && kd_watch_until "$kd/watch.cli" old/d.txt' "both watches saw the last change"
  # The first six events are exact; then the file of the new directory
  # (reported by its scan or by inotify, possibly both) before old/d.txt.
  kd_check 'python3 - "$kd/watch.ndjson" "$kd/watch.cli" <<'"'"'PY'"'"'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
assert ev[0]["type"] == "watching" and ev[0]["recursive"] is True, ev[0]
ev = ev[1:]
assert [e["seq"] for e in ev] == list(range(len(ev))), ev
got = [(e["type"], e.get("old_path", ""), e["path"], e["is_dir"]) for e in ev]
want = [("create", "", "a.txt", False), ("modify", "", "a.txt", False), ("modify", "", "a.txt", False),
        ("rename", "a.txt", "b.txt", False), ("delete", "", "b.txt", False), ("create", "", "sub", True)]
assert got[:6] == want, got
rest = [g for g in got[6:] if g[0] == "create"]
assert rest[0] == ("create", "", "sub/c.txt", False) and rest[-1] == ("create", "", "old/d.txt", False), got
cli = open(sys.argv[2]).read().splitlines()
assert cli[:6] == ["create  a.txt", "modify  a.txt", "modify  a.txt", "rename  a.txt -> b.txt", "delete  b.txt",
                   "create  sub/"], cli
assert [l for l in cli[6:] if l.startswith("create")][0] == "create  sub/c.txt", cli
assert "create  old/d.txt" in cli[6:], cli
PY' "the events, in order (curl: $(head -c 1500 "$kd/watch.ndjson"); kiln: $(head -c 600 "$kd/watch.cli"))"
  kd_watch_secs=$((SECONDS - t0))
}

# kd_watch_end: after the sandbox's DELETE, both streams have ended by
# themselves with their end event.
kd_watch_end() {
  local i
  for i in $(seq 1 240); do
    kill -0 "$kd_wpid" 2>/dev/null || kill -0 "$kd_wcpid" 2>/dev/null || break
    sleep 0.5
  done
  kd_check '! kill -0 "$kd_wpid" 2>/dev/null && ! kill -0 "$kd_wcpid" 2>/dev/null' "both watch streams ended with the sandbox"
  kill "$kd_wpid" "$kd_wcpid" 2>/dev/null
  wait "$kd_wpid"
  kd_check 'wait "$kd_wcpid"' "kiln fs watch exits 0 at the end ($(cat "$kd/watch.cli.err"))"
  kd_check '[ "$(tail -n 1 "$kd/watch.ndjson" | jq -r "[.type, .reason] | join(\" \")")" = "end sandbox_stopped" ]' \
    "the curl stream ends with an end event ($(tail -n 1 "$kd/watch.ndjson"))"
  kd_check 'grep -q "the watch ended: sandbox_stopped" "$kd/watch.cli.err"' "kiln fs watch says why it ended"
  heartbeat "file watch checks took ${kd_watch_secs}s, their end $((SECONDS - kd_watch_t1))s with the DELETE"
}

test_kilnd_file_metadata_and_archives() {
  kd_start || return 1
  local why='' n kd_wpid kd_wcpid kd_watch_secs kd_watch_t1
  kd_create '{"image":"minimal"}' || { kd_stop; return 1; }

  api POST "/v1/sandboxes/$sid/files/mkdir" -d '{"path":"/home/user/m/a/b","parents":true,"mode":448}'
  kd_check '[ $status = 200 ]' "mkdir -p"
  api POST "/v1/sandboxes/$sid/files/mkdir" -d '{"path":"/home/user/m/a"}'
  kd_check '[ $status = 409 ] && [ "$(jget .error.code)" = exists ]' "mkdir of an existing directory is 409 exists"
  api POST "/v1/sandboxes/$sid/files/mkdir" -d '{"path":"/home/user/nope/x"}'
  kd_check '[ $status = 404 ] && [ "$(jget .error.code)" = not_found ]' "mkdir without parents is 404"
  api POST "/v1/sandboxes/$sid/files/mkdir" -d '{"path":"/root/forbidden"}'
  kd_check '[ $status = 403 ] && [ "$(jget .error.code)" = permission_denied ]' "mkdir in /root as user is 403"
  api GET "/v1/sandboxes/$sid/files/stat?path=/home/user/m/a/b"
  kd_check '[ $status = 200 ] && [ "$(jget "[.kind, .mode_octal, .uid] | words")" = "dir 0700 1000" ]' "stat of the new directory"
  api GET "/v1/sandboxes/$sid/files/stat?path=/home/user/m/none"
  kd_check '[ $status = 404 ] && [ "$(jget .error.code)" = not_found ]' "stat of a missing path is 404"
  api GET "/v1/sandboxes/$sid/files/stat?path=/bin/sh&follow=false"
  kd_check '[ "$(jget .kind)" = symlink ]' "stat follow=false shows the symlink"

  api PUT "/v1/sandboxes/$sid/files?path=/home/user/m/f.txt" --data-binary 'hello'
  api GET "/v1/sandboxes/$sid/files/list?path=/home/user/m&depth=3"
  kd_check '[ $status = 200 ] && [ "$(jget "([.entries[] | .path] | sort) | join(\",\")")" = /home/user/m/a,/home/user/m/a/b,/home/user/m/f.txt ] && [ "$(jget .count)" = 3 ]' "list depth 3"
  api GET "/v1/sandboxes/$sid/files/list?path=/home/user/m&limit=1&depth=3"
  kd_check '[ "$(jget "[(.entries | length), .truncated] | words")" = "1 true" ]' "list limit truncates"
  api GET "/v1/sandboxes/$sid/files/list?path=/home/user/m/f.txt"
  kd_check '[ $status = 400 ] && [ "$(jget .error.code)" = not_directory ]' "list of a file is 400 not_directory"

  api POST "/v1/sandboxes/$sid/files/rename" -d '{"from":"/home/user/m/f.txt","to":"/home/user/m/a/g.txt"}'
  kd_check '[ $status = 200 ]' "rename"
  api PUT "/v1/sandboxes/$sid/files?path=/home/user/m/f.txt" --data-binary 'again'
  api POST "/v1/sandboxes/$sid/files/rename" -d '{"from":"/home/user/m/f.txt","to":"/home/user/m/a/g.txt"}'
  kd_check '[ $status = 409 ] && [ "$(jget .error.code)" = exists ]' "rename onto an existing file is 409"
  api POST "/v1/sandboxes/$sid/files/rename" -d '{"from":"/home/user/m/f.txt","to":"/home/user/m/a/g.txt","overwrite":true}'
  kd_check '[ $status = 200 ]' "rename with overwrite"
  api GET "/v1/sandboxes/$sid/files?path=/home/user/m/a/g.txt"
  kd_check '[ "$body" = again ]' "the renamed file has the new contents"
  api POST "/v1/sandboxes/$sid/files/remove" -d '{"path":"/home/user/m"}'
  kd_check '[ $status = 409 ] && [ "$(jget .error.code)" = not_empty ]' "remove of a full directory is 409 not_empty"
  api POST "/v1/sandboxes/$sid/files/remove" -d '{"path":"/home/user/m","recursive":true}'
  kd_check '[ $status = 204 ]' "recursive remove"
  api GET "/v1/sandboxes/$sid/files/stat?path=/home/user/m"
  kd_check '[ $status = 404 ]' "removed tree is gone"

  # Archive round trip: a tree with nested dirs, a binary file, a symlink.
  mkdir -p "$kd/tree/src/deep/er" "$kd/back"
  head -c 1048577 /dev/urandom >"$kd/tree/src/blob.bin"
  printf 'int main(void) { return 0; }\n' >"$kd/tree/src/deep/er/main.c"
  : >"$kd/tree/empty"
  ln -s src/deep/er/main.c "$kd/tree/link"
  tar czf "$kd/tree.tgz" -C "$kd/tree" .
  api PUT "/v1/sandboxes/$sid/archive?path=/home/user/proj" -T "$kd/tree.tgz"
  kd_check '[ $status = 200 ] && [ "$(jget "[.files, .symlinks] | words")" = "3 1" ]' "archive upload counts"
  curl -sS --unix-socket "$kds" -o "$kd/back.tgz" "http://kiln/v1/sandboxes/$sid/archive?path=/home/user/proj"
  kd_check 'tar xzf "$kd/back.tgz" -C "$kd/back"' "the downloaded archive is a valid tar.gz"
  kd_check 'diff -r --no-dereference "$kd/tree" "$kd/back" >/dev/null' "archive round trip has equal contents"
  kd_check '[ "$(readlink "$kd/back/link")" = src/deep/er/main.c ]' "the symlink came back as a symlink"
  api GET "/v1/sandboxes/$sid/archive?path=/home/user/nope"
  kd_check '[ $status = 404 ]' "archive of a missing directory is 404"

  # Escapes: a ../ member and a symlink that leaves the target, and a
  # symlink member followed by a file written through it.
  python3 - "$kd" <<'PY'
import io, sys, tarfile
d = sys.argv[1]
def tgz(name, members):
    with tarfile.open(f"{d}/{name}", "w:gz", format=tarfile.USTAR_FORMAT) as t:
        for m, data in members:
            t.addfile(m, io.BytesIO(data) if data is not None else None)
def f(name, data):
    m = tarfile.TarInfo(name); m.size = len(data); return (m, data)
def l(name, target):
    m = tarfile.TarInfo(name); m.type = tarfile.SYMTYPE; m.linkname = target; return (m, None)
tgz("dotdot.tgz", [f("ok.txt", b"fine"), f("../escaped.txt", b"out")])
tgz("symesc.tgz", [l("up", "../../../etc"), f("up/passwd", b"x")])
tgz("abslink.tgz", [l("abs", "/etc")])
PY
  api PUT "/v1/sandboxes/$sid/archive?path=/home/user/esc" -T "$kd/dotdot.tgz"
  kd_check '[ $status = 400 ] && [ "$(jget .error.code)" = unsafe_path ]' "a ../ member is 400 unsafe_path"
  api GET "/v1/sandboxes/$sid/files/stat?path=/home/user/escaped.txt"
  kd_check '[ $status = 404 ]' "nothing was written outside the target"
  api PUT "/v1/sandboxes/$sid/archive?path=/home/user/esc2" -T "$kd/symesc.tgz"
  kd_check '[ $status = 400 ] && [ "$(jget .error.code)" = unsafe_path ]' "a symlink escape is 400 unsafe_path"
  api PUT "/v1/sandboxes/$sid/archive?path=/home/user/esc3" -T "$kd/abslink.tgz"
  kd_check '[ $status = 400 ] && [ "$(jget .error.code)" = unsafe_path ]' "an absolute symlink is 400 unsafe_path"
  api POST "/v1/sandboxes/$sid/exec" -d '{"argv":["cat","/etc/passwd"],"user":"root"}'
  kd_check '[ "$(jget "\"x\" != .stdout")" = true ]' "/etc/passwd is untouched"
  # Not gzip, and a gzip cut in the middle.
  api PUT "/v1/sandboxes/$sid/archive?path=/home/user/bad" --data-binary 'plain text'
  kd_check '[ $status = 400 ] && [ "$(jget .error.code)" = bad_archive ]' "a body that is not gzip is 400 bad_archive"
  n=$(stat -c %s "$kd/tree.tgz")
  head -c $((n / 2)) "$kd/tree.tgz" >"$kd/half.tgz"
  api PUT "/v1/sandboxes/$sid/archive?path=/home/user/half" -T "$kd/half.tgz"
  kd_check '[ $status = 400 ] && [ "$(jget .error.code)" = bad_archive ]' "a truncated tar.gz is 400 bad_archive"

  kd_watch_begin
  kd_watch_t1=$SECONDS
  api DELETE "/v1/sandboxes/$sid"
  kd_watch_end
  kd_done || return 1
  expect_rc 0
}
