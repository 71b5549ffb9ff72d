/* kiln-runtime state, list, ps, features and spec: what is read; see
 * rt_command.h. */
#include "api/runtime/rt_command.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/base/fd_io.h"

int rt_command_state(const struct rt_ctx *x, struct err *e)
{
	const struct rt_cmd *c = x->cmd;
	struct rt_state_rec rec;
	struct rt_state_view v = { &rec, 0, 0 };
	int rootfd, dirfd, r;
	char *s;

	r = rt_command_open(c, &rootfd, &dirfd, NULL, &rec, e);
	if (!r) {
		v.status = rt_dir_status(&rec, &v.pid);
		r = rt_state_render(&v, &s, e);
	}
	if (!r)
		r = rt_command_print(s);
	rt_command_close(rootfd, dirfd, -1, &rec);
	return r;
}

/* One record for `list`, 0 with *rec or <0 when it cannot be read (a
 * create in progress or dying: skipped, as runc skips what it cannot
 * load). */
static int list_one(int rootfd, const char *id, struct rt_state_rec *rec)
{
	int d, r = rt_dir_open(rootfd, id, &d, NULL);

	if (r < 0)
		return r;
	r = rt_dir_read_state(d, id, rec, NULL);
	close(d);
	return r;
}

int rt_command_list(const struct rt_ctx *x, struct err *e)
{
	const struct rt_cmd *c = x->cmd;
	struct rt_state_rec *recs = NULL;
	struct rt_state_view *views = NULL;
	char **ids = NULL, *s;
	size_t n = 0, k = 0;
	int rootfd, r;

	r = rt_dir_open_root(c->g.root, false, &rootfd, e);
	if (r == -ENOENT)
		r = 0, rootfd = -1; /* nothing was ever created */
	if (!r && rootfd >= 0)
		r = rt_dir_list(rootfd, &ids, &n, e);
	if (!r && n) {
		recs = calloc(n, sizeof(*recs));
		views = calloc(n, sizeof(*views));
		if (!recs || !views)
			r = err_set(e, ENOMEM, "out of memory listing containers");
	}
	for (size_t i = 0; !r && i < n; i++) {
		if (list_one(rootfd, ids[i], &recs[k]) < 0)
			continue;
		views[k].rec = &recs[k];
		views[k].status = rt_dir_status(&recs[k], &views[k].pid);
		k++;
	}
	if (!r)
		r = rt_state_render_list(views, k, c->format == RT_FORMAT_JSON, c->quiet, &s, e);
	if (!r)
		r = rt_command_print(s);
	for (size_t i = 0; i < k; i++)
		rt_state_rec_free(&recs[i]);
	free(recs);
	free(views);
	rt_dir_list_free(ids, n);
	if (rootfd >= 0)
		close(rootfd);
	return r;
}

int rt_command_features(const struct rt_ctx *x, struct err *e)
{
	const struct rt_cmd *c = x->cmd;
	char *s;

	(void)c;
	if (rt_state_render_features(&s, e) < 0)
		return -ENOMEM;
	return rt_command_print(s);
}

/* `spec`: a starting config.json in the bundle, never over one. */
int rt_command_spec(const struct rt_ctx *x, struct err *e)
{
	const struct rt_cmd *c = x->cmd;
	char *s;
	int dirfd, fd, r;

	if (c->rootless_spec)
		return err_set(e, EINVAL, "spec --rootless: kiln-runtime runs as root only");
	dirfd = open(c->bundle, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return err_set(e, errno, "--bundle %.200s: %s", c->bundle, strerror(errno));
	fd = openat(dirfd, "config.json", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		    0644);
	close(dirfd);
	if (fd < 0 && errno == EEXIST)
		return err_set(e, EEXIST, "spec: %.200s/config.json exists: remove it first",
			       c->bundle);
	if (fd < 0)
		return err_set(e, errno, "spec: %.200s/config.json: %s", c->bundle,
			       strerror(errno));
	r = rt_state_render_spec(&s, e);
	if (!r && fd_io_write_all(fd, s, strlen(s)) < 0)
		r = err_set(e, EIO, "spec: writing config.json: %s", strerror(errno));
	if (!r)
		free(s);
	close(fd);
	return r;
}

/* `ps`: the host pids standing for the container's processes, the
 * shims' (the engine's view of the container; its guest pids would name
 * unrelated host processes): a JSON array (containerd's shim reads it),
 * or a PID column. */
int rt_command_ps(const struct rt_ctx *x, struct err *e)
{
	const struct rt_cmd *c = x->cmd;
	struct rt_held h;
	int r = rt_command_hold(c, &h, e);

	if (r < 0) {
		rt_command_release(&h);
		return r;
	}
	printf(c->format == RT_FORMAT_JSON ? "[" : "PID\n");
	if (h.st != RT_STATUS_STOPPED)
		printf(c->format == RT_FORMAT_JSON ? "%d" : "%d\n", h.rec.shim.pid);
	printf(c->format == RT_FORMAT_JSON ? "]\n" : "");
	rt_command_release(&h);
	return fflush(stdout) == 0 ? 0 : -EIO;
}
