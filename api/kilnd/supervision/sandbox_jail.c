/* Jail directories and ids of sandboxes; see sandbox_jail.h. */
#include "api/kilnd/supervision/sandbox_jail.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "api/kilnd/supervision/jail_ids.h"
#include "lib/base/num_parse.h"
#include "api/kilnd/registry/sandbox_impl.h"

/* The jail id given last (<state-dir>/jail-ids.last, root's, outside
 * every jail), or 0: a missing or damaged file starts the ring over. */
static uint32_t last_id_read(const struct kilnd *d)
{
	char path[PATH_MAX + 32], buf[16] = { 0 };
	uint64_t v;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/jail-ids.last", d->cfg.state_dir);
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n > 0 && buf[n - 1] == '\n')
		buf[n - 1] = '\0';
	return n > 0 && num_parse_u64(buf, 10, 1, UINT32_MAX - 1, &v) == 0 ? (uint32_t)v : 0;
}

/* Record it: written aside and renamed, so a crash leaves the old one. */
static void last_id_write(const struct kilnd *d, uint32_t id)
{
	char path[PATH_MAX + 32], tmp[PATH_MAX + 40], buf[16];
	int fd, len = snprintf(buf, sizeof(buf), "%u\n", id);

	snprintf(path, sizeof(path), "%s/jail-ids.last", d->cfg.state_dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	unlink(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	if (write(fd, buf, (size_t)len) != len || close(fd) < 0 || rename(tmp, path) < 0)
		unlink(tmp);
}

/* An id for sb from --jail-ids, none of another live sandbox's, the next
 * round the range from the last one given. Under the lock. */
static int assign_id_locked(struct sandbox *sb, struct api_err *e)
{
	struct kilnd *d = sb->d;
	uint32_t *used = calloc(d->reg.n + 1, sizeof(*used)), id;
	size_t n = 0;

	if (!used) {
		api_err_set(e, API_E_INTERNAL, "sandbox %s: out of memory", sb->rec.id);
		return -1;
	}
	for (size_t i = 0; i < d->reg.n; i++)
		if (d->reg.v[i] != sb && d->reg.v[i]->rec.jail_id)
			used[n++] = d->reg.v[i]->rec.jail_id;
	id = jail_id_pick(d->cfg.jail_id_first, d->cfg.jail_id_count, used, n, last_id_read(d));
	free(used);
	if (!id) {
		api_err_set(e, API_E_LIMIT_REACHED,
			    "sandbox %s: all %u jail ids (--jail-ids) are held by sandboxes; delete one, or give kilnd a larger range",
			    sb->rec.id, d->cfg.jail_id_count);
		return -1;
	}
	sb->rec.jail_id = id;
	last_id_write(d, id);
	sandbox_persist_locked(sb);
	return 0;
}

/* mkdir (existing is fine) and make it a directory of owner:owner, mode. */
static int own_dir(const char *path, uid_t owner, mode_t mode, struct api_err *e)
{
	int fd;

	if (mkdir(path, mode) < 0 && errno != EEXIST)
		goto fail;
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		goto fail;
	if (fchown(fd, owner, (gid_t)owner) < 0 || fchmod(fd, mode) < 0) {
		int err = errno;

		close(fd);
		errno = err;
		goto fail;
	}
	close(fd);
	return 0;
fail:
	api_err_set(e, API_E_INTERNAL, "sandbox directory %s: %s", path, strerror(errno));
	return -1;
}

int sandbox_jail_prepare(struct sandbox *sb, char *vm, size_t cap, uint32_t *id, struct api_err *e)
{
	struct kilnd *d = sb->d;
	char sub[PATH_MAX];
	uid_t owner = 0;
	int r = 0;

	*id = 0;
	if (!d->cfg.no_jail) {
		if (d->cfg.jail_unavailable[0]) {
			api_err_set(e, API_E_JAIL_UNAVAILABLE, "%s", d->cfg.jail_unavailable);
			return -1;
		}
		kilnd_lock(d);
		if (!sb->rec.jail_id)
			r = assign_id_locked(sb, e);
		owner = sb->rec.jail_id;
		kilnd_unlock(d);
		if (r)
			return -1;
	}
	*id = owner;
	if (sandbox_pathf(vm, cap, "%s/vm", sb->dir)) {
		api_err_set(e, API_E_INTERNAL, "sandbox %s: its directory's path is too long",
			    sb->rec.id);
		return -1;
	}
	if (own_dir(vm, 0, 0755, e))
		return -1;
	if (sandbox_pathf(sub, sizeof(sub), "%s/checkpoints", vm) || own_dir(sub, owner, 0700, e) ||
	    sandbox_pathf(sub, sizeof(sub), "%s/hibernate", vm) || own_dir(sub, owner, 0700, e))
		return -1;
	return 0;
}

int sandbox_jail_open(const struct sandbox *sb, const char *rel, enum open_beneath_kind kind,
		      struct stat *st, struct err *e)
{
	char vm[PATH_MAX];
	struct err be;
	int vfd, fd;

	if (sandbox_pathf(vm, sizeof(vm), "%s/vm", sb->dir))
		return err_set(e, ENAMETOOLONG, "sandbox %s: its directory's path is too long",
			       sb->rec.id);
	/* The sandbox directory and vm/ are root's: the jail can change
	 * nothing above what open_beneath walks. */
	vfd = open(vm, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (vfd < 0)
		return err_set(e, errno, "%s: %s", vm, strerror(errno));
	fd = open_beneath(vfd, rel, kind, st, &be);
	close(vfd);
	return fd < 0 ? err_set(e, -fd, "%s: %s", vm, be.msg) : fd;
}

int sandbox_jail_listen(struct sandbox *sb, const char *path, const char *what, struct api_err *e)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		api_err_set(e, API_E_SPAWN_FAILED,
			    "sandbox %s: %s: the socket path %s is too long (a shorter --state-dir)",
			    sb->rec.id, what, path);
		return -1;
	}
	strcpy(sa.sun_path, path);
	unlink(path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    (sb->rec.jail_id &&
	     fchownat(AT_FDCWD, path, sb->rec.jail_id, sb->rec.jail_id, AT_SYMLINK_NOFOLLOW) < 0) ||
	    fchmodat(AT_FDCWD, path, 0600, 0) < 0 || listen(fd, SOMAXCONN) < 0) {
		api_err_set(e, API_E_SPAWN_FAILED, "sandbox %s: %s: socket %s: %s", sb->rec.id,
			    what, path, strerror(errno));
		if (fd >= 0)
			close(fd);
		unlink(path);
		return -1;
	}
	return fd;
}
