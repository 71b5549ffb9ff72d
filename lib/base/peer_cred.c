/* A Unix socket's peer; see peer_cred.h. */
#include "lib/base/peer_cred.h"

#include <errno.h>
#include <sys/socket.h>

int peer_of(int fd, struct peer *p)
{
	struct ucred uc;
	socklen_t len = sizeof(uc);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) < 0)
		return -errno;
	p->pid = uc.pid;
	p->uid = uc.uid;
	p->gid = uc.gid;
	return 0;
}
