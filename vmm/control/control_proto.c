/* kiln-vmm's control commands: parsing and replies (see control_proto.h). */
#include "vmm/control/control_proto.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(char *why, size_t n, const char *msg, const char *arg)
{
	snprintf(why, n, msg, arg);
	return -EINVAL;
}

int control_parse(char *line, struct control_cmd *out, char *why, size_t n)
{
	char *rest;
	size_t len = strlen(line);

	memset(out, 0, sizeof(*out));
	if (len && line[len - 1] == '\r')
		line[--len] = 0;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)line[i] < 0x20)
			return fail(why, n, "control: a command may not hold control characters%s", "");
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
	else
		return fail(why, n, "control: unknown command '%.64s' (pause, resume, status, snapshot [--compress] DIR, firewall-set JSON, firewall-get)",
			    line);
	if (out->op == CTL_FIREWALL_SET) {
		if (!rest || !*rest)
			return fail(why, n, "control: firewall-set needs a rule set: firewall-set {\"allow\":[...]} on one line%s", "");
		out->json = rest;
		return 0;
	}
	if (out->op != CTL_SNAPSHOT) {
		if (rest)
			return fail(why, n, "control: '%s' takes no argument", line);
		return 0;
	}
	if (rest && strncmp(rest, "--compress ", 11) == 0) {
		out->compress = 1;
		rest += 11;
	}
	if (!rest || !*rest)
		return fail(why, n, "control: snapshot needs a directory: snapshot [--compress] DIR%s", "");
	if (rest[0] != '/')
		return fail(why, n, "control: snapshot directory '%.200s' must be an absolute path", rest);
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
