/* One kiln-egress per sandbox with http rules; see egress_proxy.h. */
#include "api/kilnd/supervision/egress_proxy.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "api/kilnd/registry/sandbox_impl.h"
#include "api/kilnd/registry/secrets.h"
#include "api/kilnd/supervision/sandbox_jail.h"
#include "api/kilnd/supervision/egress_proxy_log.h"
#include "api/kilnd/supervision/egress_proxy_plan.h"
#include "api/kilnd/supervision/egress_proxy_run.h"
#include "lib/base/fd_io.h"
#include "lib/base/file_replace.h"
#include "lib/base/json_text.h"
#include "lib/netrules/http_rules.h"
#include "lib/netrules/net_rules.h"

void egress_proxy_secrets_changed(struct kilnd *d, const char *id)
{
	struct sandbox *sb;
	struct api_err e;

	if (!egress_run_has(d, id))
		return;
	sb = sandbox_find_ref(d, id);
	if (!sb)
		return;
	/* Its files written afresh and the proxy told; none running: the next start writes them. */
	if (egress_proxy_sync(sb, NULL, &e))
		kilnd_log("%s; its proxy keeps the secrets it had", e.msg);
	sandbox_put(sb);
}

void egress_proxy_end(struct sandbox *sb)
{
	if (egress_run_end(sb->d, sb->rec.id))
		kilnd_log("sandbox %s: egress proxy stopped", sb->rec.id);
}

/* Whether canon (a canonical rule set) has http entries. -1 with e: unreadable. */
static int rules_have_http(struct sandbox *sb, const json_t *canon, struct api_err *e)
{
	struct net_rules *r = NULL;
	struct net_rules_err re;
	int has;

	if (net_rules_parse(canon, &r, &re)) {
		api_err_set(e, API_E_INTERNAL, "sandbox %s: egress proxy: %s", sb->rec.id, re.msg);
		return -1;
	}
	has = r->http && r->http->n > 0;
	net_rules_free(r);
	return has;
}

/* The proxy's uid: meta.json's, else derived from the jail id and kept. 0: unjailed. */
static uint32_t proxy_uid(struct sandbox *sb)
{
	struct kilnd *d = sb->d;
	uint32_t id;

	kilnd_lock(d);
	if (!sb->rec.egress_id && sb->rec.jail_id) {
		sb->rec.egress_id = egress_id_of(sb->rec.jail_id, d->cfg.jail_id_first,
						 d->cfg.jail_id_count, d->cfg.egress_id_first);
		sandbox_persist_locked(sb);
	}
	id = sb->rec.jail_id ? sb->rec.egress_id : 0;
	kilnd_unlock(d);
	return id;
}

/* Write name (0600, the proxy's) into egress/ from text. 0 or -1 with e. */
static int put_file(struct sandbox *sb, int dfd, const char *name, const char *text, uint32_t uid,
		    struct api_err *e)
{
	uid_t u = uid ? uid : (uid_t)-1;
	int r = file_replace_owned_at(dfd, name, text, strlen(text), 0600, u, u);

	if (r) {
		api_err_set(e, r == -ENOSPC ? API_E_NO_SPACE : API_E_IO_ERROR,
			    "sandbox %s: egress proxy: cannot write %s/egress/%s: %s", sb->rec.id,
			    sb->dir, name, strerror(-r));
		return -1;
	}
	return 0;
}

/* --egress-upstream-ca's certificates, at most this much. */
#define UPSTREAM_CA_MAX (1024 * 1024)

/*
 * What the proxy resolves and trusts as kilnd was told: resolv.conf
 * naming --dns-resolver (bound on /etc/resolv.conf in the proxy's mount
 * namespace, so the proxy asks the server the guest's DNS goes to) and
 * upstream-ca.pem, a copy of --egress-upstream-ca (read as root; the
 * proxy reads only its own copy). 0 or -1 with e.
 */
