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
 *   snapshot [--compress] [--base NAME] DIR
 *                              → {"ok":true,"state":"paused","memory_bytes":N,...,
 *                                 "base":"NAME"|null,"dirty_pages":N}
 *   firewall-set JSON          → {"ok":true,"cut":N}
 *   firewall-get               → {"ok":true,"rules":{...},"counters":{...}}
 *   graft TAG NAME             → {"ok":true,"state":...}   (with a descriptor: below)
 *   ungraft TAG NAME           → {"ok":true,"state":...}
 *   anything else              → {"ok":false,"error":"<what, what to do>"}
 *
 * DIR is the rest of the line (it may hold spaces) and must be absolute.
 * NAME (1..63 bytes, no '/', space or control character) is a sibling of
 * DIR to layer the snapshot on (vm.h, vm_snapshot); the reply's "base"
 * says whether it was (null: a full snapshot).
 * firewall-set's JSON is the rest of the line: a rule set (net_rules.h) on
 * one line, at most NET_RULES_TEXT_MAX bytes, that replaces the packet
 * filter's rules at once; N is the number of established flows the new
 * rules cut. firewall-get answers net_filter_to_json() (rules, counters)
 * with the device's frame counters in counters.device; that reply line can
 * be long (up to CONTROL_REPLY_MAX).
 * graft's line comes with one descriptor (SCM_RIGHTS, in the same
 * sendmsg): a directory, attached as NAME in the root of the virtio-fs
 * share tagged TAG (kiln_vm_share_graft; kiln-runtime gives a pod's
 * further container to its sandbox's VM so). ungraft drops it. TAG is
 * 1..CONTROL_TAG_MAX bytes, NAME 1..CONTROL_NAME_MAX, each one word
 * without '/', NAME not "." or "..". A descriptor sent with any other
 * line is closed unused.
 *
 * The one codec of this socket: kiln-vmm's server (vmm/kiln-vmm/control.c)
 * parses requests with control_parse() and words errors with
 * control_reply_error(); kilnd's client (api/kilnd/supervision/vmm_control.c)
 * builds requests with control_request() and checks replies with
 * control_reply_parse(). The limits below are the only ones either end
 * uses. Pure: no I/O, unit-tested (tests/unit/test_control_proto.c, both
 * directions).
 */
#ifndef KILN_CONTROL_PROTO_H
#define KILN_CONTROL_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "lib/base/err.h"

/* firewall-set's rule set: lib/netrules/net_rules.h's NET_RULES_TEXT_MAX
 * (control_proto.c checks they agree). */
#define CONTROL_RULES_MAX (256 * 1024)
/* A request line with its newline: a firewall-set line carries a whole rule set. */
#define CONTROL_LINE_MAX (CONTROL_RULES_MAX + 64)
/* A reply line with its newline, but firewall-get's: a state, a snapshot's
 * sizes, a cut count or an error (its message escaped, at most 1 KiB). */
#define CONTROL_SHORT_REPLY_MAX 4096
/* firewall-get's reply: the rules and every counter. */
#define CONTROL_REPLY_MAX (1024 * 1024)
/* snapshot --base NAME: the longest NAME. */
#define CONTROL_BASE_MAX 63
/* graft TAG NAME: a virtio-fs tag (VIRTIO_FS_TAG_MAX), a path component. */
#define CONTROL_TAG_MAX 36
#define CONTROL_NAME_MAX 255

enum control_op {
	CTL_PAUSE,
	CTL_RESUME,
	CTL_STATUS,
	CTL_SNAPSHOT,
	CTL_FIREWALL_SET,
	CTL_FIREWALL_GET,
	CTL_GRAFT,
	CTL_UNGRAFT
};

struct control_cmd {
	enum control_op op;
	int compress;     /* snapshot --compress */
	const char *dir;  /* snapshot: points into the parsed line */
	const char *base; /* snapshot --base: the same; NULL when not given */
	const char *json; /* firewall-set: the rule set, points into the parsed line */
	const char *tag;  /* graft, ungraft: the share's tag, the same */
	const char *name; /* graft, ungraft: the name in its root, the same */
};

/*
 * Parse one line (without its newline; modified in place). 0, or -EINVAL
 * with a one-line reason in e.
 */
int control_parse(char *line, struct control_cmd *out, struct err *e);

/* The longest reply line (newline included) a client accepts for op. */
size_t control_reply_max(enum control_op op);

/*
 * The request line for cmd, newline included, malloc'd into *line with
 * its length in *len (without the NUL); what control_parse() takes back.
 * 0; -EINVAL with e for an argument the server would refuse or
 * misread (a snapshot DIR not absolute, a DIR or rule set holding a
 * control character, which would end or break the line; an empty or
 * oversize rule set; a line longer than CONTROL_LINE_MAX); -ENOTSUP for an
 * unknown op; -ENOMEM.
 */
int control_request(const struct control_cmd *cmd, char **line, size_t *len, struct err *e);

/* What a reply says; which fields are set depends on the op. */
struct control_reply {
	bool paused; /* "state" after pause, resume, status, snapshot */
	/* snapshot */
	uint64_t memory_bytes;        /* guest RAM */
	uint64_t memory_stored_bytes; /* of it, in the memory file */
	uint64_t state_bytes;
	uint64_t disk_bytes;  /* the overlay copies */
	double ms;            /* paused, written and synced */
	char base[64];        /* layered on this sibling; "" when full */
	uint64_t dirty_pages; /* layered: pages written since the base */
	/* firewall-set: established flows the new rules cut */
	size_t cut;
	/* firewall-get: a new object {"rules":{..},"counters":{..}}, the
	 * caller's reference; NULL for other ops */
	json_t *firewall;
};

/*
 * Check one reply line (without its newline) to op against the reply's
 * documented shape and fill *out. 0; -EREMOTEIO when kiln-vmm refused the
 * command (e = "kiln-vmm: <its message>"); -EPROTO when the line is
 * not a reply of that shape (e says what is wrong); -ENOMEM.
 */
int control_reply_parse(const char *line, enum control_op op, struct control_reply *out,
			struct err *e);

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
