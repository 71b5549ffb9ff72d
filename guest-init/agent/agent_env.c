#include "guest-init/agent/agent_env.h"
#include "guest-init/sys/trust_ca.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *agent_user_name(enum agent_user u)
{
	return u == AGENT_USER_ROOT ? "root" : "user";
}

const char *agent_user_home(enum agent_user u)
{
	return u == AGENT_USER_ROOT ? AGENT_ROOT_HOME : AGENT_USER_HOME;
}

unsigned agent_user_uid(enum agent_user u)
{
	return u == AGENT_USER_ROOT ? 0 : AGENT_USER_UID;
}

unsigned agent_user_gid(enum agent_user u)
{
	return u == AGENT_USER_ROOT ? 0 : AGENT_USER_GID;
}

struct kv {
	const char *key, *value;
};

#define TRUST_ENV_N 5

/* The base variables; TERM last so that `env` can still override it. */
#define BASE_MAX (6 + TRUST_ENV_N)

/*
 * With the egress CA installed (trust_ca.h): where each TLS stack that
 * does not read the system bundle, or reads it from a path a read-only
 * root could not change, finds a bundle that holds it. OpenSSL (so
 * Python's ssl, Ruby, curl built on it) and Go read SSL_CERT_FILE;
 * Python requests and pip read REQUESTS_CA_BUNDLE (pip also CURL_CA_BUNDLE
 * and its own PIP_CERT, left to the user); the curl tool CURL_CA_BUNDLE;
 * git GIT_SSL_CAINFO (Debian's git is built on GnuTLS, which reads none
 * of the others); Node adds NODE_EXTRA_CA_CERTS to its own list.
 */
static const struct kv trust_env[] = {
	{ "SSL_CERT_FILE", TRUST_BUNDLE_FILE },   { "REQUESTS_CA_BUNDLE", TRUST_BUNDLE_FILE },
	{ "CURL_CA_BUNDLE", TRUST_BUNDLE_FILE },  { "GIT_SSL_CAINFO", TRUST_BUNDLE_FILE },
	{ "NODE_EXTRA_CA_CERTS", TRUST_CA_FILE },
};

int agent_env_build(const struct agent_proc_req *req, bool pty, bool trust, char ***out)
{
	struct kv *v;
	size_t n = 0, bytes = 0, i, j;
	char **envp, *p;

	*out = NULL;
	v = calloc(BASE_MAX + req->envc, sizeof(*v));
	if (!v)
		return -ENOMEM;
	v[n++] = (struct kv){ "PATH", AGENT_DEFAULT_PATH };
	/* Confined, the home directory is not visible: the workspace is home. */
	v[n++] = (struct kv){ "HOME", req->confine ? AGENT_WORKSPACE : agent_user_home(req->user) };
	v[n++] = (struct kv){ "USER", agent_user_name(req->user) };
	v[n++] = (struct kv){ "LOGNAME", agent_user_name(req->user) };
	v[n++] = (struct kv){ "SHELL", "/bin/sh" };
	for (i = 0; trust && i < TRUST_ENV_N; i++)
		v[n++] = trust_env[i];
	if (pty)
		v[n++] = (struct kv){ "TERM", AGENT_TERM_DEFAULT };
	for (i = 0; i < req->envc; i++) {
		const struct agent_env *e = &req->env[i];

		for (j = 0; j < n && strcmp(v[j].key, e->key) != 0; j++)
			;
		if (j < n && !e->value) {
			memmove(&v[j], &v[j + 1], (n - j - 1) * sizeof(*v));
			n--;
		} else if (j < n) {
			v[j].value = e->value;
		} else if (e->value) {
			v[n++] = (struct kv){ e->key, e->value };
		}
	}
	for (i = 0; i < n; i++)
		bytes += strlen(v[i].key) + 1 + strlen(v[i].value) + 1;
	envp = malloc((n + 1) * sizeof(*envp) + bytes);
	if (!envp) {
		free(v);
		return -ENOMEM;
	}
	p = (char *)(envp + n + 1);
	for (i = 0; i < n; i++) {
		size_t kl = strlen(v[i].key), vl = strlen(v[i].value);

		envp[i] = p;
		memcpy(p, v[i].key, kl);
		p[kl] = '=';
		memcpy(p + kl + 1, v[i].value, vl + 1);
		p += kl + vl + 2;
	}
	envp[n] = NULL;
	free(v);
	*out = envp;
	return 0;
}

const char *agent_env_get(char *const *envp, const char *key)
{
	size_t kl = strlen(key);

	for (; *envp; envp++)
		if (strncmp(*envp, key, kl) == 0 && (*envp)[kl] == '=')
			return *envp + kl + 1;
	return NULL;
}

int agent_path_search(const char *name, const char *path_var, const char *cwd,
		      bool (*is_exec)(const char *path, void *ctx), void *ctx, char *out,
		      size_t outlen)
{
	const char *dir = path_var, *end;
	int n;

	if (strchr(name, '/')) {
		n = snprintf(out, outlen, "%s", name);
		return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
	}
	if (!path_var)
		path_var = dir = AGENT_DEFAULT_PATH;
	for (;; dir = end + 1) {
		size_t dl;

		end = strchr(dir, ':');
		if (!end)
			end = dir + strlen(dir);
		dl = (size_t)(end - dir);
		if (dl == 0)
			n = snprintf(out, outlen, "%s/%s", cwd, name);
		else if (dir[0] == '/')
			n = snprintf(out, outlen, "%.*s/%s", (int)dl, dir, name);
		else
			n = snprintf(out, outlen, "%s/%.*s/%s", cwd, (int)dl, dir, name);
		/* A candidate that does not fit cannot be the program. */
		if (n > 0 && (size_t)n < outlen && is_exec(out, ctx))
			return 0;
		if (!*end)
			break;
	}
	out[0] = '\0';
	return -ENOENT;
}
