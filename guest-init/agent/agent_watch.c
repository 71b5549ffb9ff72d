/*
 * watch: a directory's changes streamed to the host (docs/agent-protocol.md,
 * 7.8). The inotify descriptor, the directory scans of recursive watches
 * and the connection live here; what an inotify record means is decided by
 * agent_watch_events.c.
 *
 * One thread (the connection's) polls inotify and the connection. Lines
 * go out only when the socket takes them, so a host that does not read
 * fills the bounded queue (then one `overflow`), never the agent's memory.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "guest-init/agent/agent_files_ops.h"
#include "guest-init/agent/agent_serve.h"
#include "guest-init/agent/agent_watch_events.h"

/* What a watched directory reports. IN_EXCL_UNLINK: a deleted file that a
 * process still writes is no longer in the tree. */
#define WATCH_MASK                                                                          \
	(IN_CREATE | IN_DELETE | IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | \
	 IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_EXCL_UNLINK)
/* A rename's two records come from one syscall; when a read ends between
 * them the second follows within this time, or the file left the tree. */
#define WATCH_MOVE_WAIT_MS 20
/* Lines sent per wakeup before inotify is read again. */
#define WATCH_SEND_BATCH 64
#define WATCH_READ_BUF 65536

struct watcher {
	struct watch_state st;
	struct agent_conn *c;
	int ifd;
	const char *root;
	size_t root_len;
};

static void unwatch(void *arg, int wd)
{
	struct watcher *wt = arg;

	inotify_rm_watch(wt->ifd, wd);
}

/* Subdirectory names of abs (not followed), at most room of them. */
static char **subdirs(const char *abs, size_t room, size_t *n)
{
	int fd = open(abs, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	char **v = NULL, **nv;
	size_t cap = 0;
	struct dirent *de;
	DIR *d;

	*n = 0;
	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	while ((de = readdir(d)) && *n < room) {
		struct stat st;
		bool dir = de->d_type == DT_DIR;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (de->d_type == DT_UNKNOWN)
			dir = fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
				S_ISDIR(st.st_mode);
		if (!dir)
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 16;
			if (!(nv = realloc(v, cap * sizeof(*v))))
				break;
			v = nv;
		}
		if (!(v[*n] = strdup(de->d_name)))
			break;
		(*n)++;
	}
	closedir(d);
	return v;
}

/* Files of abs as creates (a directory new to a recursive watch). */
static void synth_files(struct watcher *wt, const char *abs, const char *rel, size_t len)
{
	int fd = open(abs, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct dirent *de;
	DIR *d;

	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(d))) {
		struct stat st;
		size_t plen;
		char *p;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (de->d_type == DT_DIR ||
		    (de->d_type == DT_UNKNOWN &&
		     fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		     S_ISDIR(st.st_mode)))
			continue; /* directories come with their own scan */
		p = watch_join(rel, len, de->d_name, strlen(de->d_name), &plen);
		if (p)
			watch_synth_create(&wt->st, p, plen, false);
		free(p);
	}
	closedir(d);
}

/*
 * Watch directory rel and, recursively, everything below it. synth: it is
 * new to the watch, so what it already holds is reported as creates (its
 * content may have been made before its watch existed). 0, or -errno for
 * the root.
 */
static int add_tree(struct watcher *wt, const char *rel, size_t len, bool synth)
{
	size_t n = 0;
	char *abs = malloc(wt->root_len + 1 + len + 1);
	char **names;
	int wd;

	if (abs)
		snprintf(abs, wt->root_len + 1 + len + 1, "%.*s%s%.*s", (int)wt->root_len, wt->root,
			 len && wt->root[wt->root_len - 1] != '/' ? "/" : "", (int)len, rel);
	if (!abs)
		return -ENOMEM;
	/* Below the root never follow a symlink: one swapped in for a new
	 * directory must not take the watch out of the tree. */
	wd = inotify_add_watch(wt->ifd, abs, WATCH_MASK | (len ? IN_DONT_FOLLOW : 0));
	if (wd < 0) {
		int e = -errno;

		/* A subdirectory the kernel's max_user_watches or the user's
		 * permissions keep unwatched: its events will be missing, so
		 * say so. One that vanished or was replaced meanwhile is not
		 * news (its delete comes). */
		if (len && (e == -ENOSPC || e == -EACCES))
			watch_overflow(&wt->st, "watch_limit");
		free(abs);
		return e;
	}
	if (watch_dir_add(&wt->st, wd, rel, len) < 0) {
		inotify_rm_watch(wt->ifd, wd);
		free(abs);
		return -ENOSPC;
	}
	if (synth)
		synth_files(wt, abs, rel, len);
	if (wt->st.recursive) {
		size_t room = wt->st.max_watches - wt->st.ndirs;

		names = subdirs(abs, room + 1, &n);
		for (size_t i = 0; i < n; i++) {
			size_t clen;
			char *child = watch_join(rel, len, names[i], strlen(names[i]), &clen);

			if (child) {
				if (synth)
					watch_synth_create(&wt->st, child, clen, true);
				add_tree(wt, child, clen, synth);
			}
			free(child);
			free(names[i]);
		}
		free(names);
	}
	free(abs);
	return 0;
}

