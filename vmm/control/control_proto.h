/*
 * control_proto: the words of kiln-vmm's control socket (--control PATH).
 *
 * One command per line (at most CONTROL_LINE_MAX bytes with its newline),
 * one reply line per command, on a Unix stream socket only kilnd (the
 * socket's owner) can open:
 *
 *   pause                      → {"ok":true,"state":"paused"}
 *   resume                     → {"ok":true,"state":"running"}
 *   status                     → {"ok":true,"state":"running"|"paused"}
 *   snapshot [--compress] DIR  → {"ok":true,"state":"paused","memory_bytes":N,...}
 *   firewall-set JSON          → {"ok":true,"cut":N}
 *   firewall-get               → {"ok":true,"rules":{...},"counters":{...}}
 *   anything else              → {"ok":false,"error":"<what, what to do>"}
 *
 * DIR is the rest of the line (it may hold spaces) and must be absolute.
 * firewall-set's JSON is the rest of the line: a rule set (net_rules.h) on
 * one line, at most NET_RULES_TEXT_MAX bytes, that replaces the packet
 * filter's rules at once; N is the number of established flows the new
 * rules cut. firewall-get answers net_filter_to_json() (rules, counters)
 * with the device's frame counters in counters.device; that reply line can
 * be long (up to CONTROL_REPLY_MAX).
 * Pure: parsing and reply formatting, unit-tested.
 */
#ifndef KILN_CONTROL_PROTO_H
#define KILN_CONTROL_PROTO_H

#include <stddef.h>

/* A firewall-set line carries a whole rule set (NET_RULES_TEXT_MAX, 256 KiB). */
#define CONTROL_LINE_MAX (256 * 1024 + 64)
#define CONTROL_REPLY_MAX (1024 * 1024)

enum control_op { CTL_PAUSE, CTL_RESUME, CTL_STATUS, CTL_SNAPSHOT, CTL_FIREWALL_SET, CTL_FIREWALL_GET };

struct control_cmd {
	enum control_op op;
	int compress;    /* snapshot --compress */
	const char *dir; /* snapshot: points into the parsed line */
	const char *json; /* firewall-set: the rule set, points into the parsed line */
};

/*
 * Parse one line (without its newline; modified in place). 0, or -EINVAL
 * with a one-line reason in why[n].
 */
int control_parse(char *line, struct control_cmd *out, char *why, size_t n);

/* `{"ok":false,"error":"<msg>"}\n` into buf[n], msg JSON-escaped; the length. */
size_t control_reply_error(char *buf, size_t n, const char *msg);

/*
 * firewall-get's reply: `{"ok":true,` + the members of the JSON object
 * `obj` (compact, one line) + newline, malloc'd; NULL when obj is not an
 * object ("{...}") or out of memory.
 */
char *control_reply_object(const char *obj);

/* JSON-escape s into buf[n] (truncated, always terminated); the length. */
size_t control_json_escape(char *buf, size_t n, const char *s);

#endif
