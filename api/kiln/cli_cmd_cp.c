/*
 * kiln cp: files and directories between here and a sandbox, streamed
 * both ways (docs/api.md, GET/PUT .../files and .../archive); never whole
 * in memory.
 *
 * A file download goes to a temporary file beside the target and is
 * renamed over it only when the response completed: kilnd aborts a
 * transfer that fails mid-way, and a short file must never look like the
 * whole one. A guest directory (kilnd answers is_directory for a file
 * download) comes as a tar.gz, extracted as it arrives (cli_tar.h), or
 * written as it is to stdout for '-'. A local directory goes up as a
 * tar.gz made as curl asks for the body: a thread walks the tree into one
 * end of a socket pair, curl reads the other.
 *
 * Directories land like `cp -r`: into DEST/NAME when DEST is a directory
 * (or a guest path ending in '/'), else as DEST.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/kiln/cli_body.h"
#include "api/kiln/cli_cmds.h"
#include "api/kiln/cli_tar.h"
#include "api/proto/gz_stream.h"
#include "lib/base/json.h"

#define CP_URL_MAX (CLI_QUERY_MAX + 256)

struct cp_ctx {
	struct cli_ctx *c;
	const struct cli_cp_req *cp;
	const char *what;
	char user[80]; /* "&user=..." or "" */
};

