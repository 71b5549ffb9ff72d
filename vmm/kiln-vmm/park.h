/*
 * park: kiln-vmm started before its sandbox is known (kilnd's zygotes,
 * docs/architecture.md "The fork path"). `kiln-vmm --park FD` waits on
 * the SOCK_SEQPACKET socket FD for one message, its real command line,
 * and then goes on exactly as a kiln-vmm started with that command line:
 * every step of setup.h (files opened, VM made, jail entered) happens
 * after the message, so a parked kiln-vmm holds nothing of any sandbox.
 *
 * The message (kilnd's, still hostile input: a malformed one is refused
 * whole):
 *  - its bytes are the arguments, each ended by a NUL, argv[0] first;
 *    1 .. PARK_ARGS_MAX of them, PARK_MSG_MAX bytes at most, no byte after
 *    the last NUL;
 *  - it carries 0 .. PARK_FDS_MAX descriptors (SCM_RIGHTS): descriptor i
 *    becomes number PARK_FD_BASE + i in kiln-vmm, which is how the
 *    arguments name them (`--share fd=100:kiln0`).
 * The socket's end (kilnd gone before it sent anything) ends the parked
 * kiln-vmm quietly.
 */
#ifndef KILN_VMM_PARK_H
#define KILN_VMM_PARK_H

#include <stddef.h>

#include "lib/base/err.h"

#define PARK_MSG_MAX 65536
#define PARK_ARGS_MAX 256
#define PARK_FDS_MAX 16
#define PARK_FD_BASE 100
/* The process's name while parked and after (ps, pgrep -x). */
#define PARK_COMM "kiln-zygote"

/*
 * Split buf[0..len) into argv[0..*argc) (pointers into buf; argv has room
 * for PARK_ARGS_MAX + 1, argv[*argc] = NULL). 0, or -EINVAL with e.
 */
int park_msg_split(char *buf, size_t len, char **argv, int *argc, struct err *e);

/*
 * `--park FD` as argv[1..2]: wait for the message and put its command
 * line in *argc_out and *argv_out (allocated for the process's life). 0: go
 * on with it; 1: the socket ended first (exit quietly); -errno with e.
 */
int park_wait(int argc, char **argv, int *argc_out, char ***argv_out, struct err *e);

#endif
