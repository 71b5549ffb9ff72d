/* watch: inotify records -> fs_event queue, without syscalls; see agent_watch_events.h. */
#include "guest-init/agent/agent_watch_events.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>

int watch_init(struct watch_state *w, bool recursive, uint32_t max_watches, uint32_t queue)
{
	memset(w, 0, sizeof(*w));
	if (queue == 0 || queue > AGENT_WATCH_QUEUE_MAX || max_watches == 0)
		return -EINVAL;
	w->recursive = recursive;
	w->max_watches = max_watches;
	w->qcap = queue;
	w->q = calloc(queue, sizeof(*w->q));
	return w->q ? 0 : -ENOMEM;
}

static void item_free(struct watch_item *it)
{
	free(it->path);
	free(it->old);
	memset(it, 0, sizeof(*it));
}

void watch_free(struct watch_state *w)
{
	for (size_t i = 0; i < w->ndirs; i++)
		free(w->dirs[i].rel);
	free(w->dirs);
	for (size_t i = 0; i < w->qlen; i++)
		item_free(&w->q[(w->qhead + i) % w->qcap]);
	free(w->q);
	free(w->pend_path);
	free(w->last_path);
	memset(w, 0, sizeof(*w));
}

char *watch_join(const char *dir, size_t dlen, const char *name, size_t nlen, size_t *out_len)
{
	size_t n = dlen ? dlen + 1 + nlen : nlen;
	char *s;

	/* Both parts are at most a path long: no overflow before this check. */
	if (n > AGENT_PATH_MAX)
		return NULL;
	s = malloc(n + 1);
	if (!s)
		return NULL;
	if (dlen) {
		memcpy(s, dir, dlen);
		s[dlen] = '/';
		memcpy(s + dlen + 1, name, nlen);
	} else {
		memcpy(s, name, nlen);
	}
	s[n] = '\0';
	*out_len = n;
	return s;
}

/* ---- the queue ---- */

static struct watch_item *q_tail(struct watch_state *w)
{
	struct watch_item *it = &w->q[(w->qhead + w->qlen) % w->qcap];

	w->qlen++;
	return it;
}

/* The overflow that stands for the events dropped so far, once there is room. */
static void q_overflow_now(struct watch_state *w)
{
	struct watch_item *it;

	if (!w->ov_pending || w->qlen == w->qcap)
		return;
	it = q_tail(w);
	it->ev.kind = AGENT_FS_OVERFLOW;
	it->ev.seq = w->next_seq++;
	it->ev.reason = w->ov_reason;
	it->ev.dropped = w->ov_dropped;
	w->ov_pending = false;
	w->ov_reason = NULL;
	w->ov_dropped = 0;
}

void watch_overflow(struct watch_state *w, const char *reason)
{
	/* One marker for everything lost until it is delivered; the first
	 * reason names it (a kernel overflow behind a full queue is still
	 * "the host is slow"). */
	if (!w->ov_pending)
		w->ov_reason = reason;
	w->ov_pending = true;
	q_overflow_now(w);
}

/* Queue an event; takes path and old (NULL allowed for old). */
static void q_push(struct watch_state *w, enum agent_fs_kind kind, char *path, size_t plen,
		   char *old, size_t olen, bool is_dir)
{
	struct watch_item *it;
	size_t bytes = plen + olen;

	q_overflow_now(w);
	if (!path || w->ov_pending || w->qlen == w->qcap || bytes > WATCH_QUEUE_BYTES - w->qbytes) {
		free(path);
		free(old);
		if (!w->ov_pending)
			w->ov_reason = "queue";
		w->ov_pending = true;
		w->ov_dropped++;
		return;
	}
	it = q_tail(w);
	it->path = path;
	it->old = old;
	it->ev.kind = kind;
	it->ev.seq = w->next_seq++;
	it->ev.path = path;
	it->ev.path_len = plen;
	it->ev.old_path = old;
	it->ev.old_len = olen;
	it->ev.is_dir = is_dir;
	w->qbytes += bytes;
}

