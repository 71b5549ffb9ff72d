/*
 * kiln firewall (docs/api.md, "Networking and firewall"): the command
 * line and the rule `allow`/`deny` add; see cli_body.h.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/kiln/cli_body.h"
#include "lib/base/fd_io.h"
#include "lib/base/json.h"
#include "lib/base/num_parse.h"

/* kilnd takes 256 KiB of rules; leave room for whitespace. */
#define FW_FILE_MAX (1u << 20)

int cli_firewall_load(const char *file, json_t **out, struct err *e)
{
	int fd = strcmp(file, "-") == 0 ? 0 : open(file, O_RDONLY | O_CLOEXEC);
	char *buf = NULL;
	ssize_t have = -ENOMEM;
	json_error_t je;
	int rc;

	*out = NULL;
	if (fd < 0) {
		rc = -errno;
		err_set(e, EINVAL, "%s: %s", CLI_ECHO(file), strerror(-rc));
		return rc;
	}
	buf = malloc(FW_FILE_MAX + 1);
	if (buf)
		have = fd_io_read_full(fd, buf, FW_FILE_MAX + 1);
	if (fd > 0)
		close(fd);
	if (have < 0) {
		err_set(e, EINVAL, "%s: %s", CLI_ECHO(file), strerror((int)-have));
		rc = (int)have;
	} else if (have > FW_FILE_MAX) {
		err_set(e, EINVAL, "%s: more than %u bytes", CLI_ECHO(file), FW_FILE_MAX);
		rc = -EINVAL;
	} else {
		*out = json_strict_loadb(buf, (size_t)have, &je);
		if (!*out)
			err_set(e, EINVAL, "%s: not JSON: %s (line %d)", CLI_ECHO(file), je.text,
				je.line);
		rc = *out ? 0 : -EINVAL;
	}
	free(buf);
	return rc;
}

static const char *const protos[] = { "tcp", "udp", "icmp", "icmpv6", "any", NULL };

/* A port 1..65535 in [s, s+n). */
static long port_of(const char *s, size_t n)
{
	uint64_t v;

	/* At most 7 characters, as before: "0000080" but no longer. */
	if (n >= 8 || num_parse_u64_n(s, n, 10, 1, 65535, &v))
		return -1;
	return (long)v;
}

/* An address or block: what kilnd's cidr takes (it checks the rest). */
static bool is_cidr(const char *s)
{
	char a[64];
	const char *slash = strchr(s, '/');
	size_t n = slash ? (size_t)(slash - s) : strlen(s);
	unsigned char buf[16];

	if (n == 0 || n >= sizeof(a))
		return false;
	memcpy(a, s, n);
	a[n] = '\0';
	return inet_pton(AF_INET, a, buf) == 1 || inet_pton(AF_INET6, a, buf) == 1;
}

json_t *cli_firewall_rule(const char *spec, struct err *e)
{
	char t[320], *p, *ports = NULL, *target = t;
	const char *proto = NULL;
	json_t *r;

	if (strlen(spec) >= sizeof(t) || !spec[0]) {
		err_set(e, EINVAL, "rule '%.64s': expected CIDR|HOST[:PORTS][/PROTO]", spec);
		return NULL;
	}
	snprintf(t, sizeof(t), "%s", spec);
	/* /PROTO at the end (a CIDR's /N is a number). */
	p = strrchr(t, '/');
	if (p) {
		for (size_t i = 0; protos[i]; i++) {
			if (strcmp(p + 1, protos[i]) == 0) {
				proto = protos[i];
				*p = '\0';
				break;
			}
		}
	}
	/* [IPv6]:PORTS, else HOST:PORTS or A.B.C.D/N:PORTS; a bare IPv6 has no ports. */
	if (t[0] == '[') {
		p = strchr(t, ']');
		if (!p || (p[1] && p[1] != ':')) {
			err_set(e, EINVAL, "rule '%.64s': '[' without ']' or ']:PORTS'", spec);
			return NULL;
		}
		*p = '\0';
		target = t + 1;
		if (p[1] == ':')
			ports = p + 2;
	} else if ((p = strchr(t, ':')) && !strchr(p + 1, ':')) {
		*p = '\0';
		ports = p + 1;
	}
	if (!target[0]) {
		err_set(e, EINVAL, "rule '%.64s': no address or host", spec);
		return NULL;
	}
	r = json_object();
	if (!r) {
		err_set(e, EINVAL, "out of memory");
		return NULL;
	}
	json_object_set_new(r, is_cidr(target) ? "cidr" : "host", json_string(target));
	if (ports) {
		char *dash = strchr(ports, '-');
		long lo = port_of(ports, dash ? (size_t)(dash - ports) : strlen(ports));
		long hi = dash ? port_of(dash + 1, strlen(dash + 1)) : lo;

		if (lo < 0 || hi < 0 || hi < lo) {
			err_set(e, EINVAL,
				"rule '%.64s': ports '%.32s' is not a port or a range LO-HI of 1..65535",
				spec, ports);
			json_decref(r);
			return NULL;
		}
		json_object_set_new(r, "ports", dash ? json_string(ports) : json_integer(lo));
	}
	if (proto)
		json_object_set_new(r, "proto", json_string(proto));
	if (!json_object_get(r, is_cidr(target) ? "cidr" : "host")) {
		err_set(e, EINVAL, "rule '%.64s': not valid UTF-8", spec);
		json_decref(r);
		return NULL;
	}
	return r;
}

