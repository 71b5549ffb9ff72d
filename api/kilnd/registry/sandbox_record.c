/* Sandbox objects and metadata; see sandbox_record.h. */
#include "api/kilnd/registry/sandbox_record.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "api/kilnd/core/json_fields.h"
#include "api/kilnd/core/preview_spec.h"
#include "api/kilnd/keeper/keeper_proto.h"
#include "api/kilnd/registry/checkpoint.h"
#include "api/kilnd/core/port_spec.h"
#include "lib/base/json.h"

static json_t *time_or_null(int64_t ms)
{
	char buf[40];

	if (ms <= 0)
		return json_null();
	format_time_ms(ms, buf, sizeof(buf));
	return json_string(buf);
}

static json_t *obj_or_null(json_t *o)
{
	return o ? json_incref(o) : json_null();
}

json_t *sandbox_record_view(const struct sandbox_record *r)
{
	json_t *o = sandbox_spec_to_json(&r->spec);
	int e = 0;

	if (!o)
		return NULL;
	/* id and state first: the most read fields lead the object. */
	e |= json_object_set_new(o, "id", json_string(r->id));
	e |= json_object_set_new(o, "state", json_string(sandbox_state_name(r->state)));
	e |= json_object_set_new(o, "owner_uid", json_integer((json_int_t)r->owner_uid));
	e |= json_object_set_new(o, "created_at", time_or_null(r->created_ms));
	e |= json_object_set_new(o, "started_at", time_or_null(r->started_ms));
	e |= json_object_set_new(o, "stopped_at", time_or_null(r->stopped_ms));
	e |= json_object_set_new(o, "expires_at", time_or_null(r->expires_ms));
	e |= json_object_set_new(o, "pid", r->pid > 0 ? json_integer(r->pid) : json_null());
	e |= json_object_set_new(o, "cgroup", r->cgroup[0] ? json_string(r->cgroup) : json_null());
	e |= json_object_set_new(o, "boots", json_integer(r->boots));
	e |= json_object_set_new(o, "template", r->tmpl[0] ? json_string(r->tmpl) : json_null());
	e |= json_object_set_new(o, "boot", obj_or_null(r->boot));
	e |= json_object_set_new(o, "last_exit", obj_or_null(r->last_exit));
	e |= json_object_set_new(o, "hibernation", obj_or_null(r->hibernation));
	e |= json_object_set_new(o, "checkpoints",
				 json_integer((json_int_t)json_array_size(r->checkpoints)));
	e |= json_object_set_new(o, "jail",
				 r->jail_id ? json_pack("{s:I,s:I}", "uid", (json_int_t)r->jail_id,
							"gid", (json_int_t)r->jail_id)
					    : json_null());
	e |= json_object_set_new(o, "egress",
				 r->egress_id
					 ? json_pack("{s:I,s:I}", "uid", (json_int_t)r->egress_id,
						     "gid", (json_int_t)r->egress_id)
					 : json_null());
	if (e) {
		json_decref(o);
		return NULL;
	}
	/* Reorder: id, state, then the spec, then the rest. */
	json_t *v = json_pack("{s:O,s:O}", "id", json_object_get(o, "id"), "state",
			      json_object_get(o, "state"));

	if (!v || json_object_update(v, o)) {
		json_decref(v);
		json_decref(o);
		return NULL;
	}
	json_decref(o);
	return v;
}

