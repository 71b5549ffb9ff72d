/* kiln-vmm's control commands: parsing and replies (see control_proto.h). */
#include "vmm/control/control_proto.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/json.h"
#include "lib/base/text_clean.h"
#include "lib/netrules/net_rules.h"

_Static_assert(
	CONTROL_RULES_MAX == NET_RULES_TEXT_MAX,
	"firewall-set carries a whole rule set: CONTROL_RULES_MAX is net_rules.h's NET_RULES_TEXT_MAX");

static const char *const op_names[] = {
	[CTL_PAUSE] = "pause",
	[CTL_RESUME] = "resume",
	[CTL_STATUS] = "status",
	[CTL_SNAPSHOT] = "snapshot",
	[CTL_FIREWALL_SET] = "firewall-set",
	[CTL_FIREWALL_GET] = "firewall-get",
	[CTL_GRAFT] = "graft",
	[CTL_UNGRAFT] = "ungraft",
};

static int fail(struct err *e, const char *msg, const char *arg)
{
	return err_set(e, EINVAL, msg, arg);
}

/* A graft's TAG (1..CONTROL_TAG_MAX bytes) or NAME (1..CONTROL_NAME_MAX,
 * not "." or ".."): one word without '/' (control characters are refused
 * with the whole line). */
static bool graft_word(const char *w, size_t max, bool name)
{
	size_t n = strlen(w);

	return n && n <= max && !strpbrk(w, "/ ") &&
		!(name && (!strcmp(w, ".") || !strcmp(w, "..")));
}

/* graft/ungraft's "TAG NAME" into out, or -EINVAL with e. */
static int parse_graft(char *rest, struct control_cmd *out, struct err *e)
{
	char *sp = rest ? strchr(rest, ' ') : NULL;

	if (sp)
		*sp = 0;
	if (!sp || !graft_word(rest, CONTROL_TAG_MAX, false) ||
	    !graft_word(sp + 1, CONTROL_NAME_MAX, true))
		return fail(e,
			    "control: %s takes a share's tag and a name (graft TAG NAME, ungraft TAG NAME): one word each, no '/', the name not '.' or '..'",
			    op_names[out->op]);
	out->tag = rest;
	out->name = sp + 1;
	return 0;
}

int control_parse(char *line, struct control_cmd *out, struct err *e)
{
	char *rest;
	size_t len = strlen(line);

	memset(out, 0, sizeof(*out));
	if (len && line[len - 1] == '\r')
		line[--len] = 0;
	/* The rule of kilnd's control lines too: C0 and DEL are refused. */
	if (text_clean_control_at(line, len) < len)
		return fail(e, "control: a command may not hold control characters%s", "");
	rest = strchr(line, ' ');
	if (rest)
		*rest++ = 0;
	if (strcmp(line, "pause") == 0)
		out->op = CTL_PAUSE;
	else if (strcmp(line, "resume") == 0)
		out->op = CTL_RESUME;
	else if (strcmp(line, "status") == 0)
		out->op = CTL_STATUS;
	else if (strcmp(line, "snapshot") == 0)
		out->op = CTL_SNAPSHOT;
	else if (strcmp(line, "firewall-set") == 0)
		out->op = CTL_FIREWALL_SET;
	else if (strcmp(line, "firewall-get") == 0)
		out->op = CTL_FIREWALL_GET;
	else if (strcmp(line, "graft") == 0)
		out->op = CTL_GRAFT;
	else if (strcmp(line, "ungraft") == 0)
		out->op = CTL_UNGRAFT;
	else
		return fail(e,
			    "control: unknown command '%.64s' (pause, resume, status, snapshot [--compress] [--base NAME] DIR, firewall-set JSON, firewall-get, graft TAG NAME, ungraft TAG NAME)",
			    line);
	if (out->op == CTL_FIREWALL_SET) {
		if (!rest || !*rest)
			return fail(e,
				    "control: firewall-set needs a rule set: firewall-set {\"allow\":[...]} on one line%s",
				    "");
		out->json = rest;
		return 0;
	}
	if (out->op == CTL_GRAFT || out->op == CTL_UNGRAFT)
		return parse_graft(rest, out, e);
	if (out->op != CTL_SNAPSHOT) {
		if (rest)
			return fail(e, "control: '%s' takes no argument", line);
		return 0;
	}
	if (rest && strncmp(rest, "--compress ", 11) == 0) {
		out->compress = 1;
		rest += 11;
	}
	if (rest && strncmp(rest, "--base ", 7) == 0) {
		char *end = strchr(rest + 7, ' ');

		if (!end)
			return fail(e,
				    "control: snapshot needs a directory: snapshot [--compress] [--base NAME] DIR%s",
				    "");
		if (end == rest + 7 || end - (rest + 7) > CONTROL_BASE_MAX ||
		    memchr(rest + 7, '/', (size_t)(end - rest - 7)))
			return fail(e,
				    "control: snapshot --base takes a sibling directory's name (1..63 bytes, no '/'): snapshot [--compress] [--base NAME] DIR%s",
				    "");
		*end = 0;
		out->base = rest + 7;
		rest = end + 1;
	}
	if (!rest || !*rest)
		return fail(e,
			    "control: snapshot needs a directory: snapshot [--compress] [--base NAME] DIR%s",
			    "");
	if (rest[0] != '/')
		return fail(e, "control: snapshot directory '%.200s' must be an absolute path",
			    rest);
	out->dir = rest;
	return 0;
}

