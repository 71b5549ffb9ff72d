/*
 * agent_fs: per-thread credentials for file operations, and the helpers
 * the file operations share (contract in agent_files_ops.h).
 *
 * Why raw syscalls: Linux keeps credentials per thread, and setfsuid,
 * setfsgid and setgroups act on the calling thread only. glibc's
 * setgroups() (like setuid()) is made POSIX-process-wide by signalling
 * every thread, which would change the credentials of connections that
 * are running as someone else. syscall() reaches the per-thread call.
 *
 * Setting the fsuid to non-zero also clears the filesystem capabilities
 * (CAP_DAC_OVERRIDE, CAP_CHOWN, CAP_FOWNER, ...) from this thread's
 * effective set (capabilities(7), "Effect of user ID changes"), so the
 * kernel applies the user's permissions; setting it back to 0 restores
 * them. Other capabilities stay, which is why the operations use nothing
 * that depends on them.
 */
#include "guest-init/agent/agent_files_ops.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ---- credentials ---- */

enum { CRED_NONE, CRED_UMASK, CRED_GROUPS, CRED_FSGID, CRED_FSUID };

/* setfsuid/setfsgid return the previous id and cannot report failure;
 * asking with an invalid id (-1) returns the current one unchanged. */
static uid_t cur_fsuid(void)
{
	return (uid_t)syscall(SYS_setfsuid, -1);
}

static gid_t cur_fsgid(void)
{
	return (gid_t)syscall(SYS_setfsgid, -1);
}

int fs_cred_enter(struct fs_cred *c, enum agent_user user)
{
	int n;

	memset(c, 0, sizeof(*c));
	c->uid = user == AGENT_USER_ROOT ? 0 : AGENT_USER_UID;
	c->gid = user == AGENT_USER_ROOT ? 0 : AGENT_USER_GID;

	/* A private fs_struct makes the umask this thread's own (threads
	 * share it by default: CLONE_FS). A no-op once the thread has one. */
	if (unshare(CLONE_FS) < 0)
		return -errno;
	c->old_umask = umask(0);
	c->stage = CRED_UMASK;

	/* "user" has no supplementary groups (section 6). PID 1 starts with
	 * none and kiln-init never adds any, but a thread that has some
	 * (the unit tests run under a login) must not lend them to the user. */
	n = getgroups(0, NULL);
	if (n < 0)
		goto fail;
	if (n > 0 && c->uid != 0) {
		c->groups = malloc(sizeof(gid_t) * (size_t)n);
		if (!c->groups) {
			errno = ENOMEM;
			goto fail;
		}
		c->ngroups = getgroups(n, c->groups);
		if (c->ngroups < 0 || syscall(SYS_setgroups, 0, NULL) < 0)
			goto fail;
	}
	c->stage = CRED_GROUPS;

	/* gid first: after the fsuid switch this thread could still change
	 * it (CAP_SETGID is not a filesystem capability), but in this order
	 * no instant has the user's uid with root's group. */
	c->old_fsgid = (gid_t)syscall(SYS_setfsgid, c->gid);
	if (cur_fsgid() != c->gid) {
		errno = EPERM;
		goto fail;
	}
	c->stage = CRED_FSGID;
	c->old_fsuid = (uid_t)syscall(SYS_setfsuid, c->uid);
	if (cur_fsuid() != c->uid) {
		errno = EPERM;
		goto fail;
	}
	c->stage = CRED_FSUID;
	return 0;

fail:
	n = -errno;
	fs_cred_leave(c);
	return n;
}

void fs_cred_leave(struct fs_cred *c)
{
	/* Reverse order: the fsuid goes back to root first, which restores
	 * the capabilities the other steps need. */
	if (c->stage >= CRED_FSUID)
		syscall(SYS_setfsuid, c->old_fsuid);
	if (c->stage >= CRED_FSGID)
		syscall(SYS_setfsgid, c->old_fsgid);
	if (c->stage >= CRED_GROUPS && c->ngroups > 0)
		syscall(SYS_setgroups, (size_t)c->ngroups, c->groups);
	if (c->stage >= CRED_UMASK)
		umask(c->old_umask);
	free(c->groups);
	c->groups = NULL;
	c->ngroups = 0;
	c->stage = CRED_NONE;
}

/* ---- errors ---- */

