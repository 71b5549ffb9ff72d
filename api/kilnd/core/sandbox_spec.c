/* POST /v1/sandboxes bodies; see sandbox_spec.h. */
#include "api/kilnd/core/sandbox_spec.h"

#include <string.h>

#include "api/kilnd/core/json_fields.h"

static const char what[] = "sandbox create";

/* An object of string values: count, key rule, value length. */
static int string_map(const json_t *body, const char *field, size_t max_keys,
		      bool (*key_ok)(const char *), const char *key_rule, size_t value_max,
		      json_t **out, struct api_err *e)
{
	json_t *v = json_object_get(body, field), *val;
	const char *key;

	*out = NULL;
	if (!v) {
		*out = json_object();
		return *out ? 0 : (api_err_set(e, API_E_INTERNAL, "%s: out of memory", what), -1);
	}
	if (!json_is_object(v)) {
		api_err_set(e, API_E_BAD_FIELD, "%s: '%s' must be an object of strings", what,
			    field);
		return -1;
	}
	if (json_object_size(v) > max_keys) {
		api_err_set(e, API_E_BAD_FIELD, "%s: '%s' has more than %zu entries", what, field,
			    max_keys);
		return -1;
	}
	json_object_foreach(v, key, val)
	{
		if (!key_ok(key)) {
			api_err_set(e, API_E_BAD_FIELD, "%s: %s key '%.80s' is invalid (%s)", what,
				    field, key, key_rule);
			return -1;
		}
		if (!json_is_string(val)) {
			api_err_set(e, API_E_BAD_FIELD, "%s: %s['%.80s'] must be a string", what,
				    field, key);
			return -1;
		}
		if (json_string_length(val) > value_max) {
			api_err_set(e, API_E_BAD_FIELD, "%s: %s['%.80s'] is longer than %zu bytes",
				    what, field, key, value_max);
			return -1;
		}
	}
	*out = json_deep_copy(v);
	if (!*out) {
		api_err_set(e, API_E_INTERNAL, "%s: out of memory", what);
		return -1;
	}
	return 0;
}

static bool env_key_ok(const char *k)
{
	size_t n = strlen(k);

	/* The agent's rule (docs/agent-protocol.md, exec.env): non-empty, no '='. */
	return n >= 1 && n <= SPEC_ENV_KEY_MAX && !strchr(k, '=');
}

static int parse_share(const json_t *v, size_t i, struct share_spec *sh, struct api_err *e)
{
	static const char *const fields[] = { "host_path", "guest_path", "read_only",
					      "client",    "timeout_ms", NULL };
	const char *host = NULL, *guest;
	uint64_t n = 0;
	char w[64];

	snprintf(w, sizeof(w), "%s: shares[%zu]", what, i);
	if (!json_is_object(v)) {
		api_err_set(e, API_E_BAD_FIELD, "%s must be an object", w);
		return -1;
	}
	if (json_fields_only(v, fields, w, e) ||
	    json_fields_bool(v, "client", false, &sh->client, w, e))
		return -1;
	if (sh->client && json_object_get(v, "host_path")) {
		api_err_set(e, API_E_BAD_FIELD,
			    "%s: a client share (\"client\": true) has no host_path; drop one of them",
			    w);
		return -1;
	}
	if (!sh->client && json_object_get(v, "timeout_ms")) {
		api_err_set(e, API_E_BAD_FIELD,
			    "%s: timeout_ms is for client shares only (add \"client\": true or drop it)",
			    w);
		return -1;
	}
	if ((!sh->client &&
	     json_fields_string(v, "host_path", true, SPEC_HOST_PATH_MAX, &host, w, e)) ||
	    json_fields_string(v, "guest_path", true, SPEC_GUEST_PATH_MAX, &guest, w, e) ||
	    json_fields_bool(v, "read_only", false, &sh->read_only, w, e) ||
	    (sh->client &&
	     json_fields_uint(v, "timeout_ms", false, SPEC_SHARE_TIMEOUT_MIN_MS,
			      SPEC_SHARE_TIMEOUT_MAX_MS, SPEC_SHARE_TIMEOUT_DEFAULT_MS, &n, w, e)))
		return -1;
	if (host && !host_path_valid(host)) {
		api_err_set(e, API_E_BAD_FIELD,
			    "%s: host_path '%.100s' must be absolute, without control characters",
			    w, host);
		return -1;
	}
	if (!guest_mount_path_valid(guest, SPEC_GUEST_PATH_MAX)) {
		api_err_set(e, API_E_BAD_FIELD,
			    "%s: guest_path '%.100s' must be an absolute path of [A-Za-z0-9._/+-], not / and without . or .. components",
			    w, guest);
		return -1;
	}
	snprintf(sh->host_path, sizeof(sh->host_path), "%s", host ? host : "");
	snprintf(sh->guest_path, sizeof(sh->guest_path), "%s", guest);
	sh->timeout_ms = sh->client ? (uint32_t)n : 0;
	return 0;
}