size_t control_json_escape(char *buf, size_t n, const char *s)
{
	size_t o = 0;

	if (!n)
		return 0;
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		char esc[8];
		size_t k;

		if (c == '"' || c == '\\')
			k = (size_t)snprintf(esc, sizeof(esc), "\\%c", c);
		else if (c < 0x20)
			k = (size_t)snprintf(esc, sizeof(esc), "\\u%04x", c);
		else {
			esc[0] = (char)c;
			k = 1;
		}
		if (o + k >= n)
			break;
		memcpy(buf + o, esc, k);
		o += k;
	}
	buf[o] = 0;
	return o;
}

char *control_reply_object(const char *obj)
{
	size_t len = obj ? strlen(obj) : 0;
	char *r;

	if (len < 2 || obj[0] != '{' || obj[len - 1] != '}')
		return NULL;
	r = malloc(len + 16);
	if (!r)
		return NULL;
	/* {"ok":true} for an empty object, else {"ok":true,<members>}. */
	if (len == 2)
		snprintf(r, len + 16, "{\"ok\":true}\n");
	else
		snprintf(r, len + 16, "{\"ok\":true,%s\n", obj + 1);
	return r;
}

size_t control_reply_error(char *buf, size_t n, const char *msg)
{
	char m[1024];
	int k;

	control_json_escape(m, sizeof(m), msg);
	k = snprintf(buf, n, "{\"ok\":false,\"error\":\"%s\"}\n", m);
	return k < 0 ? 0 : (size_t)k >= n ? n - 1 : (size_t)k;
}

size_t control_reply_max(enum control_op op)
{
	return op == CTL_FIREWALL_GET ? CONTROL_REPLY_MAX : CONTROL_SHORT_REPLY_MAX;
}

static int __attribute__((format(printf, 3, 4))) failf(int err, struct err *e, const char *fmt, ...)
{
	va_list ap;

	if (!e)
		return err;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	return err;
}

/* The first control character (or DEL) in s, or -1. */
static long control_char_at(const char *s)
{
	size_t len = strlen(s), at = text_clean_control_at(s, len);

	return at < len ? (long)at : -1;
}

/* The argument of cmd's line after "<op> " into *arg (NULL: none), checked: 0 or -EINVAL with e. */
static int request_arg(const struct control_cmd *cmd, const char **arg, char *pair, size_t pair_cap,
		       struct err *e)
{
	size_t len;
	long at;

