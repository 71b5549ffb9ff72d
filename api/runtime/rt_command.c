/* What kiln-runtime's commands share; see rt_command.h. */
#include "api/runtime/rt_command.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lib/base/fd_io.h"
#include "lib/base/text_clean.h"

void rt_command_log_open(struct rt_ctx *x)
{
	const struct rt_cmd *c = x->cmd;

	x->log_fd = -1;
	if (c->g.log)
		x->log_fd = open(c->g.log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (c->g.log && x->log_fd < 0)
		fprintf(stderr, "kiln-runtime: --log %s: %s (logging to stderr only)\n", c->g.log,
			strerror(errno));
}

/* One --log line (and, for an error, the same text on stderr). */
void rt_command_report(const struct rt_ctx *x, enum rt_log_level l, const char *msg)
{
	const struct rt_cmd *c = x->cmd;
	char line[RT_LOG_LINE_MAX], t[RT_LOG_TIME_MAX];
	struct timespec now;
	int n;

	if (l == RT_LOG_ERROR) {
		fputs("kiln-runtime: ", stderr);
		text_clean_term_fput(stderr, msg);
		fputc('\n', stderr);
	}
	if (x->log_fd < 0 || (l == RT_LOG_DEBUG && !c->g.debug))
		return;
	clock_gettime(CLOCK_REALTIME, &now);
	rt_log_time(t, &now, false);
	n = rt_log_line(line, sizeof(line), c->g.log_format, l, t, msg);
	if (n > 0)
		fd_io_write_all(x->log_fd, line, (size_t)n);
}

int rt_command_not_yet(const struct rt_cmd *c, struct err *e)
{
	return err_set(e, ENOSYS,
		       "%s: not supported yet: it needs the container's VM, which this kiln-runtime "
		       "does not boot yet",
		       c->verb_name);
}

/* The bundle's config.json, read whole and parsed. */
int rt_command_read_config(const char *bundle, struct rt_config *cfg, struct err *e)
{
	char what[RT_PATH_MAX + 16], *buf;
	size_t n;
	int dirfd, r;

	memset(cfg, 0, sizeof(*cfg));
	snprintf(what, sizeof(what), "%.4000s/config.json", bundle);
	dirfd = open(bundle, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return err_set(e, errno, "--bundle %.200s: %s", bundle, strerror(errno));
	r = rt_file_read(dirfd, "config.json", true, RT_CONFIG_FILE_MAX, what, &buf, &n, e);
	close(dirfd);
	if (r < 0)
		return r;
	r = rt_config_parse(buf, n, cfg, e);
	free(buf);
	return r;
}

/* The container's directory and record (locked unless lockfd is NULL). */
int rt_command_open(const struct rt_cmd *c, int *rootfd, int *dirfd, int *lockfd,
		    struct rt_state_rec *rec, struct err *e)
{
	int r;

	memset(rec, 0, sizeof(*rec));
	*dirfd = -1;
	if (lockfd)
		*lockfd = -1;
	r = rt_dir_open_root(c->g.root, false, rootfd, e);
	if (r == -ENOENT)
		return err_set(e, ENOENT, "container \"%s\" does not exist", c->id);
	if (r < 0)
		return r;
	r = rt_dir_open(*rootfd, c->id, dirfd, e);
	if (!r && lockfd)
		r = rt_dir_lock(*dirfd, c->id, RT_LOCK_WAIT_MS, lockfd, e);
	if (!r)
		r = rt_dir_read_state(*dirfd, c->id, rec, e);
	return r;
}

void rt_command_close(int rootfd, int dirfd, int lockfd, struct rt_state_rec *rec)
{
	if (lockfd >= 0)
		close(lockfd);
	if (dirfd >= 0)
		close(dirfd);
	if (rootfd >= 0)
		close(rootfd);
	if (rec)
		rt_state_rec_free(rec);
}

int rt_command_print(char *s)
{
	fputs(s, stdout);
	free(s);
	return fflush(stdout) == 0 ? 0 : -EIO;
}

int rt_command_hold(const struct rt_cmd *c, struct rt_held *h, struct err *e)
{
	int pid, r = rt_command_open(c, &h->rootfd, &h->dirfd, &h->lockfd, &h->rec, e);

	h->st = r ? RT_STATUS_STOPPED : rt_dir_status(&h->rec, &pid);
	return r;
}

void rt_command_release(struct rt_held *h)
{
	rt_command_close(h->rootfd, h->dirfd, h->lockfd, &h->rec);
}

int rt_command_pid_file(const char *given, char *out, struct err *e)
{
	char cwd[RT_PATH_MAX];

	out[0] = '\0';
	if (!given)
		return 0;
	if (given[0] == '/') {
		if ((size_t)snprintf(out, RT_PATH_MAX, "%s", given) >= RT_PATH_MAX)
			return err_set(e, ENAMETOOLONG, "--pid-file: the path is too long");
		return 0;
	}
	if (!getcwd(cwd, sizeof(cwd)) ||
	    (size_t)snprintf(out, RT_PATH_MAX, "%s/%s", cwd, given) >= RT_PATH_MAX)
		return err_set(e, ENAMETOOLONG, "--pid-file %.200s: the path is too long", given);
	return 0;
}

int rt_command_jail(const struct rt_cmd *c, char *out, struct err *e)
{
	char root[RT_PATH_MAX], dir[RT_PATH_MAX + RT_ID_MAX + 2];

	if (!realpath(c->g.root, root))
		return err_set(e, errno, "--root %.200s: %s", c->g.root, strerror(errno));
	snprintf(dir, sizeof(dir), "%s/%s", root, c->id);
	rt_jail_path(dir, out);
	return 0;
}