static const char *hint(enum agent_code code)
{
	switch (code) {
	case AGENT_E_NOT_FOUND:
		return "check the path";
	case AGENT_E_EXISTS:
		return "remove it first or choose another name";
	case AGENT_E_NOT_DIRECTORY:
		return "a component of the path is not a directory";
	case AGENT_E_IS_DIRECTORY:
		return "name a file, not a directory";
	case AGENT_E_NOT_EMPTY:
		return "remove its contents first (remove with \"recursive\": true)";
	case AGENT_E_PERMISSION_DENIED:
		return "the request's user may not do this; change the permissions or send \"user\": \"root\"";
	case AGENT_E_READ_ONLY:
		return "the filesystem is mounted read-only";
	case AGENT_E_NO_SPACE:
		return "free some space in the guest";
	case AGENT_E_BUSY:
		return "retry later";
	default:
		return "see the guest's kernel log for details";
	}
}

static int send_error_v(struct agent_conn *c, enum agent_code code, const char *tail,
			const char *fmt, va_list ap)
{
	char what[AGENT_ERR_MESSAGE_MAX];
	struct agent_line l;

	vsnprintf(what, sizeof(what), fmt, ap);
	if (tail)
		return agent_conn_send_line(c, &l,
					    agent_line_error(&l, code, "%s: %s", what, tail));
	return agent_conn_send_line(c, &l, agent_line_error(&l, code, "%s", what));
}

int fs_send_errno(struct agent_conn *c, int err, const char *fmt, ...)
{
	enum agent_code code;
	char tail[256];
	va_list ap;
	int r;

	if (err < 0)
		err = -err;
	code = agent_errno_code(err);
	snprintf(tail, sizeof(tail), "%s; %s", strerror(err), hint(code));
	va_start(ap, fmt);
	r = send_error_v(c, code, tail, fmt, ap);
	va_end(ap);
	return r;
}

int fs_send_error(struct agent_conn *c, enum agent_code code, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = send_error_v(c, code, NULL, fmt, ap);
	va_end(ap);
	return r;
}

/* ---- helpers ---- */

int fs_openat2(int dirfd, const char *path, int flags, mode_t mode, uint64_t resolve)
{
	struct open_how how = {
		.flags = (uint64_t)(flags | O_CLOEXEC),
		.mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0,
		.resolve = resolve,
	};
	long fd;

	for (int tries = 0;; tries++) {
		fd = syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
		/* EAGAIN: a rename raced with a `..` walk under RESOLVE_BENEATH,
		 * and the kernel could not prove the walk stayed inside
		 * (openat2(2)). Retrying is what the man page suggests. */
		if (fd >= 0 || errno != EAGAIN || tries >= 8)
			break;
	}
	return fd < 0 ? -errno : (int)fd;
}

int fs_dir_mode_fixup(int dirfd, const char *name, mode_t mode)
{
	char proc[32];
	int fd, r = 0;

	if (!(mode & 06000))
		return 0;
	/* chmod through /proc/self/fd of an O_PATH descriptor: it changes the
	 * directory we opened with O_NOFOLLOW and needs no read permission on
	 * it (fchmod needs a real descriptor, fchmodat would follow a symlink
	 * swapped in since the mkdir). */
	fd = openat(dirfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	if (chmod(proc, mode & 07777) < 0)
		r = -errno;
	close(fd);
	return r;
}

int fs_mkdir_p(const char *path, mode_t mode)
{
	char buf[AGENT_PATH_MAX + 1];
	size_t n = strlen(path);

	if (n > AGENT_PATH_MAX)
		return -ENAMETOOLONG;
	memcpy(buf, path, n + 1);
	/* Walk prefixes at each '/' and at the end. mkdir first, then look:
	 * EEXIST is the common case and needs no separate check. */
	for (size_t i = 1; i <= n; i++) {
		char saved = buf[i];
		struct stat st;

		if (saved != '/' && saved != '\0')
			continue;
		if (buf[i - 1] == '/')
			continue; /* "//" or a trailing '/' */
		buf[i] = '\0';
		if (mkdir(buf, mode & 07777) == 0) {
			int r = fs_dir_mode_fixup(AT_FDCWD, buf, mode);

			if (r < 0)
				return r;
		} else if (errno != EEXIST) {
			return -errno;
		} else if (stat(buf, &st) < 0) {
			return -errno;
		} else if (!S_ISDIR(st.st_mode)) {
			return -EEXIST;
		}
		buf[i] = saved;
	}
	return 0;
}

int64_t fs_mtime_ns(const struct stat *st)
{
	int64_t ns;

	if (__builtin_mul_overflow((int64_t)st->st_mtim.tv_sec, 1000000000, &ns) ||
	    __builtin_add_overflow(ns, st->st_mtim.tv_nsec, &ns))
		return st->st_mtim.tv_sec < 0 ? INT64_MIN : INT64_MAX;
	return ns;
}
