/*
 * vmm_control: kilnd's client of a sandbox's kiln-vmm control socket
 * (kiln-vmm --control PATH; the words are vmm/control/control_proto.h's):
 * pause, resume, status, snapshot [--compress] DIR, firewall-set JSON,
 * firewall-get.
 *
 * Contract:
 *  - One command per connection: connect, send one line, read one reply
 *    line, close. The whole call shares one deadline (timeout_ms), so a
 *    hung or stopped kiln-vmm costs at most that long. kiln-vmm serves
 *    one client at a time: a call made while another runs waits behind
 *    it (kilnd runs one lifecycle operation per sandbox at a time).
 *  - vmm_control_line() and vmm_control_reply_parse() are pure and
 *    unit-tested: the line refuses a directory kiln-vmm could misread
 *    (relative, a newline or other control character, too long), and a
 *    reply is accepted only in its documented shape; kiln-vmm's own
 *    {"ok":false,"error":...} becomes an api_err quoting its message.
 *  - Errors: internal (kiln-vmm said no, or its reply is malformed, or the
 *    socket is gone: the VMM ended), timeout (no reply in time).
 */
#ifndef KILN_VMM_CONTROL_H
#define KILN_VMM_CONTROL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "api/kilnd/api_error.h"

/* A lifecycle command line with its newline (kiln-vmm takes up to
 * vmm/control/control_proto.h's CONTROL_LINE_MAX, 256 KiB + 64, for firewall-set). */
#define VMM_CONTROL_LINE_MAX 4096
/* kiln-vmm's lifecycle replies fit 2 KiB; anything longer is not one. */
#define VMM_CONTROL_REPLY_MAX 4096
/* firewall-get's reply: rules and counters, up to control_proto.h's
 * CONTROL_REPLY_MAX. */
#define VMM_CONTROL_FIREWALL_REPLY_MAX (1024 * 1024)
/* firewall-set's rule set on its line (net_rules.h's NET_RULES_TEXT_MAX). */
#define VMM_CONTROL_RULES_MAX (256 * 1024)
/* pause/resume/status answer at once on a healthy VMM. */
#define VMM_CONTROL_TIMEOUT_MS 30000

enum vmm_ctl_op { VMM_CTL_PAUSE, VMM_CTL_RESUME, VMM_CTL_STATUS, VMM_CTL_SNAPSHOT };

struct vmm_ctl_reply {
	bool paused; /* "state" after the command */
	/* snapshot only */
	uint64_t memory_bytes;        /* guest RAM */
	uint64_t memory_stored_bytes; /* of it, in the memory file */
	uint64_t state_bytes;
	uint64_t disk_bytes;          /* the overlay copies */
	double ms;                    /* paused, written and synced */
};

/* "pause" ... "snapshot [--compress] DIR" (no newline) into out[cap].
 * 0, or -1 with e (bad_field for dir, internal for a bad op). */
int vmm_control_line(enum vmm_ctl_op op, const char *dir, bool compress, char *out, size_t cap,
		     struct api_err *e);

/* Parse one reply line (without its newline) to `op`. 0 with *out, or -1 with e. */
int vmm_control_reply_parse(const char *line, enum vmm_ctl_op op, struct vmm_ctl_reply *out,
			    struct api_err *e);

/* Run one command on the control socket at sock_path. 0 with *out, or -1 with e. */
int vmm_control_call(const char *sock_path, enum vmm_ctl_op op, const char *dir, bool compress, int timeout_ms,
		     struct vmm_ctl_reply *out, struct api_err *e);

/*
 * "firewall-set RULES" (rules: one line of JSON) or, rules NULL,
 * "firewall-get"; malloc'd with room for the newline the call adds. NULL
 * with e: bad_field for rules holding a control character (a newline
 * would end the line) or longer than VMM_CONTROL_RULES_MAX, internal on OOM.
 */
char *vmm_control_firewall_line(const char *rules, struct api_err *e);

/*
 * Parse firewall-set's reply ({"ok":true,"cut":N} → *cut) or, set false,
 * firewall-get's ({"ok":true,"rules":{..},"counters":{..}} → *obj, a new
 * object of rules and counters). 0, or -1 with e.
 */
int vmm_control_firewall_reply_parse(const char *line, bool set, size_t *cut, json_t **obj, struct api_err *e);

/* Run firewall-set (rules) or firewall-get (rules NULL): as above. */
int vmm_control_firewall(const char *sock_path, const char *rules, int timeout_ms, size_t *cut, json_t **obj,
			 struct api_err *e);

#endif
