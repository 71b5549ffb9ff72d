/*
 * peer_cred: who is at the other end of a connected Unix socket
 * (SO_PEERCRED: the credentials the peer had when it connected, which it
 * cannot forge). kilnd's HTTP server admits connections by them.
 */
#ifndef KILN_PEER_CRED_H
#define KILN_PEER_CRED_H

#include <sys/types.h>

struct peer {
	pid_t pid;
	uid_t uid;
	gid_t gid;
};

/* 0 with *p, or -errno (not a Unix socket, ...). */
int peer_of(int fd, struct peer *p);

#endif
