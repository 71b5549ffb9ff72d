/*
 * vmm_control: kilnd's client of a sandbox's kiln-vmm control socket
 * (kiln-vmm --control PATH): pause, resume, status, snapshot [--compress]
 * DIR, firewall-set JSON, firewall-get. The words, the limits and the
 * checks of both directions are the socket's one codec,
 * vmm/control/control_proto.h, which kiln-vmm's server uses too; the
 * transport is vmm/control/control_client.h; this module maps its errors
 * to api_err.
 *
 * Contract:
 *  - One command per connection: connect, send one line, read one reply
 *    line (at most control_reply_max(op) bytes), close. The whole call
 *    shares one deadline (timeout_ms), so a hung or stopped kiln-vmm costs
 *    at most that long. kiln-vmm serves one client at a time: a call made
 *    while another runs waits behind it (kilnd runs one lifecycle
 *    operation per sandbox at a time).
 *  - A request kiln-vmm could misread (a relative DIR, a control
 *    character, too long) is refused before connecting: bad_field. A
 *    reply is accepted only in its documented shape; kiln-vmm's own
 *    {"ok":false,"error":...} becomes an api_err quoting its message.
 *  - Errors: internal (kiln-vmm said no, or its reply is malformed, or the
 *    socket is gone: the VMM ended), timeout (no reply in time).
 */
#ifndef KILN_VMM_CONTROL_H
#define KILN_VMM_CONTROL_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "api/kilnd/core/api_error.h"
#include "vmm/control/control_client.h"

/* pause/resume/status answer at once on a healthy VMM. */
#define VMM_CONTROL_TIMEOUT_MS CONTROL_CLIENT_TIMEOUT_MS

/* Run cmd on the control socket at sock_path. 0 with *out (out->firewall
 * is the caller's for firewall-get), or -1 with e. */
int vmm_control_run(const char *sock_path, const struct control_cmd *cmd, int timeout_ms,
		    struct control_reply *out, struct api_err *e);

/* pause, resume, status or snapshot (dir, compress): vmm_control_run's. */
int vmm_control_call(const char *sock_path, enum control_op op, const char *dir, bool compress,
		     int timeout_ms, struct control_reply *out, struct api_err *e);

/*
 * firewall-set (rules: one line of JSON; *cut) or, rules NULL,
 * firewall-get (*obj: a new object of rules and counters). 0, or -1 with e.
 */
int vmm_control_firewall(const char *sock_path, const char *rules, int timeout_ms, size_t *cut,
			 json_t **obj, struct api_err *e);

#endif
