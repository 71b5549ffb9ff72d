/* Checkpoint names, objects and fork bodies; see checkpoint.h. */
#include "api/kilnd/registry/checkpoint.h"

#include <stdio.h>
#include <string.h>

#include "api/kilnd/core/json_fields.h"
#include "api/kilnd/core/port_spec.h"
#include "api/kilnd/registry/sandbox_record.h"

bool checkpoint_name_valid(const char *s)
{
	size_t n = strlen(s);

	return image_name_valid(s) && n <= CHECKPOINT_NAME_MAX &&
		!(n >= 4 && strcmp(s + n - 4, ".tmp") == 0);
}

static const char name_rule[] =
	"1..64 of [A-Za-z0-9._-], first a letter or digit, not ending in .tmp";

int checkpoint_req_parse(const json_t *body, struct checkpoint_req *out, struct api_err *e)
{
	static const char *const fields[] = { "name", "compress", "incremental", NULL };
	static const char what[] = "checkpoint";
	const char *name;

	memset(out, 0, sizeof(*out));
	if (!json_is_object(body)) {
		api_err_set(e, API_E_BAD_JSON, "%s: the body must be a JSON object", what);
		return -1;
	}
	if (json_fields_only(body, fields, what, e) ||
	    json_fields_string(body, "name", true, CHECKPOINT_NAME_MAX, &name, what, e) ||
	    json_fields_bool(body, "compress", false, &out->compress, what, e) ||
	    json_fields_bool(body, "incremental", true, &out->incremental, what, e))
		return -1;
	if (!checkpoint_name_valid(name)) {
		api_err_set(e, API_E_BAD_FIELD, "%s: name '%.80s' is invalid (%s)", what, name,
			    name_rule);
		return -1;
	}
	snprintf(out->name, sizeof(out->name), "%s", name);
	return 0;
}

/* The sizes every snapshot object carries. */
static int add_sizes(json_t *o, const struct control_reply *r)
{
	return json_object_set_new(o, "memory_bytes", json_integer((json_int_t)r->memory_bytes)) |
		json_object_set_new(o, "memory_stored_bytes",
				    json_integer((json_int_t)r->memory_stored_bytes)) |
		json_object_set_new(o, "state_bytes", json_integer((json_int_t)r->state_bytes)) |
		json_object_set_new(o, "disk_bytes", json_integer((json_int_t)r->disk_bytes)) |
		json_object_set_new(o, "size_bytes",
				    json_integer((json_int_t)(r->memory_stored_bytes +
							      r->state_bytes + r->disk_bytes))) |
		json_object_set_new(o, "snapshot_ms", json_real(r->ms));
}

json_t *checkpoint_object(const char *sandbox_id, const char *name, int64_t created_ms,
			  bool compressed, bool paused, const struct control_reply *r)
{
	char at[40];
	json_t *o;

	format_time_ms(created_ms, at, sizeof(at));
	o = json_pack("{s:s,s:s,s:s,s:b,s:b,s:o}", "name", name, "sandbox_id", sandbox_id,
		      "created_at", at, "paused", paused, "compressed", compressed, "base",
		      r->base[0] ? json_string(r->base) : json_null());
	if (o && add_sizes(o, r)) {
		json_decref(o);
		o = NULL;
	}
	return o;
}

json_t *hibernation_object(int64_t at_ms, const struct control_reply *r)
{
	char at[40];
	json_t *o;

	format_time_ms(at_ms, at, sizeof(at));
	o = json_pack("{s:s}", "at", at);
	if (o && add_sizes(o, r)) {
		json_decref(o);
		o = NULL;
	}
	return o;
}