json_t *sandbox_record_persist(const struct sandbox_record *r)
{
	json_t *o = sandbox_record_view(r);

	if (!o)
		return NULL;
	if (json_object_set_new(o, "version", json_integer(SANDBOX_META_VERSION)) ||
	    json_object_set_new(o, "image_path", json_string(r->image_path)) ||
	    json_object_set_new(o, "created_ms", json_integer(r->created_ms)) ||
	    json_object_set_new(o, "started_ms", json_integer(r->started_ms)) ||
	    json_object_set_new(o, "stopped_ms", json_integer(r->stopped_ms)) ||
	    json_object_set_new(o, "checkpoints",
				r->checkpoints ? json_incref(r->checkpoints) : json_array()) ||
	    json_object_set_new(o, "creating", json_boolean(r->creating)) ||
	    json_object_set_new(o, "pooled", json_boolean(r->pooled)) ||
	    json_object_set_new(o, "template_build",
				r->tmpl_build[0] ? json_string(r->tmpl_build) : json_null()) ||
	    json_object_set_new(o, "ports", r->ports ? json_incref(r->ports) : json_array()) ||
	    json_object_set_new(o, "previews",
				r->previews ? json_incref(r->previews) : json_array()) ||
	    json_object_set_new(o, "vmm_start",
				json_integer((json_int_t)(r->vmm_start & INT64_MAX)))) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* meta[key]: null or absent (0), or {"uid": N, "gid": N} with N > 0. 0 or -1 with e. */
static int id_pair(const json_t *meta, const char *key, uint32_t *out, struct api_err *e)
{
	json_t *v = json_object_get(meta, key), *uid = json_object_get(v, "uid");

	*out = 0;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_integer(uid) || json_integer_value(uid) <= 0 ||
	    json_integer_value(uid) >= UINT32_MAX || !json_equal(uid, json_object_get(v, "gid"))) {
		api_err_set(e, API_E_BAD_FIELD,
			    "meta.json: '%s' must be {\"uid\": N, \"gid\": N} with N > 0", key);
		return -1;
	}
	*out = (uint32_t)json_integer_value(uid);
	return 0;
}

/* Fields of meta.json that are not the spec's, and derived ones the
 * restore ignores (they are recomputed). */
static const char *const meta_only[] = {
	"id",         "state",          "created_at", "started_at",  "stopped_at",  "expires_at",
	"pid",        "boots",          "boot",       "last_exit",   "version",     "image_path",
	"created_ms", "started_ms",     "stopped_ms", "checkpoints", "hibernation", "jail",
	"owner_uid",  "cgroup",         "creating",   "vmm_start",   "ports",       "pooled",
	"template",   "template_build", "previews",   "egress",      NULL
};

/* An optional template name (null or absent: none) into out. */
static int template_field(const json_t *meta, const char *key, char out[IMAGE_NAME_MAX + 1],
			  struct api_err *e)
{
	json_t *v = json_object_get(meta, key);

	out[0] = '\0';
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v) || !image_name_valid(json_string_value(v))) {
		api_err_set(e, API_E_BAD_FIELD, "meta.json: '%s' must be null or a template name",
			    key);
		return -1;
	}
	snprintf(out, IMAGE_NAME_MAX + 1, "%s", json_string_value(v));
	return 0;
}

/* An integer of meta.json in [min, max] (absent: def, or refused when
 * required), refused as "meta.json: 'key' must be <must>". */
static int meta_uint(const json_t *meta, const char *key, bool required, uint64_t min, uint64_t max,
		     uint64_t def, uint64_t *out, const char *must, struct api_err *e)
{
	struct json_field_fail f;

	if (!json_field_uint(meta, key, required, min, max, def, out, &f))
		return 0;
	api_err_set(e, API_E_BAD_FIELD, "meta.json: '%s' must be %s", key, must);
	return -1;
}

static int get_ms(const json_t *meta, const char *key, int64_t *out, struct api_err *e)
{
	uint64_t v;

	if (meta_uint(meta, key, true, 0, INT64_MAX, 0, &v, "a non-negative integer", e))
		return -1;
	*out = (int64_t)v;
	return 0;
}

/* Each checkpoint whole, and no name twice. */
static int check_checkpoints(const json_t *list, const char *id, struct api_err *e)
{
	char msg[sizeof(e->msg)];
	size_t i;
	json_t *c;

	json_array_foreach(list, i, c)
	{
		if (checkpoint_validate(c, id, e)) {
			snprintf(msg, sizeof(msg), "%s", e->msg);
			api_err_set(e, API_E_BAD_FIELD, "meta.json: %s", msg);
			return -1;
		}
		if (checkpoint_find(list, json_string_value(json_object_get(c, "name")), NULL) !=
		    c) {
			api_err_set(e, API_E_BAD_FIELD,
				    "meta.json: checkpoint '%s' is listed twice",
				    json_string_value(json_object_get(c, "name")));
			return -1;
		}
	}
	return 0;
}