/* kiln-vmm's --share-remote-timeout is one value for all client shares. */
static int share_timeouts_agree(const struct sandbox_spec *s, size_t i, struct api_err *e)
{
	for (size_t j = 0; j < i && s->shares[i].client; j++) {
		if (s->shares[j].client && s->shares[j].timeout_ms != s->shares[i].timeout_ms) {
			api_err_set(e, API_E_BAD_FIELD,
				    "%s: shares[%zu] has timeout_ms %u but shares[%zu] %u; a sandbox's client shares share one timeout, give them the same",
				    what, i, s->shares[i].timeout_ms, j, s->shares[j].timeout_ms);
			return -1;
		}
	}
	return 0;
}

int sandbox_spec_parse(const json_t *body, const struct sandbox_limits *lim,
		       struct sandbox_spec *out, struct api_err *e)
{
	static const char *const fields[] = { "image",    "cpus",      "memory_mib",
					      "hostname", "env",       "labels",
					      "shares",   "timeout_s", "idle_timeout_s",
					      "console",  "network",   "firewall",
					      "limits",   "disk_mib",  NULL };
	const char *image, *hostname, *network;
	json_t *shares;
	uint64_t n;

	memset(out, 0, sizeof(*out));
	if (!json_is_object(body)) {
		api_err_set(e, API_E_BAD_JSON, "%s: the body must be a JSON object", what);
		return -1;
	}
	if (json_fields_only(body, fields, what, e))
		return -1;
	if (json_fields_string(body, "image", true, IMAGE_NAME_MAX, &image, what, e))
		return -1;
	if (!image_name_valid(image)) {
		api_err_set(e, API_E_BAD_FIELD,
			    "%s: image '%.80s' is not an image name (1..64 of [A-Za-z0-9._-], first a letter or digit)",
			    what, image);
		return -1;
	}
	snprintf(out->image, sizeof(out->image), "%s", image);
	if (json_fields_uint(body, "cpus", false, 1, lim->max_cpus, SPEC_CPUS_DEFAULT, &n, what, e))
		return -1;
	out->cpus = (unsigned)n;
	if (json_fields_uint(body, "memory_mib", false, SPEC_MEM_MIN_MIB, lim->max_memory_mib,
			     SPEC_MEM_DEFAULT_MIB, &n, what, e))
		return -1;
	out->memory_mib = (unsigned)n;
	if (json_fields_uint(body, "disk_mib", false, 0, lim->max_disk_mib, 0, &n, what, e))
		return -1;
	out->disk_mib = (unsigned)n;
	if (cg_limits_parse(json_object_get(body, "limits"), out->cpus, out->memory_mib,
			    &out->limits, what, e))
		return -1;
	if (json_fields_string(body, "hostname", false, HOSTNAME_MAX, &hostname, what, e))
		return -1;
	if (hostname && !hostname_valid(hostname)) {
		api_err_set(e, API_E_BAD_FIELD,
			    "%s: hostname '%.80s' is invalid (dot-separated labels of [A-Za-z0-9-], each 1..63 bytes, no '-' at either end)",
			    what, hostname);
		return -1;
	}
	snprintf(out->hostname, sizeof(out->hostname), "%s",
		 hostname ? hostname : SPEC_HOSTNAME_DEFAULT);
	if (string_map(body, "env", SPEC_ENV_MAX, env_key_ok, "1..255 bytes without '='",
		       SPEC_ENV_VALUE_MAX, &out->env, e))
		goto fail;
	if (string_map(body, "labels", SPEC_LABELS_MAX, label_key_valid,
		       "1..63 of [A-Za-z0-9._/-], first a letter or digit", SPEC_LABEL_VALUE_MAX,
		       &out->labels, e))
		goto fail;
	shares = json_object_get(body, "shares");
	if (shares) {
		size_t i;
		json_t *v;

		if (!json_is_array(shares)) {
			api_err_set(e, API_E_BAD_FIELD, "%s: 'shares' must be an array", what);
			goto fail;
		}
		if (json_array_size(shares) > SPEC_MAX_SHARES) {
			api_err_set(e, API_E_BAD_FIELD, "%s: at most %d shares", what,
				    SPEC_MAX_SHARES);
			goto fail;
		}
		json_array_foreach(shares, i, v)
		{
			if (parse_share(v, i, &out->shares[i], e) ||
			    share_timeouts_agree(out, i, e))
				goto fail;
			for (size_t j = 0; j < i; j++) {
				if (strcmp(out->shares[j].guest_path, out->shares[i].guest_path) ==
				    0) {
					api_err_set(e, API_E_BAD_FIELD,
						    "%s: shares[%zu] and shares[%zu] have the same guest_path",
						    what, j, i);
					goto fail;
				}
			}
			out->nshares = i + 1;
		}
	}
	if (json_fields_uint(body, "timeout_s", false, 0, SPEC_TIMEOUT_MAX_S, 0, &n, what, e))
		goto fail;
	out->timeout_s = (uint32_t)n;
	if (json_fields_uint(body, "idle_timeout_s", false, 0, SPEC_TIMEOUT_MAX_S,
			     lim->idle_timeout_default_s, &n, what, e))
		goto fail;
	out->idle_timeout_s = (uint32_t)n;
	if (json_fields_bool(body, "console", true, &out->console, what, e))
		goto fail;
	if (json_fields_string(body, "network", false, 16, &network, what, e))
		goto fail;
	if (network && firewall_network_parse(network, &out->network)) {
		api_err_set(e, API_E_BAD_FIELD, "%s: network '%.16s' is not \"none\" or \"passt\"",
			    what, network);
		goto fail;
	}
	if (json_object_get(body, "firewall")) {
		if (out->network != SANDBOX_NET_PASST) {
			api_err_set(e, API_E_BAD_FIELD,
				    "%s: 'firewall' needs \"network\": \"passt\" (without a network there is nothing to filter)",
				    what);
			goto fail;
		}
		if (firewall_rules_canon(json_object_get(body, "firewall"), &out->firewall, e))
			goto fail;
	}
	return 0;
fail:
	sandbox_spec_free(out);
	memset(out, 0, sizeof(*out));
	return -1;
}