	*arg = NULL;
	if (cmd->op == CTL_SNAPSHOT) {
		if (!cmd->dir || cmd->dir[0] != '/')
			return failf(-EINVAL, e,
				     "snapshot directory '%.200s' must be an absolute path",
				     cmd->dir ? cmd->dir : "(none)");
		/* The line ends at the first newline: a directory with one (or
		 * any control character) would be cut or refused by kiln-vmm. */
		if (control_char_at(cmd->dir) >= 0)
			return failf(-EINVAL, e,
				     "snapshot directory '%.200s' holds a control character",
				     cmd->dir);
		if (cmd->base &&
		    (!*cmd->base || strlen(cmd->base) > CONTROL_BASE_MAX ||
		     strpbrk(cmd->base, "/ ") || control_char_at(cmd->base) >= 0))
			return failf(-EINVAL, e,
				     "snapshot base '%.80s' is not a directory name (1..%d bytes, no '/' or space)",
				     cmd->base, CONTROL_BASE_MAX);
		*arg = cmd->dir;
	} else if (cmd->op == CTL_FIREWALL_SET) {
		len = cmd->json ? strlen(cmd->json) : 0;
		if (len == 0 || len > CONTROL_RULES_MAX)
			return failf(-EINVAL, e,
				     "kiln-vmm control: a rule set of %zu bytes (1..%d)", len,
				     CONTROL_RULES_MAX);
		at = control_char_at(cmd->json);
		if (at >= 0)
			return failf(-EINVAL, e,
				     "kiln-vmm control: the rule set holds a control character at byte %ld",
				     at);
		*arg = cmd->json;
	} else if (cmd->op == CTL_GRAFT || cmd->op == CTL_UNGRAFT) {
		if (!cmd->tag || !cmd->name || !graft_word(cmd->tag, CONTROL_TAG_MAX, false) ||
		    !graft_word(cmd->name, CONTROL_NAME_MAX, true) ||
		    control_char_at(cmd->tag) >= 0 || control_char_at(cmd->name) >= 0)
			return failf(-EINVAL, e,
				     "kiln-vmm control: %s: tag '%.40s' and name '%.80s' must each be "
				     "one word without '/' or a control character",
				     op_names[cmd->op], cmd->tag ? cmd->tag : "",
				     cmd->name ? cmd->name : "");
		snprintf(pair, pair_cap, "%s %s", cmd->tag, cmd->name);
		*arg = pair;
	}
	return 0;
}

int control_request(const struct control_cmd *cmd, char **line, size_t *len, struct err *e)
{
	char pair[CONTROL_TAG_MAX + CONTROL_NAME_MAX + 2];
	const char *arg, *name, *base;
	size_t need;
	char *l;
	int r;

	*line = NULL;
	*len = 0;
	if ((unsigned)cmd->op >= sizeof(op_names) / sizeof(op_names[0]))
		return failf(-ENOTSUP, e, "kiln-vmm control: unknown operation %d", (int)cmd->op);
	r = request_arg(cmd, &arg, pair, sizeof(pair), e);
	if (r)
		return r;
	name = op_names[cmd->op];
	/* "<op>" [" --compress"] [" --base " base] [" " arg] "\n" */
	base = cmd->op == CTL_SNAPSHOT ? cmd->base : NULL;
	need = strlen(name) + (arg ? 1 + strlen(arg) : 0) +
		(cmd->op == CTL_SNAPSHOT && cmd->compress ? 11 : 0) +
		(base ? 8 + strlen(base) : 0) + 1;
	if (need > CONTROL_LINE_MAX)
		return failf(-EINVAL, e, "kiln-vmm control: command too long (%zu bytes)",
			     need - 1);
	l = malloc(need + 1);
	if (!l)
		return failf(-ENOMEM, e, "kiln-vmm control: out of memory");
	snprintf(l, need + 1, "%s%s%s%s%s%s\n", name,
		 cmd->op == CTL_SNAPSHOT && cmd->compress ? " --compress" : "",
		 base ? " --base " : "", base ? base : "", arg ? " " : "", arg ? arg : "");
	*line = l;
	*len = need;
	return 0;
}

/* A non-negative integer field (snapshot sizes). */
static int get_u64(json_t *o, const char *key, uint64_t *out, struct err *e)
{
	struct json_field_fail f;

	if (json_field_uint(o, key, true, 0, UINT64_MAX, 0, out, &f))
		return failf(-EPROTO, e, "kiln-vmm control: snapshot reply without a valid '%s'",
			     key);
	return 0;
}

/*
 * One reply line as a JSON object that says {"ok":true,...} into *o (the
 * caller decrefs it); -EPROTO when it is not one, -EREMOTEIO when
 * kiln-vmm refused the command (its message in e).
 */