/* Absent (before the field), or at most RECORD_PORTS_MAX POST .../ports
 * bodies, each with the host port it had: what a restarted kilnd binds. */
static int check_ports(const json_t *list, struct api_err *e)
{
	struct port_spec spec;
	size_t i;
	json_t *p;

	if (!list)
		return 0;
	if (!json_is_array(list) || json_array_size(list) > RECORD_PORTS_MAX) {
		api_err_set(e, API_E_BAD_FIELD,
			    "meta.json: 'ports' must be an array of at most %d port mappings",
			    RECORD_PORTS_MAX);
		return -1;
	}
	json_array_foreach(list, i, p)
	{
		if (port_spec_parse(p, &spec, e) || spec.host_port == 0) {
			api_err_set(e, API_E_BAD_FIELD,
				    "meta.json: 'ports' entry %zu is not a port mapping with its host_port",
				    i);
			return -1;
		}
	}
	return 0;
}

int sandbox_record_restore(const json_t *meta, struct sandbox_record *r, struct api_err *e)
{
	static const struct sandbox_limits unlimited = { .max_cpus = 4096,
							 .max_memory_mib = 1u << 30,
							 .max_disk_mib = SPEC_DISK_MAX_MIB };
	struct json_field_fail f;
	json_t *spec = NULL, *v;
	const char *key, *path;
	uint64_t n;
	int st;

	memset(r, 0, sizeof(*r));
	if (!json_is_object(meta)) {
		api_err_set(e, API_E_BAD_JSON, "meta.json: not a JSON object");
		return -1;
	}
	v = json_object_get(meta, "version");
	if (!json_is_integer(v) || json_integer_value(v) != SANDBOX_META_VERSION) {
		char got[32];

		if (json_is_integer(v))
			snprintf(got, sizeof(got), "%lld", (long long)json_integer_value(v));
		api_err_set(e, API_E_BAD_FIELD,
			    "meta.json: 'version' is %s, this kilnd reads version %d",
			    !v                           ? "missing"
				    : json_is_integer(v) ? got
							 : "not a number",
			    SANDBOX_META_VERSION);
		return -1;
	}
	v = json_object_get(meta, "id");
	if (!json_is_string(v) || !sandbox_id_valid(json_string_value(v))) {
		api_err_set(e, API_E_BAD_FIELD, "meta.json: 'id' is not a sandbox id");
		return -1;
	}
	snprintf(r->id, sizeof(r->id), "%s", json_string_value(v));
	v = json_object_get(meta, "state");
	st = json_is_string(v) ? sandbox_state_parse(json_string_value(v)) : -1;
	if (st < 0) {
		api_err_set(e, API_E_BAD_FIELD, "meta.json: 'state' is not a sandbox state");
		return -1;
	}
	r->state = (enum sandbox_state)st;
	if (json_field_string(meta, "image_path", true, sizeof(r->image_path) - 1, &path, &f) ||
	    path[0] != '/') {
		api_err_set(e, API_E_BAD_FIELD, "meta.json: 'image_path' must be an absolute path");
		return -1;
	}
	snprintf(r->image_path, sizeof(r->image_path), "%s", path);
	if (get_ms(meta, "created_ms", &r->created_ms, e) ||
	    get_ms(meta, "started_ms", &r->started_ms, e) ||
	    get_ms(meta, "stopped_ms", &r->stopped_ms, e))
		return -1;
	if (meta_uint(meta, "boots", true, 0, UINT32_MAX, 0, &n, "a count", e))
		return -1;
	r->boots = (unsigned)n;
	/* Records from before the jail have none, and from before the
	 * egress proxy (or of sandboxes that never had one): null. */
	if (id_pair(meta, "jail", &r->jail_id, e) || id_pair(meta, "egress", &r->egress_id, e))
		return -1;
	/* Owners came after version 1's first files: absent is root's (the
	 * only client that could create sandboxes with host shares before). */
	if (meta_uint(meta, "owner_uid", false, 0, UINT32_MAX - 1, 0, &n, "a uid", e))
		return -1;
	r->owner_uid = (uid_t)n;
	/* The spec is every other field. */
	spec = json_object();
	if (!spec) {
		api_err_set(e, API_E_INTERNAL, "meta.json: out of memory");
		return -1;
	}
	json_object_foreach((json_t *)meta, key, v)
	{
		bool skip = false;

		for (size_t i = 0; meta_only[i] && !skip; i++)
			skip = strcmp(meta_only[i], key) == 0;
		if (!skip && json_object_set(spec, key, v)) {
			json_decref(spec);
			api_err_set(e, API_E_INTERNAL, "meta.json: out of memory");
			return -1;
		}
	}
	if (sandbox_spec_parse(spec, &unlimited, &r->spec, e)) {
		char msg[sizeof(e->msg)];

		snprintf(msg, sizeof(msg), "%s", e->msg);
		api_err_set(e, e->code, "meta.json: %s", msg);
		json_decref(spec);
		return -1;
	}
	json_decref(spec);
	v = json_object_get(meta, "boot");
	r->boot = json_is_object(v) ? json_incref(v) : NULL;
	v = json_object_get(meta, "last_exit");
	r->last_exit = json_is_object(v) ? json_incref(v) : NULL;
	v = json_object_get(meta, "hibernation");
	r->hibernation = json_is_object(v) ? json_incref(v) : NULL;
	/* Checkpoints came after version 1's first files: absent is none. */
	v = json_object_get(meta, "checkpoints");
	if (v && !json_is_array(v)) {
		api_err_set(e, API_E_BAD_FIELD, "meta.json: 'checkpoints' must be an array");
		sandbox_record_free(r);
		return -1;
	}
	r->checkpoints = v ? json_deep_copy(v) : json_array();
	if (!r->checkpoints) {
		api_err_set(e, API_E_INTERNAL, "meta.json: out of memory");
		sandbox_record_free(r);
		return -1;
	}
	if (check_checkpoints(r->checkpoints, r->id, e)) {
		sandbox_record_free(r);
		return -1;
	}
	/* Before the field: only a create in flight has never booted. */
	if (json_fields_bool(meta, "creating", r->boot == NULL, &r->creating, "meta.json", e) ||
	    json_fields_bool(meta, "pooled", false, &r->pooled, "meta.json", e) ||
	    template_field(meta, "template", r->tmpl, e) ||
	    template_field(meta, "template_build", r->tmpl_build, e)) {
		sandbox_record_free(r);
		return -1;
	}
	/* pid and vmm_start name the VMM a restarted kilnd may reattach;
	 * before the field there is none to reattach. */
	v = json_object_get(meta, "pid");
	if (v && !json_is_null(v) &&
	    (!json_is_integer(v) || json_integer_value(v) < 1 ||
	     json_integer_value(v) > KEEPER_PID_MAX)) {
		api_err_set(e, API_E_BAD_FIELD, "meta.json: 'pid' must be null or a pid");
		sandbox_record_free(r);
		return -1;
	}
	r->pid = json_is_integer(v) ? (int)json_integer_value(v) : 0;
	if (meta_uint(meta, "vmm_start", false, 0, INT64_MAX, 0, &r->vmm_start,
		      "a non-negative integer", e) ||
	    check_ports(json_object_get(meta, "ports"), e)) {
		sandbox_record_free(r);
		return -1;
	}
	v = json_object_get(meta, "ports");
	r->ports = v ? json_deep_copy(v) : json_array();
	if (preview_list_check(json_object_get(meta, "previews"), e)) {
		sandbox_record_free(r);
		return -1;
	}
	v = json_object_get(meta, "previews");
	r->previews = v ? json_deep_copy(v) : json_array();
	if (!r->ports || !r->previews) {
		api_err_set(e, API_E_INTERNAL, "meta.json: out of memory");
		sandbox_record_free(r);
		return -1;
	}
	return 0;
}

