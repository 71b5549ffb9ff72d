/*
 * kiln cp: one file between here and a sandbox, streamed both ways
 * (docs/api.md, GET/PUT .../files); never whole in memory.
 *
 * A download goes to a temporary file beside the target and is renamed
 * over it only when the response completed: kilnd aborts a transfer that
 * fails mid-way, and a short file must never look like the whole one.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_body.h"
#include "cli_cmds.h"

/* An encoded guest path is at most 3 bytes per byte; the rest is the id,
 * the user and the flags. */
#define CP_ENC_MAX (PATH_MAX * 3 + 1)
#define CP_URL_MAX (CP_ENC_MAX + 512)

static int sink_fd(void *arg, const char *p, size_t n)
{
	return cli_write_all(*(int *)arg, p, n);
}

static ssize_t source_fd(void *arg, char *p, size_t n)
{
	for (;;) {
		ssize_t got = read(*(int *)arg, p, n);

		if (got >= 0)
			return got;
		if (errno != EINTR)
			return -errno;
	}
}

/* The last component of a guest path, for a directory target. */
static const char *base_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

static int local_fail(struct cli_ctx *c, const char *what, const char *fmt, const char *path)
{
	struct cli_fail f;

	cli_fail_set(&f, CLI_EXIT_LOCAL, NULL, fmt, path, strerror(errno));
	return cli_report(c, what, &f);
}

static int download(struct cli_ctx *c, const struct cli_cp_req *cp, const char *what, const char *path)
{
	struct cli_req req = { .method = "GET", .path = path, .sink = sink_fd };
	char target[PATH_MAX], tmp[PATH_MAX + 16];
	struct cli_resp resp;
	struct stat st;
	int fd = 1, rc;
	mode_t um;

	req.sink_arg = &fd;
	if (!strcmp(cp->local, "-")) {
		rc = cli_call(c, what, &req, &resp);
		if (!rc)
			free(resp.body);
		return rc;
	}
	if (stat(cp->local, &st) == 0 && S_ISDIR(st.st_mode)) {
		const char *b = base_of(cp->guest_path);

		if (!*b) {
			struct cli_fail f;

			cli_fail_set(&f, CLI_EXIT_USAGE, NULL, "'%s' names a directory; cp copies one file",
				     cp->guest_path);
			return cli_report(c, what, &f);
		}
		if (snprintf(target, sizeof(target), "%s/%s", cp->local, b) >= (int)sizeof(target)) {
			errno = ENAMETOOLONG;
			return local_fail(c, what, "'%s': %s", cp->local);
		}
	} else {
		snprintf(target, sizeof(target), "%s", cp->local);
	}
	snprintf(tmp, sizeof(tmp), "%s.kiln-XXXXXX", target);
	fd = mkstemp(tmp);
	if (fd < 0)
		return local_fail(c, what, "cannot create a file beside '%s': %s", target);
	/* mkstemp makes 0600; a copied file gets what creat() would give. */
	um = umask(0);
	umask(um);
	if (fchmod(fd, 0666 & ~um)) {
		/* Ignored: the data matters more than its mode. */
	}
	rc = cli_call(c, what, &req, &resp);
	if (!rc) {
		free(resp.body);
		if (close(fd)) {
			fd = -1;
			rc = local_fail(c, what, "writing '%s': %s", target);
		} else if (rename(tmp, target)) {
			rc = local_fail(c, what, "cannot rename the download to '%s': %s", target);
		}
		fd = -1;
	}
	if (fd >= 0)
		close(fd);
	if (rc)
		unlink(tmp);
	return rc;
}

static int upload(struct cli_ctx *c, const struct cli_cp_req *cp, const char *what, const char *qpath,
		  const char *query_tail)
{
	struct cli_req req = { .method = "PUT", .source = source_fd, .source_size = -1 };
	char path[CP_URL_MAX + 64];
	struct cli_resp resp;
	json_t *v = NULL;
	struct stat st;
	int fd = 0, rc;
	unsigned mode = 0644;

	if (strcmp(cp->local, "-")) {
		fd = open(cp->local, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return local_fail(c, what, "'%s': %s", cp->local);
		if (fstat(fd, &st)) {
			close(fd);
			return local_fail(c, what, "'%s': %s", cp->local);
		}
		if (S_ISDIR(st.st_mode)) {
			struct cli_fail f;

			close(fd);
			cli_fail_set(&f, CLI_EXIT_USAGE, NULL,
				     "'%s' is a directory; cp copies one file (directory archives are not served yet)",
				     cp->local);
			return cli_report(c, what, &f);
		}
		/* A regular file's size goes in Content-Length, so kilnd can
		 * refuse one over --max-upload before any byte is sent; its
		 * mode bits come along, so a script stays executable. */
		if (S_ISREG(st.st_mode))
			req.source_size = st.st_size;
		mode = st.st_mode & 07777;
	}
	snprintf(path, sizeof(path), "%s&mode=0%o%s", qpath, mode, query_tail);
	req.path = path;
	req.source_arg = &fd;
	rc = cli_call(c, what, &req, &resp);
	if (fd > 0)
		close(fd);
	if (rc)
		return rc;
	if (c->g.json && resp.len) {
		v = json_loadb(resp.body, resp.len, 0, NULL);
		if (v)
			cli_print_json(v, false);
		json_decref(v);
	}
	free(resp.body);
	return 0;
}

int cli_cmd_cp(struct cli_ctx *c, int argc, char **argv)
{
	struct cli_cp_req cp;
	char err[CLI_ERR_MAX], gpath[CP_URL_MAX], enc[CP_ENC_MAX], user[64] = "", what[192];
	char guest[PATH_MAX + 1];
	const char *g;

	if (cli_cp_parse(argc, argv, &c->g, &cp, err, sizeof(err)))
		return cli_usage_error(c, err);
	g = cp.guest_path;
	/* "ID:/dir/" with a local file: the file keeps its name there. */
	if (cp.upload && g[strlen(g) - 1] == '/') {
		if (!strcmp(cp.local, "-"))
			return cli_usage_error(c, "stdin has no name: give the guest file's full path");
		snprintf(guest, sizeof(guest), "%s%s", g, base_of(cp.local));
		g = guest;
	}
	if (cli_url_encode(g, enc, sizeof(enc)) || (cp.user && cli_url_encode(cp.user, user, sizeof(user))))
		return cli_usage_error(c, "path or user too long");
	snprintf(what, sizeof(what), "cp %s:%.60s", cp.id, g);
	snprintf(gpath, sizeof(gpath), "/v1/sandboxes/%s/files?path=%s%s%s", cp.id, enc, cp.user ? "&user=" : "", user);
	if (cp.upload)
		return upload(c, &cp, what, gpath, cp.parents ? "&parents=true" : "");
	if (cp.parents)
		return cli_usage_error(c, "--parents is for uploads (it creates guest directories)");
	return download(c, &cp, what, gpath);
}
