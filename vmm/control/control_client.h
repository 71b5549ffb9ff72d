/*
 * control_client: the client side of kiln-vmm's control socket (kiln-vmm
 * --control PATH): pause, resume, status, snapshot [--compress] DIR,
 * firewall-set JSON, firewall-get, graft and ungraft. The words, the limits and the checks
 * of both directions are the socket's one codec, control_proto.h, which
 * kiln-vmm's server uses too; this is the transport. kilnd
 * (api/kilnd/supervision/vmm_control) and kiln-runtime both call it.
 *
 * Contract:
 *  - One command per connection: connect, send one line, read one reply
 *    line (at most control_reply_max(op) bytes), close. The whole call
 *    shares one deadline (timeout_ms, <= 0: CONTROL_CLIENT_TIMEOUT_MS),
 *    so a hung or stopped kiln-vmm costs at most that long. kiln-vmm
 *    serves one client at a time: a call made while another runs waits
 *    behind it.
 *  - 0 with *out, or with e: -EINVAL for a request kiln-vmm could misread
 *    (a relative DIR, a control character, too long), refused before
 *    connecting; -ETIMEDOUT when no reply came in time; -EPROTO for
 *    kiln-vmm's own {"ok":false,"error":...} (quoted in e) or a reply not
 *    in its documented shape; another -errno when the socket is gone (the
 *    VMM ended).
 */
#ifndef KILN_CONTROL_CLIENT_H
#define KILN_CONTROL_CLIENT_H

#include "lib/base/err.h"
#include "vmm/control/control_proto.h"

/* pause/resume/status answer at once on a healthy VMM. */
#define CONTROL_CLIENT_TIMEOUT_MS 30000

int control_client_run(const char *sock_path, const struct control_cmd *cmd, int timeout_ms,
		       struct control_reply *out, struct err *e);

/* The same, with send_fd (>= 0) sent along with the line (SCM_RIGHTS):
 * graft's directory. The caller keeps its own send_fd. */
int control_client_run_fd(const char *sock_path, const struct control_cmd *cmd, int send_fd,
			  int timeout_ms, struct control_reply *out, struct err *e);

#endif
