/*
 * A sandbox's preview URLs (sandbox.h): entries of its record (rec.previews,
 * under reg.mu), persisted in meta.json with every change. The proxy
 * that serves them is preview/preview_server.c.
 */
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include "api/kilnd/registry/sandbox_impl.h"

/* Where the listener is, for the URLs; NULL without --preview-listen. */
static const struct preview_where *where_of(const struct kilnd *d, struct preview_where *w)
{
	if (!d->cfg.preview_port)
		return NULL;
	w->addr = d->cfg.preview_addr;
	w->port = d->cfg.preview_port;
	w->domain = d->cfg.preview_domain;
	return w;
}

int sandbox_preview_add(struct sandbox *sb, uint16_t port, bool public_, json_t **view,
			struct api_err *e)
{
	struct kilnd *d = sb->d;
	uint8_t raw[PREVIEW_TOKEN_BYTES];
	char created[40];
	struct preview_where w;
	json_t *entry;
	int r = -1;

	*view = NULL;
	/* getrandom without flags blocks only before the host's pool was ever
	 * seeded; it never returns short for 24 bytes. */
	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw)) {
		api_err_set(e, API_E_INTERNAL, "preview: no random bytes for its token");
		return -1;
	}
	format_time_ms(wall_ms(), created, sizeof(created));
	entry = preview_entry_new(port, public_, raw, created);
	explicit_bzero(raw, sizeof(raw));
	if (!entry) {
		api_err_set(e, API_E_INTERNAL, "preview: out of memory");
		return -1;
	}
	kilnd_lock(d);
	if (!sb->rec.previews)
		sb->rec.previews = json_array();
	if (sb->rec.state == SANDBOX_DELETING) {
		api_err_set(e, API_E_WRONG_STATE, "sandbox %s is being deleted", sb->rec.id);
	} else if (preview_list_find(sb->rec.previews, port, NULL)) {
		api_err_set(e, API_E_EXISTS,
			    "sandbox %s already has a preview of port %u (DELETE .../previews/%u first, or GET .../previews for its URL)",
			    sb->rec.id, (unsigned)port, (unsigned)port);
	} else if (json_array_size(sb->rec.previews) >= PREVIEWS_MAX) {
		api_err_set(e, API_E_LIMIT_REACHED,
			    "sandbox %s already has %d previews; remove one first", sb->rec.id,
			    PREVIEWS_MAX);
	} else if (!sb->rec.previews || json_array_append(sb->rec.previews, entry) ||
		   !(*view = preview_view(entry, sb->rec.id, where_of(d, &w)))) {
		api_err_set(e, API_E_INTERNAL, "preview: out of memory");
	} else {
		sandbox_persist_locked(sb);
		r = 0;
	}
	kilnd_unlock(d);
	json_decref(entry);
	if (r == 0) /* never the token */
		kilnd_log("sandbox %s: preview of guest port %u (%s)", sb->rec.id, (unsigned)port,
			  public_ ? "public" : "token");
	return r;
}

static size_t previews_count(const struct sandbox *sb)
{
	return json_array_size(sb->rec.previews);
}

static json_t *preview_at(struct sandbox *sb, size_t i)
{
	struct preview_where w;

	return preview_view(json_array_get(sb->rec.previews, i), sb->rec.id, where_of(sb->d, &w));
}

json_t *sandbox_preview_list(struct sandbox *sb)
{
	return sandbox_list_view(sb, "previews", previews_count, preview_at);
}

int sandbox_preview_remove(struct sandbox *sb, uint16_t port, struct api_err *e)
{
	struct kilnd *d = sb->d;
	size_t i;
	bool found;

	kilnd_lock(d);
	found = preview_list_find(sb->rec.previews, port, &i) != NULL;
	if (found) {
		json_array_remove(sb->rec.previews, i);
		sandbox_persist_locked(sb);
	}
	kilnd_unlock(d);
	if (!found) {
		api_err_set(e, API_E_NOT_FOUND,
			    "sandbox %s has no preview of port %u (GET .../previews lists them)",
			    sb->rec.id, (unsigned)port);
		return -1;
	}
	kilnd_log("sandbox %s: preview of guest port %u removed", sb->rec.id, (unsigned)port);
	return 0;
}

struct sandbox *sandbox_preview_find(struct kilnd *d, const char *id, uint16_t port,
				     struct preview_grant *g)
{
	struct sandbox *sb = NULL;
	const json_t *p;

	memset(g, 0, sizeof(*g));
	if (!sandbox_id_valid(id))
		return NULL;
	kilnd_lock(d);
	sb = sandbox_find_locked(d, id);
	p = sb && !sb->rec.pooled && sb->rec.state != SANDBOX_DELETING
		? preview_list_find(sb->rec.previews, port, NULL)
		: NULL;
	if (p) {
		const char *t = json_string_value(json_object_get(p, "token"));

		g->public_ = !t;
		snprintf(g->token, sizeof(g->token), "%s", t ? t : "");
		g->state = sb->rec.state;
		/* No activity yet: a request without the token must not keep
		 * a private preview's sandbox awake (the caller's put says). */
		sb->refs++;
	} else {
		sb = NULL;
	}
	kilnd_unlock(d);
	return sb;
}

const char *sandbox_vsock_path(const struct sandbox *sb)
{
	return sb->vsock;
}