enum sandbox_dir_fate sandbox_dir_judge(const char *id, const json_t *meta, const char *meta_err,
					struct sandbox_record *r, struct err *why)
{
	struct api_err e;

	memset(r, 0, sizeof(*r));
	if (!meta && !meta_err) {
		err_set(why, 0,
			"no meta.json: a create was cut short before its record was written");
		return SANDBOX_DIR_REMOVE;
	}
	if (!meta) {
		err_set(why, 0, "%s", meta_err);
		return SANDBOX_DIR_SKIP;
	}
	if (sandbox_record_restore(meta, r, &e)) {
		err_set(why, 0, "%s", e.msg);
		return SANDBOX_DIR_SKIP;
	}
	if (strcmp(r->id, id) != 0) {
		err_set(why, 0, "meta.json names another id, '%s'", r->id);
		sandbox_record_free(r);
		memset(r, 0, sizeof(*r));
		return SANDBOX_DIR_SKIP;
	}
	if (r->state == SANDBOX_DELETING || r->creating || r->pooled) {
		err_set(why, 0, "%s",
			r->state == SANDBOX_DELETING ? "finishing a delete that was cut short"
				: r->creating
				? "its create was cut short (kilnd stopped before answering it), so the sandbox never existed for its client"
				: "a warm pool's sandbox that no create took (the pool is filled again)");
		sandbox_record_free(r);
		memset(r, 0, sizeof(*r));
		return SANDBOX_DIR_REMOVE;
	}
	return SANDBOX_DIR_LOAD;
}

