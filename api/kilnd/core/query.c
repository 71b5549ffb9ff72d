/* URL query parameters; see query.h. */
#include "api/kilnd/core/query.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "api/kilnd/core/names.h"
#include "lib/base/num_parse.h"

int query_check_keys(const struct query_kv *kv, size_t n, const char *const *known,
		     const char *repeatable, const char *what, struct api_err *e)
{
	for (size_t i = 0; i < n; i++) {
		bool ok = false;

		for (size_t k = 0; known[k] && !ok; k++)
			ok = strcmp(known[k], kv[i].key) == 0;
		if (!ok) {
			api_err_set(e, API_E_UNKNOWN_FIELD, "%s: unknown query parameter '%.80s'",
				    what, kv[i].key);
			return -1;
		}
		if (repeatable && strcmp(repeatable, kv[i].key) == 0)
			continue;
		for (size_t j = 0; j < i; j++) {
			if (strcmp(kv[j].key, kv[i].key) == 0) {
				api_err_set(e, API_E_BAD_FIELD,
					    "%s: query parameter '%.80s' given twice", what,
					    kv[i].key);
				return -1;
			}
		}
	}
	return 0;
}

static const char *find(const struct query_kv *kv, size_t n, const char *key, bool *present)
{
	for (size_t i = 0; i < n; i++) {
		if (strcmp(kv[i].key, key) == 0) {
			*present = true;
			return kv[i].value;
		}
	}
	*present = false;
	return NULL;
}

static int get_bool(const struct query_kv *kv, size_t n, const char *key, bool def, bool *out,
		    const char *what, struct api_err *e)
{
	bool present;
	const char *v = find(kv, n, key, &present);

	*out = def;
	if (!present)
		return 0;
	if (v && (strcmp(v, "1") == 0 || strcmp(v, "true") == 0)) {
		*out = true;
	} else if (v && (strcmp(v, "0") == 0 || strcmp(v, "false") == 0)) {
		*out = false;
	} else {
		api_err_set(e, API_E_BAD_FIELD, "%s: '%s' must be true, false, 1 or 0", what, key);
		return -1;
	}
	return 0;
}

/* Decimal (base 10) or octal (base 8) digits only: no sign, no spaces, no 0x. */
static int get_uint(const struct query_kv *kv, size_t n, const char *key, int base, uint64_t max,
		    bool *present, uint64_t *out, const char *what, struct api_err *e)
{
	const char *v = find(kv, n, key, present);

	if (!*present || num_parse_u64(v, base, 0, max, out) == 0)
		return 0;
	api_err_set(e, API_E_BAD_FIELD, "%s: '%s' must be a%s number from 0 to %llu%s", what, key,
		    base == 8 ? "n octal" : "", (unsigned long long)max,
		    base == 8 ? " (octal)" : "");
	return -1;
}

static int get_user(const struct query_kv *kv, size_t n, enum agent_user *u, const char *what,
		    struct api_err *e)
{
	bool present;
	const char *v = find(kv, n, "user", &present);

	*u = AGENT_USER_USER;
	if (!present || (v && strcmp(v, "user") == 0))
		return 0;
	if (v && strcmp(v, "root") == 0) {
		*u = AGENT_USER_ROOT;
		return 0;
	}
	api_err_set(e, API_E_BAD_FIELD, "%s: user must be 'user' or 'root'", what);
	return -1;
}

/* get_user as libkiln's flag: KILN_AGENT_AS_ROOT into *flags for root. */
static int get_user_flag(const struct query_kv *kv, size_t n, unsigned *flags, const char *what,
			 struct api_err *e)
{
	enum agent_user u;

	if (get_user(kv, n, &u, what, e))
		return -1;
	*flags |= query_user_flags(u);
	return 0;
}

static int get_path(const struct query_kv *kv, size_t n, const char **path, const char *what,
		    struct api_err *e)
{
	bool present;
	const char *v = find(kv, n, "path", &present);

	if (!present || !v) {
		api_err_set(e, API_E_MISSING_FIELD, "%s: the query parameter 'path' is required",
			    what);
		return -1;
	}
	if (!guest_path_valid(v, AGENT_PATH_MAX)) {
		api_err_set(e, API_E_BAD_FIELD,
			    "%s: path '%.100s' must be absolute, at most %d bytes", what, v,
			    AGENT_PATH_MAX);
		return -1;
	}
	*path = v;
	return 0;
}

