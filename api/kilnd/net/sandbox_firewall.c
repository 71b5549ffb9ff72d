/*
 * A sandbox's network and firewall (docs/api.md, "Networking and
 * firewall"): the rule file <dir>/firewall.json that every boot, restore
 * and wake hands to kiln-vmm (--firewall), and GET/PUT .../firewall, which
 * read it and kiln-vmm's live counters and change it (at runtime through
 * the control socket's firewall-set). See sandbox.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/kilnd/core/firewall_spec.h"
#include "api/kilnd/net/sandbox_egress.h"
#include "api/kilnd/net/sandbox_trust.h"
#include "api/kilnd/registry/sandbox_impl.h"
#include "api/kilnd/supervision/egress_proxy.h"
#include "api/kilnd/supervision/vmm_control.h"
#include "api/kilnd/supervision/vmm_output.h"
#include "lib/base/file_replace.h"
#include "lib/base/json.h"
#include "lib/base/json_text.h"

/* A firewall-get answers at once unless the control socket is busy with a
 * snapshot; /metrics waits less for one sandbox. */
#define FW_METRICS_TIMEOUT_MS 1000

static int fw_path(const struct sandbox *sb, char *out, size_t cap)
{
	return sandbox_pathf(out, cap, "%s/firewall.json", sb->dir);
}

/* Write the canonical rules to <dir>/firewall.json (file_replace:
 * temporary file, fsync, rename, the directory's fsync). */
static int fw_write(struct sandbox *sb, const json_t *canon, struct api_err *e)
{
	char *s = json_text(canon, JSON_COMPACT);
	int err;

	if (!s) {
		api_err_set(e, API_E_INTERNAL, "sandbox %s: out of memory writing firewall.json",
			    sb->rec.id);
		return -1;
	}
	err = -file_replace(sb->dir, "firewall.json", s, strlen(s), 0600);
	free(s);
	if (err) {
		api_err_set(e, err == ENOSPC ? API_E_NO_SPACE : API_E_IO_ERROR,
			    "sandbox %s: cannot write %s/firewall.json: %s", sb->rec.id, sb->dir,
			    strerror(err));
		return -1;
	}
	return 0;
}

/* Read and re-validate <dir>/firewall.json. 0 with *canon, 1 when it does
 * not exist, -1 with e (unreadable, or not a valid rule set any more). */
static int fw_read(struct sandbox *sb, json_t **canon, struct api_err *e)
{
	char path[PATH_MAX];
	json_error_t je;
	json_t *j;
	int r;

	*canon = NULL;
	if (fw_path(sb, path, sizeof(path))) {
		api_err_set(e, API_E_INTERNAL, "sandbox %s: firewall.json path too long",
			    sb->rec.id);
		return -1;
	}
	j = json_strict_load_file(path, &je);
	if (!j) {
		if (access(path, F_OK) < 0 && errno == ENOENT)
			return 1;
		api_err_set(e, API_E_INTERNAL, "sandbox %s: %s: %s", sb->rec.id, path, je.text);
		return -1;
	}
	r = firewall_rules_canon(j, canon, e);
	json_decref(j);
	if (r) {
		char msg[ERR_MSG_MAX];

		snprintf(msg, sizeof(msg), "%s", e->msg);
		api_err_set(e, API_E_INTERNAL, "sandbox %s: %s: %s", sb->rec.id, path, msg);
		return -1;
	}
	return 0;
}

int sandbox_firewall_prepare(struct sandbox *sb, char *path, size_t cap, struct api_err *e)
{
	json_t *canon = NULL;
	int r;

	if (sb->rec.spec.network != SANDBOX_NET_PASST)
		return 0;
	if (fw_path(sb, path, cap)) {
		api_err_set(e, API_E_INTERNAL, "sandbox %s: firewall.json path too long",
			    sb->rec.id);
		return -1;
	}
	r = fw_read(sb, &canon, e);
	json_decref(canon);
	if (r <= 0)
		return r;
	/* The first boot (or a fork's): the create body's rules, or the default. */
	if (sb->rec.spec.firewall)
		canon = json_incref(sb->rec.spec.firewall);
	else if (firewall_rules_canon(NULL, &canon, e))
		return -1;
	r = fw_write(sb, canon, e);
	json_decref(canon);
	return r;
}

static int need_network(struct sandbox *sb, struct api_err *e)
{
	if (sb->rec.spec.network == SANDBOX_NET_PASST)
		return 0;
	api_err_set(e, API_E_WRONG_STATE,
		    "sandbox %s has no network (created with \"network\": \"none\"); create one with \"network\": \"passt\" for a firewall",
		    sb->rec.id);
	return -1;
}