static int write_upstream(struct sandbox *sb, int dfd, uint32_t uid, struct api_err *e)
{
	const struct kilnd_config *c = &sb->d->cfg;
	char line[64], *pem;
	ssize_t n;
	int fd, r;

	if (c->dns_resolver[0]) {
		snprintf(line, sizeof(line), "nameserver %s\n", c->dns_resolver);
		if (put_file(sb, dfd, EGRESS_RESOLV_CONF, line, uid, e))
			return -1;
	}
	if (!c->egress_upstream_ca[0])
		return 0;
	if (!(pem = malloc(UPSTREAM_CA_MAX + 1))) {
		api_err_set(e, API_E_INTERNAL, "sandbox %s: egress proxy: out of memory",
			    sb->rec.id);
		return -1;
	}
	fd = open(c->egress_upstream_ca, O_RDONLY | O_CLOEXEC);
	n = fd < 0 ? -errno : fd_io_read_full(fd, pem, UPSTREAM_CA_MAX + 1);
	if (fd >= 0)
		close(fd);
	if (n < 0 || n > UPSTREAM_CA_MAX) {
		api_err_set(e, API_E_SPAWN_FAILED,
			    "sandbox %s: egress proxy: --egress-upstream-ca %s: %s", sb->rec.id,
			    c->egress_upstream_ca, n < 0 ? strerror((int)-n) : "larger than 1 MiB");
		free(pem);
		return -1;
	}
	pem[n] = '\0';
	r = put_file(sb, dfd, EGRESS_UPSTREAM_CA, pem, uid, e);
	free(pem);
	return r;
}

/*
 * egress/ (made if absent, the proxy's, 0700) with rules.json from canon
 * and secrets.json: the values of the owner's secrets its http rules
 * name (secrets_sandbox_file), rewritten each time. 0 or -1 with e.
 */
static int write_files(struct sandbox *sb, const json_t *canon, uint32_t uid, struct api_err *e)
{
	char edir[PATH_MAX + 16], *rules = NULL;
	uid_t u = uid ? uid : (uid_t)-1;
	struct net_rules *nr = NULL;
	struct net_rules_err re;
	size_t missing = 0;
	struct err se;
	int dfd, r = -1;

	snprintf(edir, sizeof(edir), "%s/egress", sb->dir);
	if (mkdir(edir, 0700) < 0 && errno != EEXIST) {
		api_err_set(e, API_E_IO_ERROR, "sandbox %s: egress proxy: mkdir %s: %s", sb->rec.id,
			    edir, strerror(errno));
		return -1;
	}
	/* In root's sandbox directory: nobody else can have swapped it. */
	dfd = open(edir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0 || (uid && fchown(dfd, uid, uid) < 0) || fchmod(dfd, 0700) < 0) {
		api_err_set(e, API_E_IO_ERROR, "sandbox %s: egress proxy: %s: %s", sb->rec.id, edir,
			    strerror(errno));
		goto out;
	}
	rules = json_text(canon, JSON_COMPACT);
	if (!rules) {
		api_err_set(e, API_E_INTERNAL, "sandbox %s: egress proxy: out of memory",
			    sb->rec.id);
		goto out;
	}
	if (net_rules_parse(canon, &nr, &re)) {
		api_err_set(e, API_E_INTERNAL, "sandbox %s: egress proxy: %s", sb->rec.id, re.msg);
		goto out;
	}
	if (put_file(sb, dfd, "rules.json", rules, uid, e) || write_upstream(sb, dfd, uid, e))
		goto out;
	if (secrets_sandbox_file(sb->d, sb->rec.owner_uid, nr->http, dfd, "secrets.json", u, u,
				 &missing, &se)) {
		api_err_set(e, API_E_IO_ERROR, "sandbox %s: egress proxy: %s", sb->rec.id, se.msg);
		goto out;
	}
	if (missing)
		kilnd_log("sandbox %s: egress proxy: %zu secret(s) its http rules name are not set (PUT /v1/secrets/NAME as the sandbox's owner, uid %u); requests that need them are refused",
			  sb->rec.id, missing, (unsigned)sb->rec.owner_uid);
	r = 0;
out:
	net_rules_free(nr);
	free(rules);
	if (dfd >= 0)
		close(dfd);
	return r;
}

/* Its socket bound and the runner asked to start it, waited for. 0 or -1 with e (nothing left). */
static int add_and_start(struct sandbox *sb, uint32_t uid, struct api_err *e)
{
	struct egress_run_spec spec = { .id = sb->rec.id, .dir = sb->dir, .uid = uid };
	char sock[KILND_SOCKET_MAX], why[ERR_MSG_MAX];

	if (sandbox_pathf(sock, sizeof(sock), "%s/vm/egress.sock", sb->dir)) {
		api_err_set(e, API_E_SPAWN_FAILED,
			    "sandbox %s: egress proxy: the socket path is too long (a shorter --state-dir)",
			    sb->rec.id);
		return -1;
	}
	spec.sock = sock;
	spec.listen_fd = sandbox_jail_listen(sb, sock, "egress proxy", e);
	if (spec.listen_fd < 0)
		return -1;
	if (egress_run_start(sb->d, &spec, why, sizeof(why))) {
		api_err_set(e, API_E_SPAWN_FAILED, "sandbox %s: egress proxy: %s", sb->rec.id, why);
		return -1;
	}
	return 0;
}