int query_none(const struct query_kv *kv, size_t n, const char *what, struct api_err *e)
{
	static const char *const known[] = { NULL };

	return query_check_keys(kv, n, known, NULL, what, e);
}

int query_exec(const struct query_kv *kv, size_t n, bool *stream, struct api_err *e)
{
	static const char *const known[] = { "stream", NULL };

	if (query_check_keys(kv, n, known, NULL, "exec", e))
		return -1;
	return get_bool(kv, n, "stream", false, stream, "exec", e);
}

int query_list(const struct query_kv *kv, size_t n, struct list_filter *f, struct api_err *e)
{
	static const char *const known[] = { "state", "label", NULL };
	static const char what[] = "sandbox list";
	bool present;
	const char *st;

	memset(f, 0, sizeof(*f));
	f->state = -1;
	if (query_check_keys(kv, n, known, "label", what, e))
		return -1;
	st = find(kv, n, "state", &present);
	if (present) {
		f->state = st ? sandbox_state_parse(st) : -1;
		if (f->state < 0) {
			api_err_set(e, API_E_BAD_FIELD,
				    "%s: state must be booting, running, paused, stopping, stopped, crashed, deleting, hibernating or hibernated",
				    what);
			return -1;
		}
	}
	for (size_t i = 0; i < n; i++) {
		const char *v = kv[i].value, *eq;

		if (strcmp(kv[i].key, "label") != 0)
			continue;
		eq = v ? strchr(v, '=') : NULL;
		if (!eq || eq == v) {
			api_err_set(e, API_E_BAD_FIELD, "%s: label must be KEY=VALUE", what);
			return -1;
		}
		if (f->nlabels == QUERY_LABELS_MAX) {
			api_err_set(e, API_E_BAD_FIELD, "%s: at most %d label filters", what,
				    QUERY_LABELS_MAX);
			return -1;
		}
		f->label_key[f->nlabels] = v;
		f->label_key_len[f->nlabels] = (size_t)(eq - v);
		f->label_value[f->nlabels++] = eq + 1;
	}
	return 0;
}

bool list_filter_match(const struct list_filter *f, enum sandbox_state st, const json_t *labels)
{
	if (f->state >= 0 && (enum sandbox_state)f->state != st)
		return false;
	for (size_t i = 0; i < f->nlabels; i++) {
		json_t *v = json_object_getn(labels, f->label_key[i], f->label_key_len[i]);

		if (!json_is_string(v) || strcmp(json_string_value(v), f->label_value[i]) != 0)
			return false;
	}
	return true;
}

int query_file_get(const struct query_kv *kv, size_t n, const char **path, struct kiln_read_opts *o,
		   struct api_err *e)
{
	static const char *const known[] = { "path", "offset", "length", "user", NULL };
	static const char what[] = "file read";
	bool present, has_length;

	memset(o, 0, sizeof(*o));
	o->size = sizeof(*o);
	if (query_check_keys(kv, n, known, NULL, what, e) || get_path(kv, n, path, what, e) ||
	    get_uint(kv, n, "offset", 10, INT64_MAX, &present, &o->offset, what, e) ||
	    get_uint(kv, n, "length", 10, INT64_MAX, &has_length, &o->length, what, e) ||
	    get_user_flag(kv, n, &o->flags, what, e))
		return -1;
	o->has_length = has_length;
	return 0;
}

int query_file_put(const struct query_kv *kv, size_t n, const char **path,
		   struct kiln_write_opts *o, struct api_err *e)
{
	static const char *const known[] = { "path",      "mode",   "parents", "append",
					     "exclusive", "create", "user",    NULL };
	static const char what[] = "file write";
	bool has_mode, parents, append, exclusive, create;
	uint64_t mode = 0;