/* The stored rules: firewall.json, else what the first boot will write. */
int sandbox_firewall_current(struct sandbox *sb, json_t **canon, struct api_err *e)
{
	int r = fw_read(sb, canon, e);

	if (r <= 0)
		return r;
	if (sb->rec.spec.firewall) {
		*canon = json_incref(sb->rec.spec.firewall);
		return 0;
	}
	return firewall_rules_canon(NULL, canon, e);
}

static bool has_vmm(enum sandbox_state s)
{
	return s == SANDBOX_RUNNING || s == SANDBOX_PAUSED;
}

/* A step on the running VMM failed: does it still run (*st its state
 * now)? Then the failure is the request's; a VMM that ended meanwhile
 * takes the saved rules at its next boot. */
static bool vmm_still_runs(struct sandbox *sb, enum sandbox_state *st)
{
	kilnd_lock(sb->d);
	*st = sb->rec.state;
	kilnd_unlock(sb->d);
	return has_vmm(*st);
}

int sandbox_firewall_get(struct sandbox *sb, json_t **out, struct api_err *e)
{
	json_t *rules = NULL, *live = NULL;
	enum sandbox_state st;
	struct api_err ce;

	*out = NULL;
	if (need_network(sb, e) || sandbox_firewall_current(sb, &rules, e))
		return -1;
	kilnd_lock(sb->d);
	st = sb->rec.state;
	kilnd_unlock(sb->d);
	if (has_vmm(st) &&
	    vmm_control_firewall(sb->control, NULL, VMM_CONTROL_TIMEOUT_MS, NULL, &live, &ce))
		kilnd_log("sandbox %s: firewall-get: %s", sb->rec.id,
			  ce.msg); /* the VM ended meanwhile */
	*out = firewall_view(SANDBOX_NET_PASST, rules, live);
	json_decref(rules);
	json_decref(live);
	if (!*out) {
		api_err_set(e, API_E_INTERNAL, "out of memory rendering the firewall");
		return -1;
	}
	return 0;
}

int sandbox_firewall_set(struct sandbox *sb, const json_t *body, json_t **out, struct api_err *e)
{
	struct kilnd *d = sb->d;
	json_t *canon = NULL;
	enum sandbox_state st;
	bool applied = false;
	size_t cut = 0;
	char *line = NULL, cg[PATH_MAX];
	int r = -1;

	*out = NULL;
	if (need_network(sb, e) || firewall_rules_canon(body, &canon, e))
		return -1;
	line = firewall_rules_line(canon, e);
	if (!line)
		goto done;
	if (sandbox_lock_unbusy(sb, e))
		goto done;
	st = sb->rec.state;
	if (st == SANDBOX_BOOTING || st == SANDBOX_STOPPING || st == SANDBOX_DELETING ||
	    st == SANDBOX_HIBERNATING) {
		api_err_set(e, API_E_WRONG_STATE,
			    "sandbox %s is %s; change its firewall once that is over", sb->rec.id,
			    sandbox_state_name(st));
		kilnd_unlock(d);
		goto done;
	}
	/* Other lifecycle requests (a boot that would read the file) wait. */
	sb->busy_op = "firewall";
	snprintf(cg, sizeof(cg), "%s", sb->rec.cgroup);
	kilnd_unlock(d);
	r = fw_write(sb, canon, e);
	if (!r && has_vmm(st)) {
		struct api_err ge;

		/* Outside the VMM first. On failure the old table, and maybe part
		 * of the new one, still hold: never less than the new rules deny.
		 * A VMM that ended meanwhile took its cgroup along: the next boot
		 * attaches the file's. */
		if (sandbox_egress_apply(sb, cg, canon, &ge) && vmm_still_runs(sb, &st)) {
			api_err_set(e, API_E_INTERNAL,
				    "%s (the rules are saved and apply at the next boot)", ge.msg);
			r = -1;
		}
	}
	if (!r && has_vmm(st)) {
		struct api_err ce;

		if (vmm_control_firewall(sb->control, line, VMM_CONTROL_TIMEOUT_MS, &cut, NULL,
					 &ce) == 0) {
			applied = true;
		} else if (vmm_still_runs(sb, &st)) {
			api_err_set(e, ce.code,
				    "%s (the rules are saved and apply at the next boot)", ce.msg);
			r = -1;
		}
	}
	/* The egress proxy follows: started for new http entries, told of
	 * changed ones, stopped when none is left. */
	if (!r && has_vmm(st)) {
		struct api_err pe;

		if (egress_proxy_sync(sb, canon, &pe)) {
			if (vmm_still_runs(sb, &st)) {
				api_err_set(e, pe.code,
					    "%s (the rules are saved; steered flows are refused until the proxy runs)",
					    pe.msg);
				r = -1;
			}
		} else if (json_array_size(json_object_get(canon, "http")) &&
			   sandbox_trust_push(sb, &pe)) {
			/* The rules stand; TLS the proxy decrypts fails in the
			 * guest until it trusts the CA (at the latest its next boot). */
			kilnd_log("sandbox %s: %s", sb->rec.id, pe.msg);
		}
	}
	kilnd_lock(d);
	sb->busy_op = NULL;
	pthread_cond_broadcast(&sb->cv);
	kilnd_unlock(d);
	if (r)
		goto done;
	SANDBOX_METRIC(d, firewall_updates);
	kilnd_log("sandbox %s: firewall rules replaced%s (%zu flows cut)", sb->rec.id,
		  applied ? " at runtime" : " for the next boot", cut);
	*out = json_pack("{s:s, s:O, s:b, s:o}", "network", "passt", "rules", canon, "applied",
			 applied, "cut", applied ? json_integer((json_int_t)cut) : json_null());
	if (!*out) {
		api_err_set(e, API_E_INTERNAL, "out of memory rendering the firewall");
		r = -1;
	}
done:
	free(line);
	json_decref(canon);
	return r;
}

