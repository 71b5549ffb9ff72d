/* kilnd's store of named secrets; see secrets.h. */
#include "api/kilnd/registry/secrets.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/kilnd/registry/sandbox.h"
#include "api/kilnd/registry/sandbox_impl.h"
#include "api/kilnd/supervision/egress_proxy.h"
#include "lib/base/fd_io.h"
#include "lib/base/file_replace.h"

struct kilnd_secrets {
	pthread_mutex_t mu;
	struct secret_store s;
};

/* The file's bytes (malloc'd, *len), after the checks that say kilnd may
 * trust it; NULL with *len 0 and no fault when there is none. */
static char *file_read(const char *path, size_t *len, struct err *e)
{
	/* O_NONBLOCK: a fifo planted there must not hold kilnd's start (fstat refuses it) */
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	char *buf = NULL;
	ssize_t got;

	*len = 0;
	if (fd < 0 && errno == ENOENT)
		return NULL;
	if (fd < 0)
		return err_set(e, errno, "%s: %s (kilnd keeps its secrets there: fix or move it)",
			       path, errno == ELOOP ? "a symbolic link" : strerror(errno)),
		       NULL;
	if (fstat(fd, &st) < 0)
		err_set(e, errno, "%s: %s", path, strerror(errno));
	else if (!S_ISREG(st.st_mode))
		err_set(e, EINVAL, "%s: not a regular file (move it aside)", path);
	else if (st.st_uid != geteuid())
		err_set(e, EPERM,
			"%s: owned by uid %u, not kilnd's (%u): chown it, or move it aside", path,
			(unsigned)st.st_uid, (unsigned)geteuid());
	else if (st.st_mode & 077)
		err_set(e, EPERM,
			"%s: mode %04o lets others read it: `chmod 600` it, and rotate the secrets it holds (they may have been read)",
			path, (unsigned)(st.st_mode & 07777));
	else if (st.st_size > SECRETS_FILE_MAX)
		err_set(e, EFBIG, "%s: %lld bytes, more than %d (not kilnd's file?)", path,
			(long long)st.st_size, SECRETS_FILE_MAX);
	else if (!(buf = malloc((size_t)st.st_size + 1)))
		err_set(e, ENOMEM, "%s: out of memory", path);
	else if ((got = fd_io_read_full(fd, buf, (size_t)st.st_size)) != st.st_size) {
		err_set(e, EIO, "%s: %s", path,
			got < 0 ? strerror((int)-got) : "changed while read");
		explicit_bzero(buf, (size_t)st.st_size);
		free(buf);
		buf = NULL;
	} else {
		*len = (size_t)st.st_size;
	}
	close(fd);
	if (!buf && !e->msg[0])
		err_set(e, EIO, "%s: unreadable", path);
	return buf ? buf : (*len = 0, NULL);
}

int secrets_init(struct kilnd *d, struct err *e)
{
	char path[PATH_MAX + 32];
	struct kilnd_secrets *k = calloc(1, sizeof(*k));
	struct err fe = { "" };
	size_t len;
	char *text;
	int r = 0;

	if (!k)
		return err_set(e, ENOMEM, "secrets: out of memory"), -1;
	pthread_mutex_init(&k->mu, NULL);
	snprintf(path, sizeof(path), "%s/%s", d->cfg.state_dir, SECRETS_FILE);
	text = file_read(path, &len, &fe);
	if (fe.msg[0]) {
		r = -1;
		err_set(e, EINVAL, "%s", fe.msg);
	} else if (text && secret_file_parse(text, len, &k->s, &fe)) {
		r = -1;
		err_set(e, EINVAL,
			"%s: %s (kilnd keeps it as it is: fix it, or move it aside to start without secrets)",
			path, fe.msg);
	}
	if (text) {
		explicit_bzero(text, len);
		free(text);
	}
	if (r) {
		pthread_mutex_destroy(&k->mu);
		free(k);
		return -1;
	}
	d->secrets = k;
	return 0;
}