	memset(o, 0, sizeof(*o));
	o->size = sizeof(*o);
	if (query_check_keys(kv, n, known, NULL, what, e) || get_path(kv, n, path, what, e) ||
	    get_uint(kv, n, "mode", 8, 07777, &has_mode, &mode, what, e) ||
	    get_bool(kv, n, "parents", false, &parents, what, e) ||
	    get_bool(kv, n, "append", false, &append, what, e) ||
	    get_bool(kv, n, "exclusive", false, &exclusive, what, e) ||
	    get_bool(kv, n, "create", true, &create, what, e) ||
	    get_user_flag(kv, n, &o->flags, what, e))
		return -1;
	o->mode = has_mode ? (int)mode : -1;
	o->flags |= (parents ? KILN_AGENT_PARENTS : 0) | (append ? KILN_AGENT_APPEND : 0) |
		(exclusive ? KILN_AGENT_EXCLUSIVE : 0) | (create ? 0 : KILN_AGENT_NO_CREATE);
	/* The agent's rule: exclusive only makes sense when creating. */
	if (exclusive && !create) {
		api_err_set(e, API_E_BAD_FIELD, "%s: exclusive=true needs create=true", what);
		return -1;
	}
	return 0;
}

int query_file_stat(const struct query_kv *kv, size_t n, const char **path, bool *follow,
		    enum agent_user *user, struct api_err *e)
{
	static const char *const known[] = { "path", "follow", "user", NULL };
	static const char what[] = "stat";

	if (query_check_keys(kv, n, known, NULL, what, e) || get_path(kv, n, path, what, e) ||
	    get_bool(kv, n, "follow", true, follow, what, e) || get_user(kv, n, user, what, e))
		return -1;
	return 0;
}

int query_file_list(const struct query_kv *kv, size_t n, const char **path,
		    struct file_list_opts *o, struct api_err *e)
{
	static const char *const known[] = { "path", "depth", "limit", "user", NULL };
	static const char what[] = "list";
	uint64_t depth = 1, limit = AGENT_LIST_LIMIT_DEFAULT;
	bool present;

	memset(o, 0, sizeof(*o));
	if (query_check_keys(kv, n, known, NULL, what, e) || get_path(kv, n, path, what, e) ||
	    get_uint(kv, n, "depth", 10, AGENT_LIST_DEPTH_MAX, &present, &depth, what, e) ||
	    get_uint(kv, n, "limit", 10, AGENT_LIST_LIMIT_MAX, &present, &limit, what, e) ||
	    get_user_flag(kv, n, &o->flags, what, e))
		return -1;
	/* 0 would mean "the default" to the client library: refuse it here. */
	if (depth == 0 || limit == 0) {
		api_err_set(e, API_E_BAD_FIELD, "%s: '%s' must be at least 1", what,
			    depth == 0 ? "depth" : "limit");
		return -1;
	}
	o->depth = (uint32_t)depth;
	o->limit = (uint32_t)limit;
	return 0;
}

int query_file_watch(const struct query_kv *kv, size_t n, const char **path,
		     struct kiln_watch_opts *o, struct api_err *e)
{
	static const char *const known[] = { "path",  "recursive", "max_watches",
					     "queue", "user",      NULL };
	static const char what[] = "watch";
	uint64_t watches = AGENT_WATCH_WATCHES_DEFAULT, queue = AGENT_WATCH_QUEUE_DEFAULT;
	bool present, recursive;

	memset(o, 0, sizeof(*o));
	o->size = sizeof(*o);
	if (query_check_keys(kv, n, known, NULL, what, e) || get_path(kv, n, path, what, e) ||
	    get_bool(kv, n, "recursive", false, &recursive, what, e) ||
	    get_uint(kv, n, "max_watches", 10, AGENT_WATCH_WATCHES_MAX, &present, &watches, what,
		     e) ||
	    get_uint(kv, n, "queue", 10, AGENT_WATCH_QUEUE_MAX, &present, &queue, what, e) ||
	    get_user_flag(kv, n, &o->flags, what, e))
		return -1;
	if (recursive)
		o->flags |= KILN_AGENT_RECURSIVE;
	/* 0 would mean "the default" to the client library: refuse it here. */
	if (watches == 0 || queue < AGENT_WATCH_QUEUE_MIN) {
		api_err_set(e, API_E_BAD_FIELD, "%s: '%s' must be at least %u", what,
			    watches == 0 ? "max_watches" : "queue",
			    watches == 0 ? 1u : AGENT_WATCH_QUEUE_MIN);
		return -1;
	}
	o->max_watches = (uint32_t)watches;
	o->queue = (uint32_t)queue;
	return 0;
}

