/* The state directory's lock; see state_lock.h. */
#include "api/kilnd/core/state_lock.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "lib/base/fd_io.h"
#include "lib/base/num_parse.h"
#include "lib/base/text_clean.h"

/* Larger than any content kilnd writes (a pid and a socket path). */
#define LOCK_CONTENT_MAX 512

void state_lock_format(pid_t pid, const char *socket_path, char *out, size_t cap)
{
	snprintf(out, cap, "pid %ld\nsocket %s\n", (long)pid, socket_path);
}

/* The value of the line "<key> value" in buf[0..len), or NULL; *n its length. */
static const char *line_value(const char *buf, size_t len, const char *key, size_t *n)
{
	size_t k = strlen(key);

	for (size_t at = 0; at < len;) {
		const char *nl = memchr(buf + at, '\n', len - at);
		size_t end = nl ? (size_t)(nl - buf) : len;

		if (end - at > k && memcmp(buf + at, key, k) == 0 && buf[at + k] == ' ') {
			*n = end - at - k - 1;
			return buf + at + k + 1;
		}
		at = end + 1;
	}
	return NULL;
}

void state_lock_parse(const char *buf, size_t len, pid_t *pid, char *socket, size_t cap)
{
	const char *v;
	uint64_t p;
	size_t n;

	*pid = 0;
	if (cap)
		socket[0] = '\0';
	v = line_value(buf, len, "pid", &n);
	if (v && num_parse_u64_n(v, n, 10, 1, INT_MAX, &p) == 0)
		*pid = (pid_t)p;
	v = line_value(buf, len, "socket", &n);
	/* Someone else's bytes, bound for a terminal: cleaned. */
	if (v)
		text_clean_term(socket, cap, v, n);
}

/* The refusal: who holds the lock on fd (F_GETLK), with the file's words. */
static void refusal(int fd, const char *state_dir, struct err *e)
{
	struct flock fl = { .l_type = F_RDLCK, .l_whence = SEEK_SET };
	char buf[LOCK_CONTENT_MAX], sock[256], who[48] = "another kilnd";
	ssize_t n = pread(fd, buf, sizeof(buf), 0);
	pid_t pid;

	state_lock_parse(buf, n > 0 ? (size_t)n : 0, &pid, sock, sizeof(sock));
	/* The kernel knows the holder; l_pid is 0 when it runs in another
	 * pid namespace, and then the file's word is all there is. */
	if (fcntl(fd, F_GETLK, &fl) == 0 && fl.l_type != F_UNLCK && fl.l_pid > 0)
		pid = fl.l_pid;
	if (pid)
		snprintf(who, sizeof(who), "kilnd pid %ld", (long)pid);
	err_set(e, EINVAL,
		"state directory %s is in use by %s (its socket %s); stop it or use another --state-dir",
		state_dir, who, sock[0] ? sock : "unknown");
}

/* socket_path made absolute against the working directory, for the file. */
static void absolute_socket(const char *socket_path, char *out, size_t cap)
{
	char cwd[PATH_MAX];

	if (socket_path[0] == '/' || !getcwd(cwd, sizeof(cwd)))
		snprintf(out, cap, "%s", socket_path);
	else
		snprintf(out, cap, "%s/%s", strcmp(cwd, "/") ? cwd : "", socket_path);
}

int state_lock_take(const char *state_dir, const char *socket_path, int *fd, struct err *e)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	char path[PATH_MAX], sock[PATH_MAX + 8], text[LOCK_CONTENT_MAX + PATH_MAX];
	int lfd, r;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", state_dir, STATE_LOCK_FILE) >=
	    sizeof(path)) {
		err_set(e, EINVAL, "--state-dir '%s': too long for its lock file", state_dir);
		return -1;
	}
	lfd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (lfd < 0 && errno == EACCES) {
		/* Not ours to write (another user's kilnd): still say whose it is. */
		lfd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (lfd >= 0) {
			struct flock q = { .l_type = F_RDLCK, .l_whence = SEEK_SET };

			if (fcntl(lfd, F_GETLK, &q) == 0 && q.l_type != F_UNLCK)
				refusal(lfd, state_dir, e);
			else
				err_set(e, EINVAL,
					"cannot open %s for writing: %s (run kilnd as the user that owns --state-dir)",
					path, strerror(EACCES));
			close(lfd);
			return -1;
		}
		errno = EACCES;
	}
	if (lfd < 0) {
		err_set(e, errno, "cannot open the state directory's lock %s: %s", path,
			strerror(errno));
		return -1;
	}
	if (fcntl(lfd, F_SETLK, &fl) < 0) {
		if (errno == EAGAIN || errno == EACCES)
			refusal(lfd, state_dir, e);
		else
			err_set(e, errno, "cannot lock %s: %s", path, strerror(errno));
		close(lfd);
		return -1;
	}
	absolute_socket(socket_path, sock, sizeof(sock));
	state_lock_format(getpid(), sock, text, sizeof(text));
	r = ftruncate(lfd, 0) < 0 ? -errno : fd_io_pwrite_all(lfd, text, strlen(text), 0);
	if (r < 0) {
		err_set(e, -r, "cannot write %s: %s", path, strerror(-r));
		close(lfd);
		return -1;
	}
	*fd = lfd;
	return 0;
}