bool sandbox_build_orphan(const struct sandbox_record *r, const json_t *tmpl, struct err *why)
{
	const char *id;

	if (!r->tmpl_build[0])
		return false;
	id = json_string_value(json_object_get(tmpl, "sandbox"));
	if (id && strcmp(id, r->id) == 0)
		return false;
	err_set(why, 0,
		"the hidden sandbox of a build of template '%s' that kilnd's end cut short (%s)",
		r->tmpl_build, tmpl ? "the template names another sandbox" : "no such template");
	return true;
}

bool sandbox_record_visible(const struct sandbox_record *r, uid_t client_uid)
{
	return !r->pooled && !r->tmpl_build[0] && (client_uid == 0 || client_uid == r->owner_uid);
}

void sandbox_record_free(struct sandbox_record *r)
{
	sandbox_spec_free(&r->spec);
	json_decref(r->boot);
	json_decref(r->last_exit);
	json_decref(r->checkpoints);
	json_decref(r->hibernation);
	json_decref(r->ports);
	json_decref(r->previews);
	r->boot = r->last_exit = r->checkpoints = r->hibernation = r->ports = r->previews = NULL;
}

json_t *sandbox_boot_json(double agent_ready_ms, int64_t guest_uptime_ms, bool clock_synced)
{
	return json_pack("{s:f,s:o,s:b,s:s,s:n,s:n}", "agent_ready_ms", agent_ready_ms,
			 "guest_uptime_ms",
			 guest_uptime_ms >= 0 ? json_integer(guest_uptime_ms) : json_null(),
			 "clock_synced", clock_synced, "from", "kernel", "checkpoint",
			 "snapshot_error");
}

int sandbox_boot_source(json_t *boot, const char *from, const char *checkpoint,
			const char *snapshot_error)
{
	if (!boot)
		return -1;
	return json_object_set_new(boot, "from", json_string(from)) |
		json_object_set_new(boot, "checkpoint",
				    checkpoint ? json_string(checkpoint) : json_null()) |
		json_object_set_new(boot, "snapshot_error",
				    snapshot_error ? json_string(snapshot_error) : json_null());
}

json_t *sandbox_exit_json(struct vmm_end *x)
{
	json_t *o;

	o = json_pack("{s:o,s:s,s:o,s:o,s:o,s:o,s:o,s:o}", "at", time_or_null(x->at_ms), "reason",
		      x->reason, "exit_status",
		      x->exit_status >= 0 ? json_integer(x->exit_status) : json_null(), "signal",
		      x->signal ? json_integer(x->signal) : json_null(), "vmm_reason",
		      x->timeline &&
				      json_is_string(
					      json_object_get(json_object_get(x->timeline, "exit"),
							      "reason"))
			      ? json_incref(json_object_get(json_object_get(x->timeline, "exit"),
							    "reason"))
			      : json_null(),
		      "message", x->msg ? x->msg : json_null(), "console_tail",
		      x->console_tail ? x->console_tail : json_array(), "timeline",
		      x->timeline ? x->timeline : json_null());
	x->msg = x->console_tail = x->timeline = NULL;
	return o;
}