static int sink_fd(void *arg, const char *p, size_t n)
{
	return fd_io_write_all(*(int *)arg, p, n);
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

/* The last component of a path ("" for "/" or "dir/"). */
static const char *base_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

static int fail_local(struct cp_ctx *x, int e, const char *fmt, const char *path)
{
	struct cli_fail f;

	cli_fail_set(&f, CLI_EXIT_LOCAL, NULL, fmt, path, strerror(e));
	return cli_report(x->c, x->what, &f);
}

static int fail_usage(struct cp_ctx *x, const char *fmt, const char *arg)
{
	struct cli_fail f;

	cli_fail_set(&f, CLI_EXIT_USAGE, NULL, fmt, arg);
	return cli_report(x->c, x->what, &f);
}

/* "/v1/sandboxes/ID/<endpoint>?path=<g>[&user=U]<tail>" into url. */
static int guest_url(struct cp_ctx *x, char *url, size_t n, const char *endpoint, const char *g,
		     const char *tail)
{
	char enc[CLI_QUERY_MAX];

	if (cli_url_encode(g, enc, sizeof(enc)) ||
	    snprintf(url, n, "/v1/sandboxes/%s/%s?path=%s%s%s", x->cp->id, endpoint, enc, x->user,
		     tail) >= (int)n)
		return fail_usage(x, "the guest path '%.200s' is too long", g);
	return 0;
}

/*
 * An upload's answer: a JSON object with the guest "path" and the count
 * field (files: "bytes", equal to a regular file's size; directories:
 * "files"), printed as --json wants it. A 2xx of another shape (another
 * program on the socket, a kilnd of another version) is not a success.
 * 0, or the exit status after one line.
 */
static int check_answer(struct cp_ctx *x, const struct cli_resp *resp, const char *count,
			long long want)
{
	json_error_t je;
	struct cli_fail f;
	json_t *v = resp->len ? json_strict_loadb(resp->body, resp->len, &je) : NULL;
	int rc = 0;

	if (resp->len && !v)
		rc = cli_fail_set(&f, CLI_EXIT_API, NULL, "kilnd's answer is not JSON (%s)",
				  je.text);
	else if (cli_answer_need(v, "path", JSON_STRING, &f) ||
		 cli_answer_need(v, count, JSON_INTEGER, &f))
		rc = -1;
	else if (want >= 0 && json_integer_value(json_object_get(v, count)) != want)
		rc = cli_fail_set(&f, CLI_EXIT_API, NULL,
				  "kilnd says it wrote %lld bytes of %lld; the guest file may be "
				  "incomplete: copy it again",
				  (long long)json_integer_value(json_object_get(v, count)), want);
	if (!rc && x->c->g.json)
		cli_print_json(v, false);
	json_decref(v);
	return rc ? cli_report(x->c, x->what, &f) : 0;
}

static void print_stats(const char *path, const struct cli_tar_stats *st)
{
	json_t *v = json_pack("{s:s?, s:I, s:I, s:I, s:I, s:I, s:I}", "path", path, "files",
			      (json_int_t)st->files, "dirs", (json_int_t)st->dirs, "symlinks",
			      (json_int_t)st->symlinks, "hardlinks", (json_int_t)st->hardlinks,
			      "skipped", (json_int_t)st->skipped, "bytes", (json_int_t)st->bytes);

	if (v)
		cli_print_json(v, false);
	json_decref(v);
}

/* ---- guest directory → here ---- */

struct untar_sink {
	struct gz_stream gz;
	struct cli_untar u;
	bool failed;
	char why[CLI_TAR_ERR_MAX + 64];
};

static int untar_out(void *arg, const void *p, size_t n)
{
	struct untar_sink *s = arg;

	return cli_untar_feed(&s->u, p, n) ? -ECANCELED : 0;
}

static int untar_write(void *arg, const char *p, size_t n)
{
	struct untar_sink *s = arg;
	int rc = gz_dec_write(&s->gz, p, n, untar_out, s);

	if (rc && !s->failed) {
		s->failed = true;
		snprintf(s->why, sizeof(s->why), "%s",
			 s->u.failed                 ? s->u.err
				 : gz_why(&s->gz)[0] ? gz_why(&s->gz)
						     : strerror(-rc));
	}
	return rc ? -ECANCELED : 0;
}

static int download_dir(struct cp_ctx *x, const char *target)
{
	struct cli_req req = { .method = "GET", .sink = untar_write };
	struct untar_sink *s;
	char url[CP_URL_MAX];
	struct cli_resp resp;
	struct cli_fail f;
	int root, rc;
	mode_t um;

	if (guest_url(x, url, sizeof(url), "archive", x->cp->guest_path, ""))
		return CLI_EXIT_USAGE;
	if (mkdir(target, 0777) && errno != EEXIST)
		return fail_local(x, errno, "cannot create directory '%s': %s", target);
	root = open(target, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return fail_local(x, errno, "'%s': %s", target);
	s = calloc(1, sizeof(*s));
	if (!s || gz_dec_init(&s->gz)) {
		free(s);
		close(root);
		cli_fail_set(&f, CLI_EXIT_API, NULL, "out of memory");
		return cli_report(x->c, x->what, &f);
	}
	um = umask(0);
	umask(um);
	cli_untar_init(&s->u, root, um, target);
	req.path = url;
	req.sink_arg = s;
	rc = cli_call_quiet(x->c, &req, &resp, &f);
	if (!rc) {
		free(resp.body);
		if (gz_dec_finish(&s->gz))
			rc = cli_fail_set(&f, CLI_EXIT_API, NULL,
					  "the archive from kilnd is cut short (%s)",
					  gz_why(&s->gz));
		else if (cli_untar_finish(&s->u))
			rc = cli_fail_set(&f, CLI_EXIT_API, NULL, "%s", s->u.err);
	} else if (s->failed) {
		cli_fail_set(&f, CLI_EXIT_LOCAL, NULL, "extracting into '%.200s': %s", target,
			     s->why);
	}
	if (rc)
		rc = cli_report(x->c, x->what, &f);
	else if (x->c->g.json)
		print_stats(target, &s->u.st);
	cli_untar_free(&s->u);
	gz_end(&s->gz);
	free(s);
	close(root);
	return rc;
}

/* The guest directory's tar.gz as it comes, to stdout ("-"). */
static int download_dir_raw(struct cp_ctx *x)
{
	struct cli_req req = { .method = "GET", .sink = sink_fd };
	char url[CP_URL_MAX];
	struct cli_resp resp;
	int fd = 1, rc;

	if (guest_url(x, url, sizeof(url), "archive", x->cp->guest_path, ""))
		return CLI_EXIT_USAGE;
	req.path = url;
	req.sink_arg = &fd;
	rc = cli_call(x->c, x->what, &req, &resp);
	if (!rc)
		free(resp.body);
	return rc;
}

/* ---- guest file → here ---- */

static int download(struct cp_ctx *x)
{
	const struct cli_cp_req *cp = x->cp;
	struct cli_req req = { .method = "GET", .sink = sink_fd };
	char target[PATH_MAX], tmp[PATH_MAX + 16], url[CP_URL_MAX];
	bool local_dir = false;
	struct cli_resp resp;
	struct cli_fail f;
	struct stat st;
	long long bytes = 0;
	int fd = 1, rc;
	mode_t um;

	if (guest_url(x, url, sizeof(url), "files", cp->guest_path, ""))
		return CLI_EXIT_USAGE;
	req.path = url;
	req.sink_arg = &fd;
	if (!strcmp(cp->local, "-")) {
		rc = cli_call_quiet(x->c, &req, &resp, &f);
		if (rc && !strcmp(f.code, "is_directory"))
			return download_dir_raw(x);
		if (rc)
			return cli_report(x->c, x->what, &f);
		free(resp.body);
		return 0;
	}
	if (stat(cp->local, &st) == 0 && S_ISDIR(st.st_mode)) {
		const char *b = base_of(cp->guest_path);

		local_dir = true;
		if (snprintf(target, sizeof(target), "%s/%s", cp->local, b) >= (int)sizeof(target))
			return fail_local(x, ENAMETOOLONG, "'%s': %s", cp->local);
	} else {
		snprintf(target, sizeof(target), "%s", cp->local);
	}
	/* "ID:/" or "ID:/dir/" into an existing directory: its contents go
	 * there; no temporary file can stand for them. */
	if (local_dir && !*base_of(cp->guest_path))
		return download_dir(x, target);
	/* An existing target that is no regular file (/dev/null, a FIFO, a
	 * terminal): the bytes go into it. A file renamed over it would
	 * replace the device itself, for every program, when run as root. */
	if (!local_dir && stat(target, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
		fd = open(target, O_WRONLY | O_CLOEXEC);
		if (fd < 0)
			return fail_local(x, errno, "cannot open '%s': %s", target);
		rc = cli_call_quiet(x->c, &req, &resp, &f);
		close(fd);
		if (rc)
			return cli_report(x->c, x->what, &f);
		free(resp.body);
		return 0;
	}
	snprintf(tmp, sizeof(tmp), "%s.kiln-XXXXXX", target);
	fd = mkstemp(tmp);
	if (fd < 0)
		return fail_local(x, errno, "cannot create a file beside '%s': %s", target);
	/* mkstemp makes 0600; a copied file gets what creat() would give. */
	um = umask(0);
	umask(um);
	if (fchmod(fd, 0666 & ~um)) {
		/* Ignored: the data matters more than its mode. */
	}
	rc = cli_call_quiet(x->c, &req, &resp, &f);
	if (!rc) {
		free(resp.body);
		if (x->c->g.json)
			bytes = lseek(fd, 0, SEEK_CUR);
		if (close(fd)) {
			fd = -1;
			rc = fail_local(x, errno, "writing '%s': %s", target);
		} else if (rename(tmp, target)) {
			rc = fail_local(x, errno, "cannot rename the download to '%s': %s", target);
		} else if (x->c->g.json) {
			json_t *v = json_pack("{s:s?, s:I}", "path", target, "bytes",
					      (json_int_t)bytes);

			if (v)
				cli_print_json(v, false);
			json_decref(v);
		}
		fd = -1;
	}
	if (fd >= 0)
		close(fd);
	if (rc)
		unlink(tmp);
	if (rc < 0 && !strcmp(f.code, "is_directory")) {
		if (!local_dir && stat(target, &st) == 0)
			return fail_usage(
				x,
				"'%s' exists and is not a directory; a directory cannot replace it",
				target);
		return download_dir(x, target);
	}
	if (rc < 0)
		return cli_report(x->c, x->what, &f);
	return rc;
}

/* ---- local directory → guest ---- */

struct tar_pump {
	int dirfd, sock; /* the tree; our end of the socket pair */
	struct gz_stream gz;
	struct cli_tar_stats st;
	const char *what;
	int rc;
	struct err err;
};

static int pump_send(void *arg, const void *p, size_t n)
{
	struct tar_pump *t = arg;

	/* curl gone (kilnd refused the upload) is an EPIPE, not a SIGPIPE. */
	return fd_io_send_all(t->sock, p, n);
}

static int pump_tar(void *arg, const void *p, size_t n)
{
	struct tar_pump *t = arg;

	return gz_enc_write(&t->gz, p, n, pump_send, t);
}

static void pump_warn(void *arg, const char *msg)
{
	struct tar_pump *t = arg;

	fprintf(stderr, "kiln: %s: %s\n", t->what, msg);
}

static void *pump_run(void *arg)
{
	struct tar_pump *t = arg;

	t->rc = cli_tar_write_dir(t->dirfd, pump_tar, t, pump_warn, t, &t->st, &t->err);
	if (!t->rc)
		t->rc = gz_enc_finish(&t->gz, pump_send, t);
	/* EOF for curl's reader: the body ends here. */
	shutdown(t->sock, SHUT_WR);
	return NULL;
}

struct pump_reader {
	int fd;
	pthread_t th;
	bool joined;
	struct tar_pump *t;
};

static ssize_t pump_read(void *arg, char *p, size_t n)
{
	struct pump_reader *r = arg;
	ssize_t got = source_fd(&r->fd, p, n);

	if (got == 0 && !r->joined) {
		pthread_join(r->th, NULL);
		r->joined = true;
	}
	/* A walk that failed must not end the body as if it were whole:
	 * abort, so kilnd sees a cut upload and extracts nothing more. */
	if (got == 0 && r->t->rc)
		return -EIO;
	return got;
}

/* Where a local directory lands in the guest: DEST/NAME when DEST is a
 * directory there (or ends in '/'), else DEST. */
static int upload_target(struct cp_ctx *x, const char *local, char *target, size_t n)
{
	const char *g = x->cp->guest_path;
	char url[CP_URL_MAX], *abs = realpath(local, NULL);
	const char *name = abs ? base_of(abs) : base_of(local);
	bool into = g[strlen(g) - 1] == '/';
	json_t *st = NULL;
	struct cli_fail f;
	int rc = 0;

	if (!into) {
		struct cli_req req = { .method = "GET", .path = url };
		struct cli_resp resp;

		if (guest_url(x, url, sizeof(url), "files/stat", g, "")) {
			free(abs);
			return CLI_EXIT_USAGE;
		}
		if (cli_call_quiet(x->c, &req, &resp, &f) == 0) {
			json_error_t je;

			st = json_strict_loadb(resp.body, resp.len, &je);
			free(resp.body);
			into = !strcmp(json_string_value(json_object_get(st, "kind")) ?: "", "dir");
			if (!st) {
				cli_fail_set(&f, CLI_EXIT_API, NULL,
					     "kilnd's answer is not JSON (%s)", je.text);
				rc = cli_report(x->c, x->what, &f);
			} else if (!into)
				rc = fail_usage(x,
						"'%.200s' exists in the sandbox and is not a directory",
						g);
		} else if (strcmp(f.code, "not_found")) {
			rc = cli_report(x->c, x->what, &f);
		}
	}
	if (!rc && into && *name) {
		if (snprintf(target, n, "%s%s%s", g, g[strlen(g) - 1] == '/' ? "" : "/", name) >=
		    (int)n)
			rc = fail_usage(x, "the guest path '%.200s' is too long", g);
	} else if (!rc) {
		snprintf(target, n, "%s", g);
	}
	json_decref(st);
	free(abs);
	return rc;
}

static int upload_dir(struct cp_ctx *x, int dirfd)
{
	struct tar_pump *t = calloc(1, sizeof(*t));
	struct pump_reader r = { .fd = -1, .t = t };
	struct cli_req req = {
		.method = "PUT", .source = pump_read, .source_arg = &r, .source_size = -1
	};
	char target[PATH_MAX + NAME_MAX + 2], url[CP_URL_MAX];
	struct cli_resp resp;
	struct cli_fail f;
	int sv[2], rc;

	if (!t || gz_enc_init(&t->gz, 6)) {
		free(t);
		cli_fail_set(&f, CLI_EXIT_API, NULL, "out of memory");
		return cli_report(x->c, x->what, &f);
	}
	rc = upload_target(x, x->cp->local, target, sizeof(target));
	if (!rc && guest_url(x, url, sizeof(url), "archive", target, ""))
		rc = CLI_EXIT_USAGE;
	if (!rc && socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		rc = fail_local(x, errno, "socketpair%s: %s", "");
	if (rc) {
		gz_end(&t->gz);
		free(t);
		return rc;
	}
	t->dirfd = dirfd;
	t->sock = sv[1];
	t->what = x->what;
	r.fd = sv[0];
	if ((errno = pthread_create(&r.th, NULL, pump_run, t))) {
		rc = fail_local(x, errno, "cannot start a thread%s: %s", "");
		r.joined = true;
	} else {
		req.path = url;
		rc = cli_call_quiet(x->c, &req, &resp, &f);
		/* kilnd may answer before the walk ended (an error): closing
		 * our end makes the walker's next send fail, so it stops. */
		close(sv[0]);
		sv[0] = -1;
		if (!r.joined)
			pthread_join(r.th, NULL);
		if (t->rc && t->rc != -EPIPE && t->rc != -ECONNRESET) {
			if (!rc)
				free(resp.body);
			cli_fail_set(&f, CLI_EXIT_LOCAL, NULL, "%s",
				     t->err.msg[0] ? t->err.msg : strerror(-t->rc));
			rc = cli_report(x->c, x->what, &f);
		} else if (rc) {
			rc = cli_report(x->c, x->what, &f);
		} else {
			rc = check_answer(x, &resp, "files", -1);
			free(resp.body);
		}
	}
	if (sv[0] >= 0)
		close(sv[0]);
	close(sv[1]);
	gz_end(&t->gz);
	free(t);
	return rc;
}

/* ---- local file → guest ---- */

static int upload(struct cp_ctx *x)
{
	const struct cli_cp_req *cp = x->cp;
	struct cli_req req = { .method = "PUT", .source = source_fd, .source_size = -1 };
	char url[CP_URL_MAX], tail[64], guest[PATH_MAX + NAME_MAX + 2];
	const char *g = cp->guest_path;
	struct cli_resp resp;
	struct cli_fail f;
	struct stat st;
	int fd = 0, rc;
	unsigned mode = 0644;

	if (strcmp(cp->local, "-")) {
		fd = open(cp->local, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return fail_local(x, errno, "'%s': %s", cp->local);
		if (fstat(fd, &st)) {
			close(fd);
			return fail_local(x, errno, "'%s': %s", cp->local);
		}
		if (S_ISDIR(st.st_mode)) {
			rc = upload_dir(x, fd);
			close(fd);
			return rc;
		}
		/* A regular file's size goes in Content-Length, so kilnd can
		 * refuse one over --max-upload before any byte is sent; its
		 * mode bits come along, so a script stays executable. */
		if (S_ISREG(st.st_mode))
			req.source_size = st.st_size;
		mode = st.st_mode & 07777;
	}
	/* "ID:/dir/" with a local file: the file keeps its name there. */
	if (g[strlen(g) - 1] == '/') {
		if (!strcmp(cp->local, "-"))
			return fail_usage(
				x, "stdin has no name: give the guest file's full path (not '%s')",
				g);
		if (snprintf(guest, sizeof(guest), "%s%s", g, base_of(cp->local)) >=
		    (int)sizeof(guest)) {
			if (fd > 0)
				close(fd);
			return fail_usage(x, "the guest path '%.200s' is too long", g);
		}
		g = guest;
	}
	snprintf(tail, sizeof(tail), "&mode=0%o%s", mode, cp->parents ? "&parents=true" : "");
	rc = guest_url(x, url, sizeof(url), "files", g, tail);
	req.path = url;
	req.source_arg = &fd;
	if (!rc)
		rc = cli_call_quiet(x->c, &req, &resp, &f) ? -1 : 0;
	/* "ID:/dir" naming a directory: the file goes into it, as cp does.
	 * Only a regular file can be sent again from its start. */
	if (rc < 0 && !strcmp(f.code, "is_directory") && req.source_size >= 0 && g != guest &&
	    lseek(fd, 0, SEEK_SET) == 0) {
		if (snprintf(guest, sizeof(guest), "%s/%s", g, base_of(cp->local)) >=
		    (int)sizeof(guest))
			rc = fail_usage(x, "the guest path '%.200s' is too long", g);
		else
			rc = guest_url(x, url, sizeof(url), "files", guest, tail);
		if (!rc)
			rc = cli_call_quiet(x->c, &req, &resp, &f) ? -1 : 0;
	}
	if (fd > 0)
		close(fd);
	if (rc < 0)
		return cli_report(x->c, x->what, &f);
	if (rc)
		return rc;
	rc = check_answer(x, &resp, "bytes", req.source_size);
	free(resp.body);
	return rc;
}

int cli_cmd_cp(struct cli_ctx *c, int argc, char **argv)
{
	struct cli_cp_req cp;
	char what[192], enc[64];
	struct err e;
	struct cp_ctx x = { .c = c, .cp = &cp, .what = what };

	if (cli_cp_parse(argc, argv, &c->g, &cp, &e))
		return cli_usage_error(c, e.msg);
	if (cp.user) {
		if (cli_url_encode(cp.user, enc, sizeof(enc)))
			return cli_usage_error(c, "--user: too long");
		snprintf(x.user, sizeof(x.user), "&user=%s", enc);
	}
	snprintf(what, sizeof(what), "cp %s:%.60s", cp.id, cp.guest_path);
	if (cp.upload)
		return upload(&x);
	if (cp.parents)
		return cli_usage_error(c,
				       "--parents is for uploads (it creates guest directories)");
	return download(&x);
}