int cli_firewall_parse(int argc, char **argv, struct cli_globals *g, struct cli_firewall_req *r,
		       struct err *e)
{
	char *pos[3];
	struct cli_getopt sc;
	int npos = 0, opt;
	static const struct {
		const char *word;
		enum cli_fw_op op;
		int nargs; /* after the word */
	} ops[] = { { "show", CLI_FW_SHOW, 1 },
		    { "log", CLI_FW_LOG, 1 },
		    { "set", CLI_FW_SET, 2 },
		    { "allow", CLI_FW_ALLOW, 2 },
		    { "deny", CLI_FW_DENY, 2 } };

	memset(r, 0, sizeof(*r));
	cli_getopt_init(&sc, argc, argv, cli_global_options, g, e);
	while ((opt = cli_getopt_next(&sc)) != CLI_GETOPT_DONE) {
		if (opt == CLI_GETOPT_ERROR)
			return -1;
		if (opt != CLI_GETOPT_WORD || npos == 3) {
			err_set(e, EINVAL, "too many arguments");
			return -1;
		}
		pos[npos++] = (char *)sc.value;
	}
	argc = npos;
	argv = pos;
	if (argc < 1) {
		err_set(e, EINVAL,
			"expected show ID, log ID, set ID FILE|-, allow ID RULE or deny ID RULE");
		return -1;
	}
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		if (strcmp(argv[0], ops[i].word))
			continue;
		if (argc - 1 != ops[i].nargs) {
			err_set(e, EINVAL, "firewall %s takes %s", ops[i].word,
				ops[i].nargs == 1                 ? "ID"
					: ops[i].op == CLI_FW_SET ? "ID FILE|-"
								  : "ID CIDR|HOST[:PORTS][/PROTO]");
			return -1;
		}
		r->op = ops[i].op;
		r->id = argv[1];
		if (!r->id[0] || strchr(r->id, '/') || strchr(r->id, '?')) {
			err_set(e, EINVAL, "'%.64s' is not a sandbox id", r->id);
			return -1;
		}
		if (r->op == CLI_FW_SET) {
			r->file = argv[2];
		} else if (r->op != CLI_FW_SHOW && r->op != CLI_FW_LOG) {
			r->rule = cli_firewall_rule(argv[2], e);
			if (!r->rule)
				return -1;
		}
		return 0;
	}
	err_set(e, EINVAL, "unknown firewall command '%.32s' (show, log, set, allow, deny)",
		argv[0]);
	return -1;
}

int cli_firewall_add(json_t *rules, enum cli_fw_op op, const json_t *rule, struct err *e)
{
	const char *list = op == CLI_FW_DENY ? "deny" : "allow";
	json_t *a;

	if (!json_is_object(rules)) {
		err_set(e, EINVAL, "kilnd's rules are not an object");
		return -1;
	}
	a = json_object_get(rules, list);
	if (!a) {
		a = json_array();
		if (!a || json_object_set_new(rules, list, a)) {
			err_set(e, EINVAL, "out of memory");
			return -1;
		}
	}
	if (!json_is_array(a) || json_array_append(a, (json_t *)rule)) {
		err_set(e, EINVAL, "kilnd's '%s' is not a list", list);
		return -1;
	}
	return 0;
}
