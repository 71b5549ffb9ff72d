/*
 * rt_shim_proto: the lines between kiln-runtime's commands and a
 * container's shim (design: docs/oci-runtime.md "State directory").
 *
 *  - create's ready pipe: the shim writes one line once the pid file is
 *    written, `ok`, or `err MESSAGE` when create failed (the parent
 *    prints MESSAGE and exits 1);
 *  - <id>/shim.sock (0600, the shim's): a command connects, sends one
 *    request line and reads one reply line, `ok` or `err MESSAGE`:
 *      start
 *      kill SIGNO [all]
 *      resize ROWS COLS
 *
 * Contract: pure. Lines end in '\n' and are at most RT_SHIM_LINE_MAX
 * bytes; decoding refuses anything else (one spelling per value: no
 * leading zero, one space between words). A message is cleaned to one
 * printable line (text_clean's term rule) when encoded.
 */
#ifndef KILN_RT_SHIM_PROTO_H
#define KILN_RT_SHIM_PROTO_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/base/err.h"

#define RT_SHIM_LINE_MAX (ERR_MSG_MAX + 8)
#define RT_SHIM_SOCK "shim.sock"

enum rt_shim_op { RT_SHIM_START, RT_SHIM_KILL, RT_SHIM_RESIZE };

struct rt_shim_req {
	enum rt_shim_op op;
	int signo;           /* kill: 0..64 (0 checks the container runs) */
	bool all;            /* kill: every process of the container */
	unsigned rows, cols; /* resize: 1..65535 */
};

/* The request's line into buf[RT_SHIM_LINE_MAX]; its length. */
size_t rt_shim_req_encode(const struct rt_shim_req *r, char *buf);

/* A request line (n bytes, '\n' included); 0, or -EINVAL with e. */
int rt_shim_req_decode(const char *buf, size_t n, struct rt_shim_req *r, struct err *e);

/* `ok`, or `err MESSAGE` when msg is not NULL; into buf[RT_SHIM_LINE_MAX]. */
size_t rt_shim_reply_encode(const char *msg, char *buf);

/* A reply line: 0 for ok, -EIO with e->msg the shim's message for err,
 * -EINVAL with e for anything else (an empty read: the shim died). */
int rt_shim_reply_decode(const char *buf, size_t n, struct err *e);

#endif
