/*
 * park_proto: the one message kilnd sends a parked kiln-vmm (a zygote,
 * `kiln-vmm --park FD`; vmm/kiln-vmm/park.h), its codec linked by both
 * ends.
 *
 * Contract:
 *  - The message is one SOCK_SEQPACKET datagram: the arguments of
 *    kiln-vmm's command line, argv[0] first, each ended by a NUL, and no
 *    byte after the last NUL; 1 .. PARK_ARGS_MAX arguments, at most
 *    PARK_MSG_MAX bytes.
 *  - Beside it (SCM_RIGHTS) 0 .. PARK_FDS_MAX descriptors: descriptor i
 *    becomes number PARK_FD_BASE + i in kiln-vmm, which is how the
 *    arguments name it (`--share fd=100:kiln0`).
 *  - Pure: no I/O. park_msg_pack refuses what park_msg_split would, so a
 *    sender learns it before sending.
 */
#ifndef KILN_PARK_PROTO_H
#define KILN_PARK_PROTO_H

#include <stddef.h>

#include "lib/base/err.h"

#define PARK_MSG_MAX 65536
#define PARK_ARGS_MAX 256
#define PARK_FDS_MAX 16
#define PARK_FD_BASE 100
/* The process's name while parked (ps, pgrep -x). */
#define PARK_COMM "kiln-zygote"

/*
 * Split buf[0..len) into argv[0..*argc) (pointers into buf; argv has room
 * for PARK_ARGS_MAX + 1, argv[*argc] = NULL). 0, or -EINVAL with e.
 */
int park_msg_split(char *buf, size_t len, char **argv, int *argc, struct err *e);

/*
 * The message for argv (NULL-terminated) into a malloc'd *out of *len
 * bytes. 0, or -E2BIG (too many arguments or bytes) / -ENOMEM with e.
 */
int park_msg_pack(char *const *argv, char **out, size_t *len, struct err *e);

#endif