int checkpoint_validate(const json_t *o, const char *sandbox_id, struct api_err *e)
{
	static const char *const ints[] = { "memory_bytes", "memory_stored_bytes", "state_bytes",
					    "disk_bytes",   "size_bytes",          NULL };
	static const char *const fields[] = { "name",
					      "sandbox_id",
					      "created_at",
					      "paused",
					      "compressed",
					      "memory_bytes",
					      "memory_stored_bytes",
					      "state_bytes",
					      "disk_bytes",
					      "size_bytes",
					      "snapshot_ms",
					      "base",
					      "ports",
					      NULL };
	const char *name, *sid, *at;
	json_t *ms, *base, *ports, *p;
	size_t i;

	if (!json_is_object(o)) {
		api_err_set(e, API_E_BAD_FIELD, "a checkpoint is not an object");
		return -1;
	}
	if (json_fields_only(o, fields, "checkpoint", e))
		return -1;
	name = json_string_value(json_object_get(o, "name"));
	if (!name || !checkpoint_name_valid(name)) {
		api_err_set(e, API_E_BAD_FIELD, "a checkpoint's 'name' is missing or invalid");
		return -1;
	}
	sid = json_string_value(json_object_get(o, "sandbox_id"));
	if (!sid || strcmp(sid, sandbox_id) != 0) {
		api_err_set(e, API_E_BAD_FIELD,
			    "checkpoint '%s': 'sandbox_id' is not this sandbox's", name);
		return -1;
	}
	at = json_string_value(json_object_get(o, "created_at"));
	if (!at || strlen(at) > 40) {
		api_err_set(e, API_E_BAD_FIELD, "checkpoint '%s': 'created_at' is not a time",
			    name);
		return -1;
	}
	if (!json_is_boolean(json_object_get(o, "paused")) ||
	    !json_is_boolean(json_object_get(o, "compressed"))) {
		api_err_set(e, API_E_BAD_FIELD,
			    "checkpoint '%s': 'paused' and 'compressed' must be booleans", name);
		return -1;
	}
	for (size_t i = 0; ints[i]; i++) {
		json_t *v = json_object_get(o, ints[i]);

		if (!json_is_integer(v) || json_integer_value(v) < 0) {
			api_err_set(e, API_E_BAD_FIELD,
				    "checkpoint '%s': '%s' must be a non-negative integer", name,
				    ints[i]);
			return -1;
		}
	}
	ms = json_object_get(o, "snapshot_ms");
	if (!json_is_number(ms) || json_number_value(ms) < 0) {
		api_err_set(e, API_E_BAD_FIELD,
			    "checkpoint '%s': 'snapshot_ms' must be a non-negative number", name);
		return -1;
	}
	/* Absent in records from before incremental checkpoints. */
	base = json_object_get(o, "base");
	if (base && !json_is_null(base) &&
	    (!json_is_string(base) || !checkpoint_name_valid(json_string_value(base)) ||
	     strcmp(json_string_value(base), name) == 0)) {
		api_err_set(e, API_E_BAD_FIELD,
			    "checkpoint '%s': 'base' must be another checkpoint's name or null",
			    name);
		return -1;
	}
	/* Absent in records from before it: the port mappings' guest sides. */
	ports = json_object_get(o, "ports");
	if (ports && (!json_is_array(ports) || json_array_size(ports) > CHECKPOINT_PORTS_MAX)) {
		api_err_set(e, API_E_BAD_FIELD,
			    "checkpoint '%s': 'ports' must be an array of at most %d port mappings",
			    name, CHECKPOINT_PORTS_MAX);
		return -1;
	}
	json_array_foreach(ports, i, p)
	{
		struct port_spec spec;

		if (port_spec_parse(p, &spec, e) || spec.host_port) {
			api_err_set(e, API_E_BAD_FIELD,
				    "checkpoint '%s': 'ports' entry %zu is not a port mapping without a host_port",
				    name, i);
			return -1;
		}
	}
	return 0;
}

json_t *checkpoint_find(const json_t *list, const char *name, size_t *index)
{
	size_t i;
	json_t *c;

	json_array_foreach(list, i, c)
	{
		const char *n = json_string_value(json_object_get(c, "name"));

		if (n && strcmp(n, name) == 0) {
			if (index)
				*index = i;
			return c;
		}
	}
	return NULL;
}

