/*
 * rt_hooks: the bundle's hooks, run on the host as the runtime-spec says
 * (config.md "POSIX-platform Hooks"): prestart and createRuntime during
 * create (a failure fails create), poststart after start and poststop
 * after delete (a failure is a warning). Docker's libnetwork-setkey is a
 * prestart hook that opens /proc/<state.pid>/ns/net: the state's pid is
 * the shim's, which holds the container's network namespace.
 *
 * Contract: one hook at a time, in order, each: `path` executed with
 * `args` (args[0] is its argv[0]; none: the path) and exactly `env`,
 * the state JSON on its stdin (a socket, so a hook that does not read it
 * cannot raise SIGPIPE in the runtime), its stdout and stderr captured
 * (the first RT_HOOK_OUTPUT_MAX bytes, for the message), in a process
 * group of its own with no descriptor but 0-2, every signal at its
 * default, in the network namespace netns when that is not -1 (the
 * runtime's own, when the shim has left it for the container's: the spec
 * runs hooks in the runtime's namespace). `timeout` (seconds) kills the group. Failures are -errno
 * with e: `hooks.prestart[0] /usr/bin/x: exited with status 3: <its
 * output>`, `... timed out after 5 s`, `... cannot be executed: ...`.
 */
#ifndef KILN_RT_HOOKS_H
#define KILN_RT_HOOKS_H

#include "api/runtime/rt_config.h"
#include "lib/base/err.h"

#define RT_HOOK_OUTPUT_MAX 512

/* One hook; `where` names it in messages ("hooks.prestart[0]"). */
int rt_hook_run(const struct rt_hook *h, const char *where, const char *state_json, int netns,
		struct err *e);

/* Every hook of l in order until one fails; kind names the list. */
int rt_hooks_run(const struct rt_hook_list *l, const char *kind, const char *state_json, int netns,
		 struct err *e);

#endif