const struct agent_fs_event *watch_peek(struct watch_state *w)
{
	if (w->qlen == 0)
		q_overflow_now(w);
	return w->qlen ? &w->q[w->qhead].ev : NULL;
}

void watch_pop(struct watch_state *w)
{
	struct watch_item *it;

	if (!w->qlen)
		return;
	it = &w->q[w->qhead];
	w->qbytes -= it->ev.path_len + it->ev.old_len;
	item_free(it);
	w->qhead = (w->qhead + 1) % w->qcap;
	w->qlen--;
}

/* ---- coalescing ---- */

static bool last_is(const struct watch_state *w, const char *path, size_t len)
{
	return w->last_valid && w->last_len == len && memcmp(w->last_path, path, len) == 0;
}

static void set_last(struct watch_state *w, enum agent_fs_kind kind, const char *path, size_t len)
{
	char *copy = malloc(len + 1);

	free(w->last_path);
	w->last_path = copy;
	w->last_valid = copy != NULL;
	if (copy) {
		memcpy(copy, path, len);
		copy[len] = '\0';
	}
	w->last_len = len;
	w->last_kind = kind;
	w->run_open = kind == AGENT_FS_MODIFY;
}

/* Queue a copy of path as kind, and remember it as the last event. */
static void emit(struct watch_state *w, enum agent_fs_kind kind, const char *path, size_t len,
		 bool is_dir)
{
	char *copy = malloc(len + 1);

	if (copy) {
		memcpy(copy, path, len);
		copy[len] = '\0';
	}
	q_push(w, kind, copy, len, NULL, 0, is_dir);
	set_last(w, kind, path, len);
}

/*
 * IN_MODIFY comes for every write(); IN_CLOSE_WRITE once per writer. A
 * host wants "this file changed", not one line per write: the first
 * IN_MODIFY of a run is reported, the rest of the run and the close that
 * ends it are not. A close without a reported write (a file opened for
 * writing, as touch does, or written before the watch began) reports one
 * modify, except right after the file's create.
 */
static void modify(struct watch_state *w, const char *path, size_t len, bool close)
{
	bool same = last_is(w, path, len);

	if (!close) {
		if (same && w->last_kind == AGENT_FS_MODIFY && w->run_open)
			return;
		emit(w, AGENT_FS_MODIFY, path, len, false);
		return;
	}
	if (same &&
	    (w->last_kind == AGENT_FS_CREATE || (w->last_kind == AGENT_FS_MODIFY && w->run_open))) {
		/* The close is covered; a later one is news again. */
		w->last_kind = AGENT_FS_MODIFY;
		w->run_open = false;
		return;
	}
	emit(w, AGENT_FS_MODIFY, path, len, false);
	w->run_open = false;
}

/* ---- directories ---- */

static ssize_t dir_index(const struct watch_state *w, int wd)
{
	for (size_t i = 0; i < w->ndirs; i++)
		if (w->dirs[i].wd == wd)
			return (ssize_t)i;
	return -1;
}

const struct watch_dir *watch_dir_find(const struct watch_state *w, int wd)
{
	ssize_t i = dir_index(w, wd);

	return i < 0 ? NULL : &w->dirs[i];
}

static char *dup_n(const char *s, size_t n)
{
	char *d = malloc(n + 1);

	if (d) {
		memcpy(d, s, n);
		d[n] = '\0';
	}
	return d;
}