int checkpoint_ref_parse(const char *ref, char id[SANDBOX_ID_LEN + 1],
			 char name[CHECKPOINT_NAME_MAX + 1], struct api_err *e)
{
	const char *slash = strchr(ref, '/');

	if (!slash || (size_t)(slash - ref) != SANDBOX_ID_LEN ||
	    strlen(slash + 1) > CHECKPOINT_NAME_MAX) {
		api_err_set(e, API_E_BAD_FIELD,
			    "from_checkpoint '%.100s' must be \"<sandbox id>/<checkpoint name>\"",
			    ref);
		return -1;
	}
	memcpy(id, ref, SANDBOX_ID_LEN);
	id[SANDBOX_ID_LEN] = '\0';
	snprintf(name, CHECKPOINT_NAME_MAX + 1, "%s", slash + 1);
	if (!sandbox_id_valid(id)) {
		api_err_set(e, API_E_BAD_FIELD,
			    "from_checkpoint '%.100s': '%s' is not a sandbox id", ref, id);
		return -1;
	}
	if (!checkpoint_name_valid(name)) {
		api_err_set(e, API_E_BAD_FIELD,
			    "from_checkpoint '%.100s': '%.80s' is not a checkpoint name (%s)", ref,
			    name, name_rule);
		return -1;
	}
	return 0;
}

bool fork_requested(const json_t *body)
{
	return json_is_object(body) && json_object_get(body, "from_checkpoint") != NULL;
}

static const char fork_what[] = "fork";
/* What the checkpoint's memory image fixes. */
static const char *const inherited[] = { "image", "cpus", "memory_mib", "disk_mib", "shares", NULL };
/* What a fork may set; the rest of the spec is the source's. */
static const char *const overridable[] = { "hostname",       "env",     "labels", "timeout_s",
					   "idle_timeout_s", "console", NULL };

int fork_ref_parse(const json_t *body, char id[SANDBOX_ID_LEN + 1],
		   char name[CHECKPOINT_NAME_MAX + 1], struct api_err *e)
{
	static const char *const fields[] = { "from_checkpoint", "hostname",  "env",
					      "labels",          "timeout_s", "idle_timeout_s",
					      "console",         NULL };
	const char *ref;

	if (!json_is_object(body)) {
		api_err_set(e, API_E_BAD_JSON, "%s: the body must be a JSON object", fork_what);
		return -1;
	}
	for (size_t i = 0; inherited[i]; i++) {
		if (json_object_get(body, inherited[i])) {
			api_err_set(e, API_E_BAD_FIELD,
				    "%s: '%s' comes from the checkpoint (a fork resumes its memory image); leave it out",
				    fork_what, inherited[i]);
			return -1;
		}
	}
	if (json_fields_only(body, fields, fork_what, e) ||
	    json_fields_string(body, "from_checkpoint", true, CHECKPOINT_REF_MAX, &ref, fork_what,
			       e))
		return -1;
	return checkpoint_ref_parse(ref, id, name, e);
}

int fork_spec_parse(const json_t *body, const struct sandbox_spec *source,
		    const struct sandbox_limits *lim, struct sandbox_spec *out,
		    bool *hostname_given, struct api_err *e)
{
	json_t *merged = sandbox_spec_to_json(source);
	int r;

	memset(out, 0, sizeof(*out));
	*hostname_given = json_object_get(body, "hostname") != NULL;
	if (!merged) {
		api_err_set(e, API_E_INTERNAL, "%s: out of memory", fork_what);
		return -1;
	}
	for (size_t i = 0; overridable[i]; i++) {
		json_t *v = json_object_get(body, overridable[i]);

		if (v && json_object_set(merged, overridable[i], v)) {
			json_decref(merged);
			api_err_set(e, API_E_INTERNAL, "%s: out of memory", fork_what);
			return -1;
		}
	}
	r = sandbox_spec_parse(merged, lim, out, e);
	json_decref(merged);
	return r;
}