void secrets_fini(struct kilnd *d)
{
	if (!d->secrets)
		return;
	secret_store_free(&d->secrets->s);
	pthread_mutex_destroy(&d->secrets->mu);
	free(d->secrets);
	d->secrets = NULL;
}

/* The store to its file (under mu). 0, or -1 with e. */
static int store_save(struct kilnd *d, struct api_err *e)
{
	size_t len = 0;
	char *text = secret_file_render(&d->secrets->s, &len);
	int r;

	if (!text)
		return api_err_set(e, API_E_INTERNAL, "secrets: out of memory writing them"), -1;
	r = file_replace(d->cfg.state_dir, SECRETS_FILE, text, len, 0600);
	explicit_bzero(text, len);
	free(text);
	if (r) {
		api_err_set(e, r == -ENOSPC ? API_E_NO_SPACE : API_E_IO_ERROR,
			    "secrets: writing %s/%s: %s (nothing changed)", d->cfg.state_dir,
			    SECRETS_FILE, strerror(-r));
		return -1;
	}
	return 0;
}

static int view_of(const struct secret *x, json_t **view, struct api_err *e)
{
	if (!(*view = secret_view(x)))
		return api_err_set(e, API_E_INTERNAL,
				   "secrets: out of memory rendering the answer"),
		       -1;
	return 0;
}

/* A copy of old to put back when the file cannot be written (keep_wipe it). */
static int keep_copy(const struct secret *old, struct secret *keep, struct api_err *e)
{
	*keep = *old;
	if (!(keep->value = strdup(old->value)))
		return api_err_set(e, API_E_INTERNAL, "secrets: out of memory"), -1;
	return 0;
}

static void keep_wipe(struct secret *keep)
{
	if (keep->value) {
		explicit_bzero(keep->value, keep->len);
		free(keep->value);
	}
}

int secrets_put(struct kilnd *d, uid_t owner, const char *name, const char *value, size_t len,
		bool *created, json_t **view, struct api_err *e)
{
	struct secret_store *s = &d->secrets->s;
	const struct secret *old;
	struct secret keep = { 0 };
	struct api_err ignore;
	int r = 0;

	*view = NULL;
	if (secret_name_check(name, e) || secret_value_check(value, len, e))
		return -1;
	pthread_mutex_lock(&d->secrets->mu);
	if ((old = secret_store_find(s, owner, name)))
		r = keep_copy(old, &keep, e);
	if (r == 0)
		r = secret_store_set(s, owner, name, value, len, wall_ms(), created, e);
	if (r == 0 && store_save(d, e)) {
		r = -1;
		if (*created)
			secret_store_delete(s, owner, name, &ignore);
		else
			secret_store_restore(s, &keep, &ignore);
	}
	if (r == 0)
		r = view_of(secret_store_find(s, owner, name), view, e);
	pthread_mutex_unlock(&d->secrets->mu);
	keep_wipe(&keep);
	if (r == 0)
		secrets_changed(d, owner, name);
	return r;
}

int secrets_remove(struct kilnd *d, uid_t owner, const char *name, struct api_err *e)
{
	struct secret_store *s = &d->secrets->s;
	const struct secret *old;
	struct secret keep = { 0 };
	struct api_err ignore;
	int r = -1;

	if (secret_name_check(name, e))
		return -1;
	pthread_mutex_lock(&d->secrets->mu);
	if (!(old = secret_store_find(s, owner, name)))
		api_err_set(e, API_E_NOT_FOUND, "no secret '%s' (GET /v1/secrets lists them)",
			    name);
	else if (keep_copy(old, &keep, e) == 0)
		r = secret_store_delete(s, owner, name, e);
	/* back at the end of the list when the file cannot be written */
	if (r == 0 && store_save(d, e)) {
		r = -1;
		secret_store_restore(s, &keep, &ignore);
	}
	pthread_mutex_unlock(&d->secrets->mu);
	keep_wipe(&keep);
	if (r == 0)
		secrets_changed(d, owner, name);
	return r;
}