int watch_dir_add(struct watch_state *w, int wd, const char *rel, size_t len)
{
	ssize_t i = dir_index(w, wd);
	char *copy;

	if (i >= 0) {
		if (!(copy = dup_n(rel, len)))
			return -ENOMEM;
		w->dir_bytes += len;
		w->dir_bytes -= w->dirs[i].len;
		free(w->dirs[i].rel);
		w->dirs[i].rel = copy;
		w->dirs[i].len = len;
		return 0;
	}
	if (w->ndirs >= w->max_watches || len > WATCH_DIR_BYTES - w->dir_bytes) {
		watch_overflow(w, "watch_limit");
		return -ENOSPC;
	}
	if (w->ndirs == w->dirs_cap) {
		size_t cap = w->dirs_cap ? w->dirs_cap * 2 : 16;
		struct watch_dir *d = realloc(w->dirs, cap * sizeof(*d));

		if (!d)
			return -ENOMEM;
		w->dirs = d;
		w->dirs_cap = cap;
	}
	if (!(copy = dup_n(rel, len)))
		return -ENOMEM;
	w->dirs[w->ndirs++] = (struct watch_dir){ .wd = wd, .rel = copy, .len = len };
	w->dir_bytes += len;
	return 0;
}

static void dir_remove_at(struct watch_state *w, size_t i)
{
	w->dir_bytes -= w->dirs[i].len;
	free(w->dirs[i].rel);
	w->dirs[i] = w->dirs[--w->ndirs];
}

/* Is rel the directory p or below it? */
static bool under(const char *rel, size_t rlen, const char *p, size_t plen)
{
	return rlen >= plen && memcmp(rel, p, plen) == 0 && (rlen == plen || rel[plen] == '/');
}

/* The subtree at p left the tree: forget it and have its watches removed. */
static void dir_forget_tree(struct watch_state *w, const char *p, size_t plen)
{
	for (size_t i = 0; i < w->ndirs;) {
		if (w->dirs[i].len && under(w->dirs[i].rel, w->dirs[i].len, p, plen)) {
			if (w->unwatch)
				w->unwatch(w->arg, w->dirs[i].wd);
			dir_remove_at(w, i);
		} else {
			i++;
		}
	}
}

/* The subtree at from is now at to: rewrite its paths. */
static void dir_move_tree(struct watch_state *w, const char *from, size_t flen, const char *to,
			  size_t tlen)
{
	for (size_t i = 0; i < w->ndirs; i++) {
		struct watch_dir *d = &w->dirs[i];
		size_t n;
		char *s;

		if (!d->len || !under(d->rel, d->len, from, flen))
			continue;
		n = tlen + (d->len - flen);
		s = n <= AGENT_PATH_MAX ? malloc(n + 1) : NULL;
		if (!s) {
			/* Cannot name it any more: stop watching it. */
			if (w->unwatch)
				w->unwatch(w->arg, d->wd);
			dir_remove_at(w, i--);
			watch_overflow(w, "watch_limit");
			continue;
		}
		memcpy(s, to, tlen);
		memcpy(s + tlen, d->rel + flen, d->len - flen);
		s[n] = '\0';
		w->dir_bytes += n;
		w->dir_bytes -= d->len;
		free(d->rel);
		d->rel = s;
		d->len = n;
	}
}

/* ---- records ---- */

bool watch_record_next(const uint8_t *buf, size_t len, size_t *pos, int *wd, uint32_t *mask,
		       uint32_t *cookie, const char **name, size_t *n)
{
	struct inotify_event ev;
	size_t p = *pos;

	if (p > len || len - p < sizeof(ev))
		return false;
	memcpy(&ev, buf + p, sizeof(ev));
	if (ev.len > len - p - sizeof(ev))
		return false;
	*wd = ev.wd;
	*mask = ev.mask;
	*cookie = ev.cookie;
	*name = (const char *)buf + p + sizeof(ev);
	*n = strnlen(*name, ev.len);
	*pos = p + sizeof(ev) + ev.len;
	return true;
}

bool watch_pending(const struct watch_state *w)
{
	return w->pend;
}

