/*
 * rt_shim_sock: <id>/shim.sock, where a container's shim takes start,
 * kill and resize from kiln-runtime's commands (rt_shim_proto's lines).
 * One request per connection: connect, send the line, read the reply
 * line, close.
 *
 * Contract: thin syscalls. The socket is made 0600 by the shim (root's:
 * only root commands reach it; the peer's credentials are not needed
 * beyond that) and named through the state directory's descriptor
 * (/proc/self/fd/N/shim.sock), so a long --root never meets sun_path's
 * limit. A call waits at most its timeout for the reply.
 */
#ifndef KILN_RT_SHIM_SOCK_H
#define KILN_RT_SHIM_SOCK_H

#include "api/runtime/rt_shim_proto.h"
#include "lib/base/err.h"

#define RT_SHIM_CALL_MS 10000 /* a command's wait for the shim's reply */

/* The shim's listening socket in dirfd (*fd; a stale one is replaced). */
int rt_shim_sock_listen(int dirfd, int *fd, struct err *e);

/* Accept one connection on lfd and read its request line (*conn stays
 * open for the reply). -EINVAL with e for a bad line (conn closed). */
int rt_shim_sock_accept(int lfd, int *conn, struct rt_shim_req *r, struct err *e);

/* Reply on conn (msg NULL: ok) and close it. */
int rt_shim_sock_reply(int conn, const char *msg);

/* A command's call: the request to the shim of the container in dirfd,
 * the reply waited for up to timeout_ms. 0 (ok), -EIO with the shim's
 * message, -ECONNREFUSED/-ENOENT when no shim listens. */
int rt_shim_sock_call(int dirfd, const struct rt_shim_req *r, int timeout_ms, struct err *e);

#endif
