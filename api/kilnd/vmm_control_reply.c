/* kiln-vmm control commands and replies, pure; see vmm_control.h. */
#include "api/kilnd/vmm_control.h"
#include "lib/base/text_clean.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

static const char *const op_names[] = { "pause", "resume", "status", "snapshot" };

int vmm_control_line(enum vmm_ctl_op op, const char *dir, bool compress, char *out, size_t cap,
		     struct api_err *e)
{
	int n;

	if ((unsigned)op > VMM_CTL_SNAPSHOT) {
		api_err_set(e, API_E_INTERNAL, "kiln-vmm control: unknown operation %d", (int)op);
		return -1;
	}
	if (op != VMM_CTL_SNAPSHOT) {
		n = snprintf(out, cap, "%s", op_names[op]);
	} else {
		if (!dir || dir[0] != '/') {
			api_err_set(e, API_E_BAD_FIELD, "snapshot directory '%.200s' must be an absolute path",
				    dir ? dir : "(none)");
			return -1;
		}
		/* The line ends at the first newline: a directory with one (or
		 * any control character) would be cut or refused by kiln-vmm. */
		if (text_clean_control_at(dir, strlen(dir)) < strlen(dir)) {
			api_err_set(e, API_E_BAD_FIELD, "snapshot directory '%.200s' holds a control character", dir);
			return -1;
		}
		n = snprintf(out, cap, "snapshot %s%s", compress ? "--compress " : "", dir);
	}
	/* +1: the newline the call adds must fit kiln-vmm's line too. */
	if (n < 0 || (size_t)n >= cap || (size_t)n + 1 > VMM_CONTROL_LINE_MAX) {
		api_err_set(e, API_E_BAD_FIELD, "kiln-vmm control: command too long (%d bytes)", n);
		return -1;
	}
	return 0;
}

/* A non-negative integer field (snapshot sizes). */
static int get_u64(json_t *o, const char *key, uint64_t *out, struct api_err *e)
{
	json_t *v = json_object_get(o, key);

	if (!json_is_integer(v) || json_integer_value(v) < 0) {
		api_err_set(e, API_E_INTERNAL, "kiln-vmm control: snapshot reply without a valid '%s'", key);
		return -1;
	}
	*out = (uint64_t)json_integer_value(v);
	return 0;
}

/*
 * One reply line as a JSON object that says {"ok":true,...}; NULL (e set)
 * when it is not one, or when kiln-vmm refused the command (its message).
 * The caller decrefs it.
 */
static json_t *ok_reply(const char *line, const char *op, struct api_err *e)
{
	json_error_t je;
	json_t *o = json_loads(line, JSON_REJECT_DUPLICATES, &je), *ok;

	if (!json_is_object(o)) {
		api_err_set(e, API_E_INTERNAL, "kiln-vmm control: the reply to %s is not a JSON object: '%.120s'", op,
			    line);
	} else if (!json_is_boolean(ok = json_object_get(o, "ok"))) {
		api_err_set(e, API_E_INTERNAL, "kiln-vmm control: a reply without 'ok': '%.120s'", line);
	} else if (!json_is_true(ok)) {
		const char *msg = json_string_value(json_object_get(o, "error"));

		api_err_set(e, API_E_INTERNAL, "kiln-vmm: %s", msg ? msg : "the command failed (no message)");
	} else {
		return o;
	}
	json_decref(o);
	return NULL;
}

int vmm_control_reply_parse(const char *line, enum vmm_ctl_op op, struct vmm_ctl_reply *out,
			    struct api_err *e)
{
	json_t *o, *st, *ms;
	const char *state;
	int r = -1;

	memset(out, 0, sizeof(*out));
	o = ok_reply(line, (unsigned)op <= VMM_CTL_SNAPSHOT ? op_names[op] : "?", e);
	if (!o)
		return -1;
	st = json_object_get(o, "state");
	state = json_string_value(st);
	if (!state || (strcmp(state, "running") && strcmp(state, "paused"))) {
		api_err_set(e, API_E_INTERNAL, "kiln-vmm control: a reply without a valid 'state': '%.120s'", line);
		goto out;
	}
	out->paused = strcmp(state, "paused") == 0;
	if (op == VMM_CTL_SNAPSHOT) {
		if (get_u64(o, "memory_bytes", &out->memory_bytes, e) ||
		    get_u64(o, "memory_stored_bytes", &out->memory_stored_bytes, e) ||
		    get_u64(o, "state_bytes", &out->state_bytes, e) || get_u64(o, "disk_bytes", &out->disk_bytes, e))
			goto out;
		ms = json_object_get(o, "ms");
		if (!json_is_number(ms) || json_number_value(ms) < 0) {
			api_err_set(e, API_E_INTERNAL, "kiln-vmm control: snapshot reply without a valid 'ms'");
			goto out;
		}
		out->ms = json_number_value(ms);
	}
	r = 0;
out:
	json_decref(o);
	return r;
}

char *vmm_control_firewall_line(const char *rules, struct api_err *e)
{
	size_t n, at;
	char *line;

	if (!rules) {
		line = strdup("firewall-get\n");
		if (line)
			line[12] = '\0';
		else
			api_err_set(e, API_E_INTERNAL, "kiln-vmm control: out of memory");
		return line;
	}
	n = strlen(rules);
	if (n == 0 || n > VMM_CONTROL_RULES_MAX) {
		api_err_set(e, API_E_BAD_FIELD, "kiln-vmm control: a rule set of %zu bytes (1..%d)", n,
			    VMM_CONTROL_RULES_MAX);
		return NULL;
	}
	if ((at = text_clean_control_at(rules, n)) < n) {
		api_err_set(e, API_E_BAD_FIELD, "kiln-vmm control: the rule set holds a control character at byte %zu",
			    at);
		return NULL;
	}
	/* "firewall-set " + rules + newline + NUL */
	line = malloc(n + 15);
	if (!line) {
		api_err_set(e, API_E_INTERNAL, "kiln-vmm control: out of memory");
		return NULL;
	}
	memcpy(line, "firewall-set ", 13);
	memcpy(line + 13, rules, n + 1);
	return line;
}

int vmm_control_firewall_reply_parse(const char *line, bool set, size_t *cut, json_t **obj, struct api_err *e)
{
	const char *op = set ? "firewall-set" : "firewall-get";
	json_t *o, *v, *rules, *ctr;
	int r = -1;

	if (cut)
		*cut = 0;
	if (obj)
		*obj = NULL;
	o = ok_reply(line, op, e);
	if (!o)
		return -1;
	if (set) {
		v = json_object_get(o, "cut");
		if (!json_is_integer(v) || json_integer_value(v) < 0) {
			api_err_set(e, API_E_INTERNAL, "kiln-vmm control: firewall-set reply without a valid 'cut'");
			goto out;
		}
		if (cut)
			*cut = (size_t)json_integer_value(v);
	} else {
		rules = json_object_get(o, "rules");
		ctr = json_object_get(o, "counters");
		if (!json_is_object(rules) || !json_is_object(ctr)) {
			api_err_set(e, API_E_INTERNAL, "kiln-vmm control: firewall-get reply without 'rules' and 'counters'");
			goto out;
		}
		if (obj) {
			*obj = json_pack("{s:O,s:O}", "rules", rules, "counters", ctr);
			if (!*obj) {
				api_err_set(e, API_E_INTERNAL, "kiln-vmm control: out of memory");
				goto out;
			}
		}
	}
	r = 0;
out:
	json_decref(o);
	return r;
}