int query_archive(const struct query_kv *kv, size_t n, const char **path, enum agent_user *user,
		  struct api_err *e)
{
	static const char *const known[] = { "path", "user", NULL };
	static const char what[] = "archive";

	if (query_check_keys(kv, n, known, NULL, what, e) || get_path(kv, n, path, what, e) ||
	    get_user(kv, n, user, what, e))
		return -1;
	return 0;
}

int query_image_import(const struct query_kv *kv, size_t n, const char **name, bool *devices,
		       const char **ref, struct api_err *e)
{
	static const char *const known[] = { "name", "devices", "ref", NULL };
	static const char what[] = "image import";
	bool present;

	if (query_check_keys(kv, n, known, NULL, what, e) ||
	    get_bool(kv, n, "devices", false, devices, what, e))
		return -1;
	*name = find(kv, n, "name", &present);
	if (!*name || !**name) {
		api_err_set(e, API_E_MISSING_FIELD, "%s: give the new image's name: ?name=NAME",
			    what);
		return -1;
	}
	if (!image_name_valid(*name)) {
		api_err_set(e, API_E_BAD_FIELD,
			    "%s: name '%.80s' must be 1..64 of [A-Za-z0-9._-], first a letter or digit",
			    what, *name);
		return -1;
	}
	*ref = find(kv, n, "ref", &present);
	if (present && (!*ref || !image_ref_valid(*ref))) {
		api_err_set(e, API_E_BAD_FIELD,
			    "%s: ref '%.80s' must be 1..255 of [A-Za-z0-9._:@/+-], first a letter or digit (a tag of the layout's index.json)",
			    what, *ref ? *ref : "");
		return -1;
	}
	return 0;
}

int query_template_build(const struct query_kv *kv, size_t n, struct template_build_query *q,
			 struct api_err *e)
{
	static const char *const known[] = {
		"name", "file", "cpus", "memory_mib", "disk_mib", NULL
	};
	static const char *const nums[] = { "cpus", "memory_mib", "disk_mib" };
	static const char what[] = "template build";
	bool present;

	memset(q, 0, sizeof(*q));
	if (query_check_keys(kv, n, known, NULL, what, e))
		return -1;
	q->name = find(kv, n, "name", &present);
	if (!q->name || !*q->name) {
		api_err_set(e, API_E_MISSING_FIELD, "%s: give the template's name: ?name=NAME",
			    what);
		return -1;
	}
	if (!image_name_valid(q->name)) {
		api_err_set(e, API_E_BAD_FIELD,
			    "%s: name '%.80s' must be 1..64 of [A-Za-z0-9._-], first a letter or digit",
			    what, q->name);
		return -1;
	}
	q->file = find(kv, n, "file", &present);
	if (present && (!q->file || !*q->file || q->file[0] == '/' || strlen(q->file) > 4096)) {
		api_err_set(e, API_E_BAD_FIELD,
			    "%s: 'file' must be the build file's path inside the context (relative)",
			    what);
		return -1;
	}
	for (size_t i = 0; i < 3; i++) {
		uint64_t v;

		if (get_uint(kv, n, nums[i], 10, UINT32_MAX, &present, &v, what, e))
			return -1;
		if (present && v == 0) {
			api_err_set(e, API_E_BAD_FIELD, "%s: '%s' must be at least 1", what,
				    nums[i]);
			return -1;
		}
		if (present)
			*(i == 0 ? &q->cpus : i == 1 ? &q->memory_mib : &q->disk_mib) = (unsigned)v;
	}
	return 0;
}

int query_egress_log(const struct query_kv *kv, size_t n, size_t def, size_t max, size_t *lines,
		     struct api_err *e)
{
	static const char *const known[] = { "lines", NULL };
	const char *what = "egress log";
	uint64_t v = def;
	bool present;

	if (query_check_keys(kv, n, known, NULL, what, e) ||
	    get_uint(kv, n, "lines", 10, max, &present, &v, what, e))
		return -1;
	if (v == 0) {
		api_err_set(e, API_E_BAD_FIELD, "%s: 'lines' must be a number from 1 to %zu", what,
			    max);
		return -1;
	}
	*lines = (size_t)v;
	return 0;
}
