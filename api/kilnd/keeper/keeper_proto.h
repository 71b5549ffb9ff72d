/*
 * keeper_proto: what a keeper (keeper.h) and kilnd say to each other,
 * and the one reader of /proc/PID/stat's start time both use.
 *
 * Contract:
 *  - Pure: formatting and parsing of whole lines, no I/O.
 *  - The hello (on each connection to keeper.sock) and the exit line
 *    (sent on the connection when the VMM ended, and the whole content
 *    of <dir>/vmm.exit) are one line each, at most KEEPER_LINE_MAX bytes
 *    with their newline:
 *      kiln-keeper 1 pid=P start=T
 *      kiln-keeper 1 exit pid=P start=T status=S signal=G
 *    P the VMM's pid (1 .. KEEPER_PID_MAX), T its start time in clock
 *    ticks after boot (/proc/PID/stat field 22), S its exit status
 *    (0..255, or -1 when a signal ended it) and G that signal (1..64;
 *    0 with a status). A parser takes exactly that: the fields in that
 *    order, decimal without sign or spaces, one newline at the end and
 *    nothing after it. Anything else is -EINVAL (the files live in a
 *    directory a jailed VMM cannot write, but kilnd reads them as
 *    hostile all the same: a damaged file must not be a wrong status).
 *  - The version (1) is the first field after the name: a kilnd meeting
 *    a keeper of another version does not reattach it.
 *  - A parked keeper (keeper.h, --park) sends the hello on its ready
 *    socket once its kiln-vmm waits, and takes one claim there, a message
 *    of exactly "claim DIR" (DIR absolute, below PATH_MAX, no NUL or
 *    newline; no newline at the end) with DIR's descriptor beside it.
 */
#ifndef KILN_KEEPER_PROTO_H
#define KILN_KEEPER_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "lib/base/proc_stat.h"

#define KEEPER_PROTO_VERSION 1
#define KEEPER_LINE_MAX 160
/* The kernel's PID_MAX_LIMIT (4 Mi): no pid is larger. */
#define KEEPER_PID_MAX PROC_PID_MAX
/* The socket and the status file, in the sandbox's directory. */
#define KEEPER_SOCK_NAME "keeper.sock"
#define KEEPER_EXIT_NAME "vmm.exit"
/* Descriptors a keeper passes on to kiln-vmm (--keep), at most. */
#define KEEPER_MAX_KEEP 64

struct keeper_vmm_id {
	int pid;
	uint64_t start; /* clock ticks after boot */
};

struct keeper_exit {
	struct keeper_vmm_id id;
	int status; /* 0..255, or -1: a signal */
	int signal; /* 1..64, or 0 */
};

/* The hello into out[cap]: its length, or -ENOSPC. */
int keeper_hello_format(char *out, size_t cap, const struct keeper_vmm_id *id);
/* buf[0..n) must be exactly one hello line. 0 with *id, or -EINVAL. */
int keeper_hello_parse(const char *buf, size_t n, struct keeper_vmm_id *id);

/* The exit line into out[cap]: its length, or -ENOSPC / -EINVAL (x out of range). */
int keeper_exit_format(char *out, size_t cap, const struct keeper_exit *x);
/* buf[0..n) must be exactly one exit line. 0 with *x, or -EINVAL. */
int keeper_exit_parse(const char *buf, size_t n, struct keeper_exit *x);

/* The claim for dir into out[cap]: its length (no NUL counted), or -ENOSPC / -EINVAL. */
int keeper_claim_format(char *out, size_t cap, const char *dir);
/* buf[0..n) must be exactly one claim. 0 with dir[cap] filled, or -EINVAL. */
int keeper_claim_parse(const char *buf, size_t n, char *dir, size_t cap);

#endif