int secrets_get(struct kilnd *d, uid_t owner, const char *name, json_t **view, struct api_err *e)
{
	const struct secret *x;
	int r = -1;

	*view = NULL;
	if (secret_name_check(name, e))
		return -1;
	pthread_mutex_lock(&d->secrets->mu);
	x = secret_store_find(&d->secrets->s, owner, name);
	if (!x)
		api_err_set(e, API_E_NOT_FOUND, "no secret '%s' (GET /v1/secrets lists them)",
			    name);
	else
		r = view_of(x, view, e);
	pthread_mutex_unlock(&d->secrets->mu);
	return r;
}

json_t *secrets_list(struct kilnd *d, uid_t owner)
{
	json_t *v;

	pthread_mutex_lock(&d->secrets->mu);
	v = secret_store_list(&d->secrets->s, owner);
	pthread_mutex_unlock(&d->secrets->mu);
	return v;
}

size_t secrets_total(struct kilnd *d)
{
	size_t n;

	if (!d->secrets)
		return 0;
	pthread_mutex_lock(&d->secrets->mu);
	n = d->secrets->s.n;
	pthread_mutex_unlock(&d->secrets->mu);
	return n;
}

int secrets_sandbox_file(struct kilnd *d, uid_t owner, const struct http_rules *r, int dirfd,
			 const char *file, uid_t uid, gid_t gid, size_t *missing, struct err *e)
{
	int rc;

	pthread_mutex_lock(&d->secrets->mu);
	rc = secret_file_for_rules(&d->secrets->s, owner, r, dirfd, file, uid, gid, missing, e);
	pthread_mutex_unlock(&d->secrets->mu);
	return rc;
}

/* Whether sb's current rules name the secret: 1, 0, or -1 when they
 * cannot be read (the caller counts it in). */
static int sandbox_names(struct sandbox *sb, const char *name)
{
	json_t *canon = NULL, *http;
	struct http_rules *r = NULL;
	struct net_rules_err ne;
	struct api_err e;
	int hit = -1;

	if (sandbox_firewall_current(sb, &canon, &e) == 0) {
		http = json_object_get(canon, "http");
		if (!http)
			hit = 0;
		else if (http_rules_parse(http, &r, &ne) == 0)
			hit = secret_rules_name(r, name);
	}
	http_rules_free(r);
	json_decref(canon);
	return hit;
}

size_t secrets_sandboxes_naming(struct kilnd *d, uid_t owner, const char *name,
				char (*ids)[SANDBOX_ID_LEN + 1], size_t cap)
{
	struct sandbox **held = NULL;
	size_t n = 0, found = 0;

	kilnd_lock(d);
	if (d->reg.n)
		held = calloc(d->reg.n, sizeof(*held));
	for (size_t i = 0; held && i < d->reg.n; i++) {
		struct sandbox *sb = d->reg.v[i];

		if (sb->rec.owner_uid == owner) {
			sb->refs++;
			held[n++] = sb;
		}
	}
	kilnd_unlock(d);
	for (size_t i = 0; i < n; i++) {
		if (sandbox_names(held[i], name)) {
			if (found < cap)
				snprintf(ids[found], sizeof(ids[found]), "%s", held[i]->rec.id);
			found++;
		}
		sandbox_put_quiet(held[i]);
	}
	free(held);
	return found;
}

size_t secrets_changed(struct kilnd *d, uid_t owner, const char *name)
{
	char(*ids)[SANDBOX_ID_LEN + 1];
	size_t n = secrets_sandboxes_naming(d, owner, name, NULL, 0), got;

	if (!n)
		return 0;
	ids = calloc(n, sizeof(*ids));
	if (!ids) {
		kilnd_log("secret %s of uid %u changed; out of memory telling the %zu egress proxies that use it (they keep the old value until their sandbox starts again)",
			  name, (unsigned)owner, n);
		return n;
	}
	/* More may name it by now: those read the store when their proxy starts. */
	got = secrets_sandboxes_naming(d, owner, name, ids, n);
	for (size_t i = 0; i < got && i < n; i++)
		egress_proxy_secrets_changed(d, ids[i]);
	free(ids);
	return n;
}
