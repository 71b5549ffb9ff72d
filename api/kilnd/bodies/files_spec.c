/* File metadata request bodies; see files_spec.h. */
#include "api/kilnd/bodies/files_spec.h"

#include <stdio.h>
#include <string.h>

#include "api/kilnd/core/json_fields.h"
#include "api/kilnd/core/names.h"
#include "api/kilnd/core/time_text.h"

static int get_user(const json_t *body, enum agent_user *u, const char *what, struct api_err *e)
{
	const char *v;

	*u = AGENT_USER_USER;
	if (json_fields_string(body, "user", false, 8, &v, what, e))
		return -1;
	if (!v || strcmp(v, "user") == 0)
		return 0;
	if (strcmp(v, "root") == 0) {
		*u = AGENT_USER_ROOT;
		return 0;
	}
	api_err_set(e, API_E_BAD_FIELD, "%s: user must be 'user' or 'root'", what);
	return -1;
}

static int get_path(const json_t *body, const char *key, const char **out, const char *what,
		    struct api_err *e)
{
	/* AGENT_PATH_MAX + 1 lets json_fields_string accept what guest_path_valid
	 * then refuses with the clearer message. */
	if (json_fields_string(body, key, true, AGENT_PATH_MAX + 1, out, what, e))
		return -1;
	if (!guest_path_valid(*out, AGENT_PATH_MAX)) {
		api_err_set(e, API_E_BAD_FIELD,
			    "%s: '%s' ('%.100s') must be an absolute path of at most %d bytes",
			    what, key, *out, AGENT_PATH_MAX);
		return -1;
	}
	return 0;
}

int mkdir_spec_parse(const json_t *body, struct mkdir_spec *s, struct api_err *e)
{
	static const char *const allowed[] = { "path", "parents", "mode", "user", NULL };
	static const char what[] = "mkdir";
	uint64_t mode;

	memset(s, 0, sizeof(*s));
	s->mode = -1;
	if (json_fields_only(body, allowed, what, e) || get_path(body, "path", &s->path, what, e) ||
	    json_fields_bool(body, "parents", false, &s->parents, what, e) ||
	    json_fields_uint(body, "mode", false, 0, 07777, 0755, &mode, what, e) ||
	    get_user(body, &s->user, what, e))
		return -1;
	if (json_object_get(body, "mode"))
		s->mode = (int)mode;
	return 0;
}

int remove_spec_parse(const json_t *body, struct remove_spec *s, struct api_err *e)
{
	static const char *const allowed[] = { "path", "recursive", "user", NULL };
	static const char what[] = "remove";

	memset(s, 0, sizeof(*s));
	if (json_fields_only(body, allowed, what, e) || get_path(body, "path", &s->path, what, e) ||
	    json_fields_bool(body, "recursive", false, &s->recursive, what, e) ||
	    get_user(body, &s->user, what, e))
		return -1;
	return 0;
}

int rename_spec_parse(const json_t *body, struct rename_spec *s, struct api_err *e)
{
	static const char *const allowed[] = { "from", "to", "overwrite", "user", NULL };
	static const char what[] = "rename";

	memset(s, 0, sizeof(*s));
	if (json_fields_only(body, allowed, what, e) || get_path(body, "from", &s->from, what, e) ||
	    get_path(body, "to", &s->to, what, e) ||
	    json_fields_bool(body, "overwrite", false, &s->overwrite, what, e) ||
	    get_user(body, &s->user, what, e))
		return -1;
	return 0;
}

json_t *file_stat_json(const struct kiln_file_info *st, bool with_depth)
{
	char mtime[40], octal[8];
	/* Floor division: a file dated before 1970 has a negative mtime_ns. */
	int64_t ms = st->mtime_ns / 1000000 - (st->mtime_ns % 1000000 < 0);
	json_t *o;

	format_time_ms(ms, mtime, sizeof(mtime));
	snprintf(octal, sizeof(octal), "%04o", (unsigned)(st->mode & 07777));
	o = json_pack("{s:s,s:s,s:I,s:i,s:s,s:I,s:I,s:I,s:s,s:I}", "path", st->path ? st->path : "",
		      "kind", kiln_file_kind_name(st->kind), "size", (json_int_t)st->file_size,
		      "mode", (int)(st->mode & 07777), "mode_octal", octal, "uid",
		      (json_int_t)st->uid, "gid", (json_int_t)st->gid, "nlink",
		      (json_int_t)st->nlink, "mtime", mtime, "mtime_ns", (json_int_t)st->mtime_ns);
	if (!o)
		return NULL;
	if ((st->target && json_object_set_new(o, "target", json_string(st->target))) ||
	    (with_depth && json_object_set_new(o, "depth", json_integer(st->depth))) ||
	    (st->lossy && json_object_set_new(o, "lossy", json_true()))) {
		json_decref(o);
		return NULL;
	}
	return o;
}