static void new_dir(void *arg, const char *rel, size_t len)
{
	add_tree(arg, rel, len, true);
}

/* Read and translate what inotify has. false when inotify failed. */
static bool read_events(struct watcher *wt, uint8_t *buf)
{
	ssize_t n = read(wt->ifd, buf, WATCH_READ_BUF);
	size_t pos = 0, nlen;
	const char *name;
	uint32_t mask, cookie;
	int wd;

	if (n < 0)
		return errno == EAGAIN || errno == EINTR;
	while (watch_record_next(buf, (size_t)n, &pos, &wd, &mask, &cookie, &name, &nlen))
		watch_feed(&wt->st, wd, mask, cookie, name, nlen);
	if (watch_pending(&wt->st)) {
		struct pollfd p = { .fd = wt->ifd, .events = POLLIN };

		if (poll(&p, 1, WATCH_MOVE_WAIT_MS) <= 0)
			watch_flush(&wt->st);
	}
	return true;
}

/* Send queued events while the socket takes them. -errno when the host is gone. */
static int send_events(struct watcher *wt)
{
	const struct agent_fs_event *ev;
	struct agent_line l;
	int r;

	for (int i = 0; i < WATCH_SEND_BATCH && (ev = watch_peek(&wt->st)); i++) {
		struct pollfd p = { .fd = wt->c->fd, .events = POLLOUT };

		if (i && poll(&p, 1, 0) <= 0)
			break;
		r = agent_line_fs_event(&l, ev);
		watch_pop(&wt->st);
		if (r == -E2BIG || r == -ENOMEM) {
			watch_overflow(&wt->st, "queue");
			continue;
		}
		if ((r = agent_conn_send_line(wt->c, &l, r)) < 0)
			return r;
	}
	return 0;
}

static void run(struct watcher *wt)
{
	uint8_t *buf = malloc(WATCH_READ_BUF);
	struct agent_line l;

	if (!buf)
		return;
	for (;;) {
		const char *end = watch_ended(&wt->st);
		bool have = watch_peek(&wt->st) != NULL;
		struct pollfd p[2] = {
			{ .fd = end ? -1 : wt->ifd, .events = POLLIN },
			{ .fd = wt->c->fd, .events = POLLIN | (have ? POLLOUT : 0) },
		};

		if (!have && end) {
			agent_conn_send_line(wt->c, &l,
					     agent_line_watch_end(&l, wt->st.next_seq, end));
			break;
		}
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[1].revents & (POLLIN | POLLHUP | POLLERR)) {
			/* The host sends nothing on a watch: EOF cancels it. */
			if (!agent_conn_peer_gone(wt->c))
				agent_reply_error(
					wt->c, AGENT_E_UNEXPECTED_TYPE,
					"watch: the host sends nothing on a watch stream; close the connection to end it");
			break;
		}
		if ((p[0].revents & POLLIN) && !read_events(wt, buf))
			watch_end(&wt->st, "error");
		if ((p[1].revents & POLLOUT) && send_events(wt) < 0)
			break;
	}
	free(buf);
}

void agent_serve_watch(struct agent *a, struct agent_conn *c, struct agent_msg *m)
{
	const struct agent_watch_req *q = &m->u.watch;
	struct watcher wt = { .c = c, .root = q->path, .root_len = strlen(q->path) };
	struct fs_cred cred;
	struct agent_line l;
	int r;

	(void)a;
	/* The request's user must be able to read what it watches. */
	if ((r = fs_cred_enter(&cred, q->user)) < 0) {
		fs_send_errno(c, r, "watch '%.200s': cannot switch to the request's user", q->path);
		return;
	}
	if (watch_init(&wt.st, q->recursive, q->max_watches, q->queue) < 0) {
		fs_send_error(
			c, AGENT_E_BUSY,
			"watch '%.200s': out of memory for the event queue; retry with a smaller 'queue'",
			q->path);
		goto out;
	}
	wt.st.new_dir = new_dir;
	wt.st.unwatch = unwatch;
	wt.st.arg = &wt;
	/* Trailing slashes would make every joined path "//name". */
	while (wt.root_len > 1 && wt.root[wt.root_len - 1] == '/')
		wt.root_len--;
	wt.ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (wt.ifd < 0) {
		fs_send_errno(c, errno, "watch '%.200s': cannot create an inotify instance",
			      q->path);
		goto out_state;
	}
	r = add_tree(&wt, "", 0, false);
	if (r < 0) {
		if (r == -ENOSPC)
			fs_send_error(
				c, AGENT_E_BUSY,
				"watch '%.200s': the guest kernel's inotify watch limit is reached (fs.inotify.max_user_watches); end other watches",
				q->path);
		else
			fs_send_errno(c, r, "watch '%.200s'", q->path);
		goto out_fd;
	}
	if (agent_conn_send_line(c, &l,
				 agent_line_watching(&l, q->path, q->recursive,
						     (uint32_t)wt.st.ndirs)) == 0)
		run(&wt);
out_fd:
	close(wt.ifd);
out_state:
	watch_free(&wt.st);
out:
	fs_cred_leave(&cred);
}