/* Bring sb's proxy in line with canon. 0 or -1 with e. */
static int sync_to(struct sandbox *sb, const json_t *canon, struct api_err *e)
{
	struct egress_proxies *px = sb->d->egress_proxies;
	uint32_t uid;
	int has = sb->rec.spec.network == SANDBOX_NET_PASST ? rules_have_http(sb, canon, e) : 0;

	if (has < 0)
		return -1;
	if (!has || !px) {
		egress_proxy_end(sb);
		if (has && !px) {
			api_err_set(e, API_E_INTERNAL, "sandbox %s: egress proxy: not set up",
				    sb->rec.id);
			return -1;
		}
		return 0;
	}
	uid = proxy_uid(sb);
	if (sb->rec.jail_id && !uid) {
		api_err_set(e, API_E_SPAWN_FAILED,
			    "sandbox %s: egress proxy: jail id %u is outside --jail-ids now; no proxy uid for it (restart kilnd with its earlier --jail-ids)",
			    sb->rec.id, sb->rec.jail_id);
		return -1;
	}
	if (write_files(sb, canon, uid, e))
		return -1;
	/* Running: SIGHUP (interface 2) reads rules.json and secrets.json
	 * again (kiln-egress handles it, so as pid 1 of its namespace it gets it). */
	if (egress_run_signal(sb->d, sb->rec.id, SIGHUP))
		return 0;
	return add_and_start(sb, uid, e);
}

int egress_proxy_sync(struct sandbox *sb, const json_t *canon, struct api_err *e)
{
	json_t *stored = NULL;
	int r;

	if (!canon && sandbox_firewall_current(sb, &stored, e))
		return -1;
	r = sync_to(sb, canon ? canon : stored, e);
	json_decref(stored);
	return r;
}

int egress_proxy_boot(struct sandbox *sb, char *sock, size_t cap, struct api_err *e)
{
	sock[0] = '\0';
	if (sb->rec.spec.network != SANDBOX_NET_PASST) {
		egress_proxy_end(sb);
		return 0;
	}
	if (egress_proxy_sync(sb, NULL, e))
		return -1;
	/* Every passt sandbox's VMM is told where its proxy listens, running
	 * or not: a PUT that adds the first http rule to a running sandbox
	 * starts the proxy there, and the VMM steers at once. */
	if (sandbox_pathf(sock, cap, "%s/vm/egress.sock", sb->dir)) {
		api_err_set(e, API_E_SPAWN_FAILED, "sandbox %s: egress proxy: socket path too long",
			    sb->rec.id);
		return -1;
	}
	return 0;
}

/* The tail of egress.log read for the API. */
#define EGRESS_LOG_READ (512 * 1024)

int egress_proxy_log(struct sandbox *sb, size_t lines, json_t **out, struct api_err *e)
{
	json_t *canon = NULL, *arr;
	uint8_t *buf = NULL;
	size_t got = 0;
	bool whole;
	int has;

	*out = NULL;
	if (sb->rec.spec.network != SANDBOX_NET_PASST) {
		api_err_set(e, API_E_WRONG_STATE,
			    "sandbox %s has no network (created with \"network\": \"none\"), so no egress proxy",
			    sb->rec.id);
		return -1;
	}
	if (sandbox_firewall_current(sb, &canon, e))
		return -1;
	has = rules_have_http(sb, canon, e);
	json_decref(canon);
	if (has <= 0) {
		if (has == 0)
			api_err_set(e, API_E_WRONG_STATE,
				    "sandbox %s has no http rules, so no egress proxy; add some with PUT /v1/sandboxes/%s/firewall",
				    sb->rec.id, sb->rec.id);
		return -1;
	}
	/* The proxy's pipe feeds it through kilnd, but it is read as hostile. */
	sandbox_log_tail(sb, "egress.log", EGRESS_LOG_READ, &buf, &got, &whole);
	arr = egress_log_tail(buf ? buf : (const uint8_t *)"", got, whole, lines);
	free(buf);
	*out = arr ? json_pack("{s:o}", "lines", arr) : NULL;
	if (!*out) {
		api_err_set(e, API_E_INTERNAL, "out of memory reading the egress log");
		return -1;
	}
	return 0;
}