static int ok_reply(const char *line, const char *op, json_t **out, struct err *e)
{
	json_error_t je;
	json_t *o = json_strict_loads(line, &je), *ok;
	int r;

	*out = NULL;
	if (!json_is_object(o)) {
		r = failf(-EPROTO, e,
			  "kiln-vmm control: the reply to %s is not a JSON object: '%.120s'", op,
			  line);
	} else if (!json_is_boolean(ok = json_object_get(o, "ok"))) {
		r = failf(-EPROTO, e, "kiln-vmm control: a reply without 'ok': '%.120s'", line);
	} else if (!json_is_true(ok)) {
		const char *msg = json_string_value(json_object_get(o, "error"));

		r = failf(-EREMOTEIO, e, "kiln-vmm: %s",
			  msg ? msg : "the command failed (no message)");
	} else {
		*out = o;
		return 0;
	}
	json_decref(o);
	return r;
}

static int state_reply(json_t *o, const char *line, enum control_op op, struct control_reply *out,
		       struct err *e)
{
	const char *state = json_string_value(json_object_get(o, "state"));
	json_t *ms, *base;

	if (!state || (strcmp(state, "running") && strcmp(state, "paused")))
		return failf(-EPROTO, e,
			     "kiln-vmm control: a reply without a valid 'state': '%.120s'", line);
	out->paused = strcmp(state, "paused") == 0;
	if (op != CTL_SNAPSHOT)
		return 0;
	if (get_u64(o, "memory_bytes", &out->memory_bytes, e) ||
	    get_u64(o, "memory_stored_bytes", &out->memory_stored_bytes, e) ||
	    get_u64(o, "state_bytes", &out->state_bytes, e) ||
	    get_u64(o, "disk_bytes", &out->disk_bytes, e))
		return -EPROTO;
	ms = json_object_get(o, "ms");
	if (!json_is_number(ms) || json_number_value(ms) < 0)
		return failf(-EPROTO, e, "kiln-vmm control: snapshot reply without a valid 'ms'");
	out->ms = json_number_value(ms);
	base = json_object_get(o, "base");
	if (json_is_string(base) && json_string_length(base) >= 1 &&
	    json_string_length(base) <= CONTROL_BASE_MAX && !strchr(json_string_value(base), '/'))
		snprintf(out->base, sizeof(out->base), "%s", json_string_value(base));
	else if (base && !json_is_null(base))
		return failf(
			-EPROTO, e,
			"kiln-vmm control: snapshot reply with a 'base' that is not a name or null");
	if (out->base[0] && get_u64(o, "dirty_pages", &out->dirty_pages, e))
		return -EPROTO;
	return 0;
}

static int firewall_reply(json_t *o, enum control_op op, struct control_reply *out, struct err *e)
{
	struct json_field_fail f;
	json_t *rules, *ctr;
	uint64_t cut;

	if (op == CTL_FIREWALL_SET) {
		if (json_field_uint(o, "cut", true, 0, SIZE_MAX, 0, &cut, &f))
			return failf(-EPROTO, e,
				     "kiln-vmm control: firewall-set reply without a valid 'cut'");
		out->cut = (size_t)cut;
		return 0;
	}
	rules = json_object_get(o, "rules");
	ctr = json_object_get(o, "counters");
	if (!json_is_object(rules) || !json_is_object(ctr))
		return failf(-EPROTO, e,
			     "kiln-vmm control: firewall-get reply without 'rules' and 'counters'");
	out->firewall = json_pack("{s:O,s:O}", "rules", rules, "counters", ctr);
	if (!out->firewall)
		return failf(-ENOMEM, e, "kiln-vmm control: out of memory");
	return 0;
}

int control_reply_parse(const char *line, enum control_op op, struct control_reply *out,
			struct err *e)
{
	bool known = (unsigned)op < sizeof(op_names) / sizeof(op_names[0]);
	json_t *o;
	int r;

	memset(out, 0, sizeof(*out));
	r = ok_reply(line, known ? op_names[op] : "?", &o, e);
	if (r)
		return r;
	if (!known)
		r = failf(-EPROTO, e, "kiln-vmm control: a reply to unknown operation %d", (int)op);
	else if (op == CTL_FIREWALL_SET || op == CTL_FIREWALL_GET)
		r = firewall_reply(o, op, out, e);
	else
		r = state_reply(o, line, op, out, e);
	json_decref(o);
	return r;
}
