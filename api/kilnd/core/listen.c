/* The API socket and peer checks; see listen.h. */
#include "api/kilnd/core/listen.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static int mkdir_parents(char *path)
{
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(path, 0755) < 0 && errno != EEXIST) {
			*p = '/';
			return -1;
		}
		*p = '/';
	}
	return 0;
}

int listen_unix(const char *path, bool set_gid, gid_t gid, int *fd_out, struct err *e)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char dir[sizeof(sa.sun_path)];
	struct stat st;
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path) || path[0] != '/') {
		err_set(e, EINVAL, "socket '%s': must be an absolute path shorter than %zu bytes",
			path, sizeof(sa.sun_path));
		return -1;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	snprintf(dir, sizeof(dir), "%s", path);
	if (mkdir_parents(dir) < 0) {
		err_set(e, errno, "socket '%s': cannot create its directory: %s", path,
			strerror(errno));
		return -1;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		err_set(e, errno, "socket: %s", strerror(errno));
		return -1;
	}
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			err_set(e, EINVAL,
				"socket '%s': something that is not a socket is there; remove it or pick another --socket",
				path);
			goto fail;
		}
		/* Someone answering there is a running kilnd: do not steal its socket. */
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
			err_set(e, EINVAL,
				"socket '%s': another process is listening there (another kilnd?)",
				path);
			goto fail;
		}
		close(fd);
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0 || unlink(path) < 0) {
			err_set(e, errno, "socket '%s': cannot replace the stale socket: %s", path,
				strerror(errno));
			goto fail;
		}
	}
	/* Bind with a tight umask, then open it to the group: no window in
	 * which the socket is reachable more widely than 0660. */
	mode_t old = umask(0177);
	int r = bind(fd, (struct sockaddr *)&sa, sizeof(sa));

	umask(old);
	if (r < 0) {
		err_set(e, errno, "socket '%s': bind: %s", path, strerror(errno));
		goto fail;
	}
	if ((set_gid && chown(path, (uid_t)-1, gid) < 0) || chmod(path, 0660) < 0) {
		err_set(e, errno, "socket '%s': setting its group/mode: %s", path, strerror(errno));
		unlink(path);
		goto fail;
	}
	if (listen(fd, SOMAXCONN) < 0) {
		err_set(e, errno, "socket '%s': listen: %s", path, strerror(errno));
		unlink(path);
		goto fail;
	}
	*fd_out = fd;
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	return -1;
}

bool peer_allowed(const struct kilnd_config *cfg, const struct peer *p)
{
	if (p->uid == 0 || p->uid == getuid())
		return true;
	for (size_t i = 0; i < cfg->nallow_uid; i++)
		if (cfg->allow_uid[i] == p->uid)
			return true;
	for (size_t i = 0; i < cfg->nallow_gid; i++)
		if (cfg->allow_gid[i] == p->gid)
			return true;
	return false;
}