void watch_flush(struct watch_state *w)
{
	if (!w->pend)
		return;
	w->pend = false;
	/* Moved out of the tree: gone from the watch's point of view. */
	emit(w, AGENT_FS_DELETE, w->pend_path, w->pend_len, w->pend_dir);
	if (w->pend_dir)
		dir_forget_tree(w, w->pend_path, w->pend_len);
	free(w->pend_path);
	w->pend_path = NULL;
}

void watch_end(struct watch_state *w, const char *reason)
{
	if (!w->end_reason)
		w->end_reason = reason;
}

const char *watch_ended(const struct watch_state *w)
{
	return w->end_reason;
}

void watch_synth_create(struct watch_state *w, const char *rel, size_t len, bool is_dir)
{
	emit(w, AGENT_FS_CREATE, rel, len, is_dir);
}

/* Events on a watched directory itself (no name). */
static void self_event(struct watch_state *w, size_t i, uint32_t mask)
{
	bool root = w->dirs[i].len == 0;

	if (mask & IN_IGNORED) {
		/* The kernel dropped the watch: the directory is gone, or
		 * its filesystem. */
		if (root)
			watch_end(w, "deleted");
		dir_remove_at(w, i);
		return;
	}
	if (!root)
		return; /* a subdirectory's own delete/move: its parent reports it */
	if (mask & IN_UNMOUNT)
		watch_end(w, "unmounted");
	else if (mask & IN_DELETE_SELF)
		watch_end(w, "deleted");
	else if (mask & IN_MOVE_SELF)
		watch_end(w, "moved");
}

void watch_feed(struct watch_state *w, int wd, uint32_t mask, uint32_t cookie, const char *name,
		size_t n)
{
	bool is_dir = (mask & IN_ISDIR) != 0;
	size_t plen;
	ssize_t i;
	char *path;

	if (w->end_reason)
		return;
	if (mask & IN_Q_OVERFLOW) {
		watch_flush(w);
		watch_overflow(w, "kernel");
		return;
	}
	i = dir_index(w, wd);
	if (i < 0)
		return; /* a watch already forgotten (moved out, removed) */
	if (mask & (IN_IGNORED | IN_UNMOUNT | IN_DELETE_SELF | IN_MOVE_SELF) || n == 0) {
		/* The flush may drop directories (a subtree moved out), which
		 * moves entries of the table: look wd up again after it. */
		watch_flush(w);
		if ((i = dir_index(w, wd)) >= 0)
			self_event(w, (size_t)i, mask);
		return;
	}
	path = watch_join(w->dirs[i].rel, w->dirs[i].len, name, n, &plen);
	if (!path) {
		watch_flush(w);
		watch_overflow(w, "queue");
		return;
	}
	if ((mask & IN_MOVED_TO) && w->pend && w->pend_cookie == cookie) {
		w->pend = false;
		if (is_dir)
			dir_move_tree(w, w->pend_path, w->pend_len, path, plen);
		q_push(w, AGENT_FS_RENAME, path, plen, w->pend_path, w->pend_len, is_dir);
		w->pend_path = NULL;
		/* path now belongs to the queue (or was freed): remember a copy. */
		w->last_valid = false;
		return;
	}
	watch_flush(w);
	if (mask & IN_MOVED_FROM) {
		w->pend = true;
		w->pend_cookie = cookie;
		w->pend_path = path;
		w->pend_len = plen;
		w->pend_dir = is_dir;
		return;
	}
	if (mask & (IN_CREATE | IN_MOVED_TO)) {
		emit(w, AGENT_FS_CREATE, path, plen, is_dir);
		if (is_dir && w->recursive && w->new_dir)
			w->new_dir(w->arg, path, plen);
	} else if (mask & IN_DELETE) {
		emit(w, AGENT_FS_DELETE, path, plen, is_dir);
	} else if (mask & (IN_MODIFY | IN_CLOSE_WRITE)) {
		if (!is_dir)
			modify(w, path, plen, (mask & IN_MODIFY) == 0);
	}
	free(path);
}