bool sandbox_spec_has_client_share(const struct sandbox_spec *s)
{
	for (size_t i = 0; i < s->nshares; i++)
		if (s->shares[i].client)
			return true;
	return false;
}

void sandbox_spec_free(struct sandbox_spec *s)
{
	json_decref(s->env);
	json_decref(s->labels);
	json_decref(s->firewall);
	s->env = s->labels = s->firewall = NULL;
}

json_t *sandbox_spec_to_json(const struct sandbox_spec *s)
{
	json_t *shares = json_array(), *o;

	if (!shares)
		return NULL;
	for (size_t i = 0; i < s->nshares; i++) {
		const struct share_spec *h = &s->shares[i];
		json_t *sh = h->client
			? json_pack("{s:s,s:b,s:b,s:I}", "guest_path", h->guest_path, "client",
				    true, "read_only", h->read_only, "timeout_ms",
				    (json_int_t)h->timeout_ms)
			: json_pack("{s:s,s:s,s:b}", "host_path", h->host_path, "guest_path",
				    h->guest_path, "read_only", h->read_only);

		if (!sh || json_array_append_new(shares, sh)) {
			json_decref(shares);
			return NULL;
		}
	}
	o = json_pack("{s:s,s:I,s:I,s:I,s:s,s:O,s:O,s:o,s:I,s:I,s:b,s:s,s:o}", "image", s->image,
		      "cpus", (json_int_t)s->cpus, "memory_mib", (json_int_t)s->memory_mib,
		      "disk_mib", (json_int_t)s->disk_mib, "hostname", s->hostname, "env", s->env,
		      "labels", s->labels, "shares", shares, "timeout_s", (json_int_t)s->timeout_s,
		      "idle_timeout_s", (json_int_t)s->idle_timeout_s, "console", s->console,
		      "network", firewall_network_name(s->network), "limits",
		      cg_limits_to_json(&s->limits));
	return o;
}

int sandbox_stop_body_parse(const json_t *body, int *grace_ms, struct api_err *e)
{
	static const char *const fields[] = { "grace_ms", NULL };
	uint64_t n;

	*grace_ms = AGENT_GRACE_DEFAULT_MS;
	if (!body)
		return 0;
	if (!json_is_object(body)) {
		api_err_set(e, API_E_BAD_JSON, "sandbox stop: the body must be a JSON object");
		return -1;
	}
	if (json_fields_only(body, fields, "sandbox stop", e) ||
	    json_fields_uint(body, "grace_ms", false, 0, AGENT_GRACE_MAX_MS, AGENT_GRACE_DEFAULT_MS,
			     &n, "sandbox stop", e))
		return -1;
	*grace_ms = (int)n;
	return 0;
}

int sandbox_start_body_parse(const json_t *body, struct api_err *e)
{
	static const char *const fields[] = { NULL };

	if (!body)
		return 0;
	if (!json_is_object(body)) {
		api_err_set(e, API_E_BAD_JSON, "sandbox start: the body must be a JSON object");
		return -1;
	}
	return json_fields_only(body, fields, "sandbox start", e);
}
