/*
 * agent_env: what a process started by the agent gets (docs/agent-protocol.md,
 * section 8): its environment, its program path, its home and cwd.
 *
 * Pure: everything that looks at the filesystem comes in as a callback, so
 * the rules are unit-tested without a guest. It all runs in the agent
 * before fork(), because the child of a multithreaded process may not
 * allocate.
 */
#ifndef KILN_AGENT_ENV_H
#define KILN_AGENT_ENV_H

#include <stdbool.h>
#include <stddef.h>

#include "api/proto/agent_proto.h"

#define AGENT_TERM_DEFAULT "xterm-256color"

/* "user" or "root", its home, uid and gid. */
const char *agent_user_name(enum agent_user u);
const char *agent_user_home(enum agent_user u);
unsigned agent_user_uid(enum agent_user u);
unsigned agent_user_gid(enum agent_user u);

/*
 * The environment: PATH, HOME, USER, LOGNAME, SHELL (with trust, the
 * egress CA's SSL_CERT_FILE, REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE,
 * GIT_SSL_CAINFO and NODE_EXTRA_CA_CERTS; with a pty, TERM), then each
 * `env` entry replaces, adds or (null) removes a variable. *out is one
 * malloc'd block: a NULL-terminated array of "K=V" strings. 0 or -ENOMEM.
 */
int agent_env_build(const struct agent_proc_req *req, bool pty, bool trust, char ***out);

/* The value of `key` in envp, NULL when unset. */
const char *agent_env_get(char *const *envp, const char *key);

/*
 * Find the program like execvp(): a name with a '/' is used as it is;
 * otherwise each PATH entry is tried in order (an empty entry is the
 * current directory; relative entries are relative to `cwd`, where the
 * child will be), and the first candidate that is_exec() accepts wins.
 * 0 with the path in out, -ENOENT when none is, -ENAMETOOLONG when the
 * name does not fit.
 */
int agent_path_search(const char *name, const char *path_var, const char *cwd,
		      bool (*is_exec)(const char *path, void *ctx), void *ctx, char *out,
		      size_t outlen);

#endif
