/* The NDJSON lines of .../files/watch; see watch_render.h. */
#include "api/kilnd/bodies/watch_render.h"

#include "api/kilnd/bodies/exec_render.h"

char *watch_line_started(const char *path, bool recursive, uint32_t watches, size_t *len)
{
	return exec_event_json(json_pack("{s:s,s:s,s:b,s:I}", "type", "watching", "path", path,
					 "recursive", recursive, "watches", (json_int_t)watches),
			       len);
}

char *watch_line_event(const struct kiln_fs_event *ev, size_t *len)
{
	/* kiln_fs_change is the protocol's order (libkiln checks it). */
	const char *kind = agent_fs_kind_name((enum agent_fs_kind)ev->change);
	json_t *o = kind
		? json_pack("{s:s,s:I}", "type", kind, "seq", (json_int_t)(ev->seq & INT64_MAX))
		: NULL;
	int bad = !o;

	if (o && ev->change == KILN_FS_OVERFLOW) {
		bad |= json_object_set_new(o, "reason",
					   json_string(ev->reason ? ev->reason : "queue"));
		bad |= json_object_set_new(o, "dropped",
					   json_integer((json_int_t)(ev->dropped & INT64_MAX)));
	} else if (o) {
		bad |= json_object_set_new(o, "path", json_string(ev->path ? ev->path : ""));
		if (ev->change == KILN_FS_RENAME)
			bad |= json_object_set_new(o, "old_path",
						   json_string(ev->old_path ? ev->old_path : ""));
		bad |= json_object_set_new(o, "is_dir", json_boolean(ev->is_dir));
		if (ev->lossy)
			bad |= json_object_set_new(o, "lossy", json_true());
	}
	if (bad) {
		json_decref(o);
		return NULL;
	}
	return exec_event_json(o, len);
}

char *watch_line_end(const char *reason, const char *state, size_t *len)
{
	json_t *o = json_pack("{s:s,s:s}", "type", "end", "reason", reason);

	if (o && state && json_object_set_new(o, "state", json_string(state))) {
		json_decref(o);
		return NULL;
	}
	return exec_event_json(o, len);
}