void sandboxes_firewall_totals(struct kilnd *d, struct fw_totals *t, unsigned *filtered)
{
	char(*socks)[KILND_SOCKET_MAX] = NULL;
	size_t n = 0;

	memset(t, 0, sizeof(*t));
	*filtered = 0;
	kilnd_lock(d);
	if (d->reg.n)
		socks = calloc(d->reg.n, sizeof(*socks));
	for (size_t i = 0; socks && i < d->reg.n; i++) {
		struct sandbox *sb = d->reg.v[i];

		/* Skip one busy with a snapshot: its control socket answers late.
		 * No reference is taken (a scrape is not activity for the idle
		 * timeout): a socket gone meanwhile is just not counted. */
		if (sb->rec.spec.network == SANDBOX_NET_PASST && has_vmm(sb->rec.state) &&
		    !sb->busy_op)
			memcpy(socks[n++], sb->control, sizeof(socks[0]));
	}
	kilnd_unlock(d);
	for (size_t i = 0; i < n; i++) {
		json_t *live = NULL;
		struct api_err ce;

		if (vmm_control_firewall(socks[i], NULL, FW_METRICS_TIMEOUT_MS, NULL, &live, &ce) ==
		    0) {
			firewall_totals_add(live, t);
			(*filtered)++;
		}
		json_decref(live);
	}
	free(socks);
}

/* The tail of vmm.log read for the denied-flow log, and the lines kept. */
#define FIREWALL_LOG_READ (256 * 1024)
#define FIREWALL_LOG_LINES 200

int sandbox_log_tail(const struct sandbox *sb, const char *name, size_t max, uint8_t **buf,
		     size_t *got, bool *whole)
{
	char path[PATH_MAX + 64];
	struct stat st;
	off_t from = 0;
	int fd;

	*buf = NULL;
	*got = 0;
	*whole = true;
	snprintf(path, sizeof(path), "%s/%s", sb->dir, name);
	/* No symlink followed, no fifo waited on: a regular file or nothing. */
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
		from = st.st_size > (off_t)max ? st.st_size - (off_t)max : 0;
		*buf = malloc(max);
		while (*buf && *got < max) {
			ssize_t k = pread(fd, *buf + *got, max - *got, from + (off_t)*got);

			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0)
				break;
			*got += (size_t)k;
		}
	}
	if (fd >= 0)
		close(fd);
	*whole = from == 0;
	return *buf || fd < 0 ? 0 : -1;
}

int sandbox_firewall_log(struct sandbox *sb, json_t **out, struct api_err *e)
{
	uint8_t *buf;
	json_t *lines;
	size_t got;
	bool whole;

	*out = NULL;
	if (need_network(sb, e))
		return -1;
	sandbox_log_tail(sb, "vmm.log", FIREWALL_LOG_READ, &buf, &got, &whole);
	/* No file yet (never booted): no lines. */
	lines = vmm_output_tail_prefixed(buf ? buf : (const uint8_t *)"", got, whole,
					 "kiln-vmm: firewall: ", FIREWALL_LOG_LINES, 512);
	free(buf);
	*out = lines ? json_pack("{s:o}", "lines", lines) : NULL;
	if (!*out) {
		api_err_set(e, API_E_INTERNAL, "out of memory reading the firewall log");
		return -1;
	}
	return 0;
}
