/*
 * agent_files against a scratch directory, over a socketpair: each test
 * sends real request bytes, runs agent_files_serve() in a thread the way
 * the agent does, and checks the exact reply lines and what happened on
 * disk: ownership and exact modes for "user", permission errors, tar
 * confinement against planted symlinks, recursive removal that never
 * follows links, bounded walks deeper than the descriptor budget, and
 * that the thread's credentials are restored afterwards.
 *
 * Switching fsuid needs root (CAP_SETUID/CAP_SETGID); as another user
 * every test is skipped.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "guest-init/agent/agent_conn.h"
#include "guest-init/agent/agent_files.h"
#include "api/proto/agent_tar.h"

static char D[64]; /* the scratch directory */

/* ---- running one connection ---- */

struct server {
	pthread_t th;
	int fd;
	bool creds_restored;
};

static void *server_main(void *arg)
{
	struct server *s = arg;
	struct agent_conn *c = malloc(sizeof(*c));
	struct agent_msg m;
	struct agent_err err;
	int n;

	if (!c)
		return NULL;
	agent_conn_init(c, s->fd);
	agent_conn_deadline(c, mono_ms() + 5000);
	switch (agent_conn_next(c, AGENT_CTX_REQUEST, &m, &err)) {
	case 0:
		agent_files_serve(c, &m);
		agent_msg_free(&m);
		break;
	case 1:
		break;
	default:
		agent_conn_send_err(c, &err);
		break;
	}
	/* The thread is root again, with its group back. */
	n = getgroups(0, NULL);
	s->creds_restored = syscall(SYS_setfsuid, -1) == 0 && syscall(SYS_setfsgid, -1) == 0 &&
		n == 1;
	agent_conn_close(c);
	free(c);
	return NULL;
}

struct reply {
	char lines[1 << 16]; /* each header, compact, then '\n' */
	size_t lines_len;
	uint8_t *data; /* every payload byte */
	size_t data_len;
	json_t *last; /* the last header */
	int nlines;
};

static void reply_free(struct reply *r)
{
	free(r->data);
	json_decref(r->last);
	memset(r, 0, sizeof(*r));
}

static void parse_replies(const uint8_t *b, size_t n, struct reply *r)
{
	struct agent_frame f;
	struct agent_event ev;
	size_t off = 0;

	agent_frame_init(&f);
	for (;;) {
		off += agent_frame_feed(&f, b + off, n - off, &ev);
		if (ev.kind == AGENT_EV_NEED_MORE)
			break;
		assert_int_not_equal(ev.kind, AGENT_EV_ERROR);
		if (ev.kind == AGENT_EV_HEADER) {
			char *s = json_dumps(ev.header, JSON_COMPACT);

			assert_true(r->lines_len + strlen(s) + 1 < sizeof(r->lines));
			r->lines_len += (size_t)sprintf(r->lines + r->lines_len, "%s\n", s);
			free(s);
			json_decref(r->last);
			r->last = ev.header;
			r->nlines++;
		} else {
			r->data = realloc(r->data, r->data_len + ev.data_len);
			assert_non_null(r->data);
			memcpy(r->data + r->data_len, ev.data, ev.data_len);
			r->data_len += ev.data_len;
		}
	}
	agent_frame_eof(&f, &ev);
	assert_int_equal(ev.kind, AGENT_EV_NEED_MORE);
	agent_frame_free(&f);
}

struct sender {
	pthread_t th;
	int fd;
	const uint8_t *b;
	size_t n;
	bool close_after;
};

static void *sender_main(void *arg)
{
	struct sender *s = arg;

	for (size_t off = 0; off < s->n;) {
		ssize_t w = send(s->fd, s->b + off, s->n - off, MSG_NOSIGNAL);

		if (w <= 0)
			break; /* the agent stopped reading and closed */
		off += (size_t)w;
	}
	if (s->close_after)
		shutdown(s->fd, SHUT_WR);
	return NULL;
}

/*
 * Send `req` (n bytes: the request and whatever follows) as the host,
 * serve it, collect every reply. With hangup the host closes its sending
 * side after the bytes (a host that went away).
 */
static void run_raw(const void *req, size_t n, bool hangup, struct reply *r)
{
	int sv[2];
	struct server s;
	struct sender snd;
	uint8_t *buf = NULL;
	size_t len = 0, cap = 0;
	ssize_t k;

	memset(r, 0, sizeof(*r));
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	s.fd = sv[0];
	assert_int_equal(pthread_create(&s.th, NULL, server_main, &s), 0);
	snd = (struct sender){ .fd = sv[1], .b = req, .n = n, .close_after = hangup };
	assert_int_equal(pthread_create(&snd.th, NULL, sender_main, &snd), 0);
	for (;;) {
		if (cap - len < 65536) {
			cap = cap ? cap * 2 : 1 << 17;
			buf = realloc(buf, cap);
			assert_non_null(buf);
		}
		k = read(sv[1], buf + len, cap - len);
		if (k <= 0)
			break;
		len += (size_t)k;
	}
	pthread_join(snd.th, NULL);
	pthread_join(s.th, NULL);
	close(sv[1]);
	assert_true(s.creds_restored);
	parse_replies(buf, len, r);
	free(buf);
}

static void run(const char *req, struct reply *r)
{
	run_raw(req, strlen(req), false, r);
}

/* The code of the final error line, or NULL when the last line is not one. */
static const char *err_code(const struct reply *r)
{
	if (!r->last || strcmp(json_string_value(json_object_get(r->last, "type")), "error"))
		return NULL;
	return json_string_value(json_object_get(r->last, "code"));
}

static void expect_error(const char *req, const char *code)
{
	struct reply r;

	run(req, &r);
	if (!err_code(&r) || strcmp(err_code(&r), code))
		fail_msg("request %s\nwanted error %s, got:\n%s", req, code, r.lines);
	reply_free(&r);
}

static void expect_lines(const char *req, const char *lines)
{
	struct reply r;

	run(req, &r);
	assert_string_equal(r.lines, lines);
	reply_free(&r);
}

/* Format into a static buffer: request lines in tests. */
static const char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
static const char *fmt(const char *f, ...)
{
	static char bufs[4][8192];
	static int i;
	va_list ap;

	i = (i + 1) % 4;
	va_start(ap, f);
	vsnprintf(bufs[i], sizeof(bufs[i]), f, ap);
	va_end(ap);
	return bufs[i];
}

/* ---- disk helpers ---- */

static const char *P(const char *rel)
{
	static char bufs[8][4096];
	static int i;

	i = (i + 1) % 8;
	snprintf(bufs[i], sizeof(bufs[i]), "%s/%s", D, rel);
	return bufs[i];
}

static void put_file(const char *rel, const char *content, mode_t mode, uid_t uid)
{
	int fd = open(P(rel), O_WRONLY | O_CREAT | O_TRUNC, mode);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, content, strlen(content)), (ssize_t)strlen(content));
	assert_int_equal(fchown(fd, uid, uid), 0);
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
}

static void put_dir(const char *rel, mode_t mode, uid_t uid)
{
	assert_int_equal(mkdir(P(rel), mode), 0);
	assert_int_equal(chown(P(rel), uid, uid), 0);
	assert_int_equal(chmod(P(rel), mode), 0);
}

/* A directory or empty file at an absolute path, the user's, mode exact
 * (this process runs with umask 077). */
static void mk_dir(const char *path)
{
	assert_int_equal(mkdir(path, 0755), 0);
	assert_int_equal(chown(path, 1000, 1000), 0);
	assert_int_equal(chmod(path, 0755), 0);
}

static void mk_file(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT, 0644);

	assert_true(fd >= 0);
	assert_int_equal(fchown(fd, 1000, 1000), 0);
	assert_int_equal(fchmod(fd, 0644), 0);
	close(fd);
}

static char *slurp(const char *path, size_t *n)
{
	static char buf[1 << 20];
	int fd = open(path, O_RDONLY);
	ssize_t k;

	assert_true(fd >= 0);
	k = read(fd, buf, sizeof(buf) - 1);
	assert_true(k >= 0);
	buf[k] = '\0';
	close(fd);
	if (n)
		*n = (size_t)k;
	return buf;
}

static bool exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

static int rm_cb(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(p);
	return 0;
}

static int setup(void **state)
{
	gid_t root_group = 0;

	(void)state;
	if (geteuid() != 0)
		return 0;
	snprintf(D, sizeof(D), "/tmp/kiln-files-XXXXXX");
	assert_non_null(mkdtemp(D));
	assert_int_equal(chmod(D, 0755), 0);
	put_dir("u", 0755, 1000);
	/* A supplementary group the user must not inherit, and a umask the
	 * operations must not apply. */
	assert_int_equal(setgroups(1, &root_group), 0);
	umask(077);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	if (geteuid() == 0 && D[0]) {
		/* A failed mount-point test may have left its tmpfs. */
		umount2(P("mnt/m"), MNT_DETACH);
		nftw(D, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	}
	return 0;
}

#define NEED_ROOT()                                                              \
	do {                                                                     \
		if (geteuid() != 0) {                                            \
			print_message("not root: fsuid switching untestable\n"); \
			skip();                                                  \
		}                                                                \
	} while (0)

/* ---- read, write ---- */

static void test_write_read(void **state)
{
	struct reply r;
	struct stat st;
	char req[1024];
	int n;

	(void)state;
	NEED_ROOT();
	n = snprintf(req, sizeof(req),
		     "{\"type\":\"write\",\"path\":\"%s\",\"mode\":384,\"len\":4}\nabcd"
		     "{\"type\":\"data\",\"len\":3}\nefg{\"type\":\"data\",\"len\":0}\n{\"type\":\"end\"}\n",
		     P("u/a.bin"));
	run_raw(req, (size_t)n, false, &r);
	assert_string_equal(r.lines, "{\"type\":\"ok\",\"bytes\":7}\n");
	reply_free(&r);
	assert_string_equal(slurp(P("u/a.bin"), NULL), "abcdefg");
	assert_int_equal(stat(P("u/a.bin"), &st), 0);
	/* The user's, with exactly the mode asked for. */
	assert_int_equal(st.st_uid, 1000);
	assert_int_equal(st.st_gid, 1000);
	assert_int_equal(st.st_mode & 07777, 0600);

	expect_lines(
		fmt("{\"type\":\"read\",\"path\":\"%s\",\"offset\":1,\"length\":3}\n",
		    P("u/a.bin")),
		"{\"type\":\"file\",\"size\":7}\n{\"type\":\"data\",\"len\":3}\n{\"type\":\"end\",\"bytes\":3}\n");
	run(fmt("{\"type\":\"read\",\"path\":\"%s\"}\n", P("u/a.bin")), &r);
	assert_int_equal(r.data_len, 7);
	assert_memory_equal(r.data, "abcdefg", 7);
	reply_free(&r);
	/* Past EOF: no data. */
	expect_lines(fmt("{\"type\":\"read\",\"path\":\"%s\",\"offset\":100}\n", P("u/a.bin")),
		     "{\"type\":\"file\",\"size\":7}\n{\"type\":\"end\",\"bytes\":0}\n");

	/* The default mode 0644 exactly, under a 077 process umask. */
	expect_lines(fmt("{\"type\":\"write\",\"path\":\"%s\"}\n{\"type\":\"end\"}\n",
			 P("u/d.txt")),
		     "{\"type\":\"ok\",\"bytes\":0}\n");
	assert_int_equal(stat(P("u/d.txt"), &st), 0);
	assert_int_equal(st.st_mode & 07777, 0644);
	/* And the process umask is untouched. */
	assert_int_equal(umask(077), 077);
}

static void test_read_large_in_chunks(void **state)
{
	const size_t n = 300000;
	char *content = malloc(n + 1);
	struct reply r;
	const char *p;
	int chunks = 0;

	(void)state;
	NEED_ROOT();
	assert_non_null(content);
	for (size_t i = 0; i < n; i++)
		content[i] = (char)('a' + i % 23);
	content[n] = '\0';
	put_file("u/big", content, 0644, 1000);
	run(fmt("{\"type\":\"read\",\"path\":\"%s\"}\n", P("u/big")), &r);
	assert_int_equal(r.data_len, n);
	assert_memory_equal(r.data, content, n);
	for (p = r.lines; (p = strstr(p, "\"type\":\"data\",\"len\":")); p++) {
		assert_true(atoi(p + 20) <= AGENT_CHUNK_MAX);
		chunks++;
	}
	assert_int_equal(chunks, 5);
	assert_non_null(strstr(r.lines, "{\"type\":\"end\",\"bytes\":300000}\n"));
	reply_free(&r);
	free(content);
}

static void test_read_errors(void **state)
{
	(void)state;
	NEED_ROOT();
	put_file("secret", "s", 0600, 0);
	expect_error(fmt("{\"type\":\"read\",\"path\":\"%s\"}\n", P("nope")), "not_found");
	expect_error(fmt("{\"type\":\"read\",\"path\":\"%s\"}\n", P("u")), "is_directory");
	expect_error(fmt("{\"type\":\"read\",\"path\":\"%s\"}\n", P("secret")),
		     "permission_denied");
	expect_lines(
		fmt("{\"type\":\"read\",\"path\":\"%s\",\"user\":\"root\"}\n", P("secret")),
		"{\"type\":\"file\",\"size\":1}\n{\"type\":\"data\",\"len\":1}\n{\"type\":\"end\",\"bytes\":1}\n");
}

/*
 * A FIFO a guest process planted where the host reads or writes: the
 * request must neither block in open() nor outlive a host that left
 * (it used to hold its connection thread, and its slot, for good).
 */
static void test_read_write_fifo(void **state)
{
	struct reply r;
	const char *req;
	char buf[16];
	int wfd;

	(void)state;
	NEED_ROOT();
	assert_int_equal(mkfifo(P("u/fifo"), 0666), 0);
	assert_int_equal(chown(P("u/fifo"), 1000, 1000), 0);
	/* No writer: empty at once. */
	expect_lines(fmt("{\"type\":\"read\",\"path\":\"%s\"}\n", P("u/fifo")),
		     "{\"type\":\"file\",\"size\":0}\n{\"type\":\"end\",\"bytes\":0}\n");
	/* No reader: an error at once, not a hang. */
	expect_error(fmt("{\"type\":\"write\",\"path\":\"%s\"}\n{\"type\":\"end\"}\n", P("u/fifo")),
		     "io_error");
	/* A writer that sends some bytes (also past an offset), then holds
	 * the FIFO open: the read waits, and stops when the host leaves. */
	wfd = open(P("u/fifo"), O_RDWR | O_NONBLOCK);
	assert_true(wfd >= 0);
	assert_int_equal(write(wfd, "xyhello", 7), 7);
	req = fmt("{\"type\":\"read\",\"path\":\"%s\",\"offset\":2}\n", P("u/fifo"));
	run_raw(req, strlen(req), true, &r);
	assert_string_equal(r.lines,
			    "{\"type\":\"file\",\"size\":0}\n{\"type\":\"data\",\"len\":5}\n");
	assert_memory_equal(r.data, "hello", 5);
	reply_free(&r);
	/* With a reader (wfd is O_RDWR), the write goes through. */
	req = fmt("{\"type\":\"write\",\"path\":\"%s\",\"len\":3}\nabc{\"type\":\"end\"}\n",
		  P("u/fifo"));
	run_raw(req, strlen(req), false, &r);
	assert_string_equal(r.lines, "{\"type\":\"ok\",\"bytes\":3}\n");
	reply_free(&r);
	assert_int_equal(read(wfd, buf, sizeof(buf)), 3);
	assert_memory_equal(buf, "abc", 3);
	close(wfd);
}

static void test_write_options(void **state)
{
	struct stat st;

	(void)state;
	NEED_ROOT();
	put_file("u/e", "old", 0640, 1000);
	expect_error(fmt("{\"type\":\"write\",\"path\":\"%s\",\"exclusive\":true}\n{\"type\":\"end\"}\n",
			 P("u/e")),
		     "exists");
	assert_string_equal(slurp(P("u/e"), NULL), "old");
	expect_error(fmt("{\"type\":\"write\",\"path\":\"%s\",\"create\":false}\n", P("u/missing")),
		     "not_found");
	assert_false(exists(P("u/missing")));
	/* Append keeps the content and the existing mode. */
	expect_lines(fmt("{\"type\":\"write\",\"path\":\"%s\",\"append\":true,\"mode\":511,\"len\":3}\nnew{\"type\":\"end\"}\n",
			 P("u/e")),
		     "{\"type\":\"ok\",\"bytes\":3}\n");
	assert_string_equal(slurp(P("u/e"), NULL), "oldnew");
	assert_int_equal(stat(P("u/e"), &st), 0);
	assert_int_equal(st.st_mode & 07777, 0640);
	/* Without append: truncated. */
	expect_lines(fmt("{\"type\":\"write\",\"path\":\"%s\",\"len\":1}\nx{\"type\":\"end\"}\n",
			 P("u/e")),
		     "{\"type\":\"ok\",\"bytes\":1}\n");
	assert_string_equal(slurp(P("u/e"), NULL), "x");
	/* Missing parents: not_found, or created with "parents". */
	expect_error(fmt("{\"type\":\"write\",\"path\":\"%s\"}\n", P("u/p/q/f")), "not_found");
	expect_lines(fmt("{\"type\":\"write\",\"path\":\"%s\",\"parents\":true,\"len\":2}\nhi{\"type\":\"end\"}\n",
			 P("u/p/q/f")),
		     "{\"type\":\"ok\",\"bytes\":2}\n");
	assert_int_equal(stat(P("u/p/q"), &st), 0);
	assert_int_equal(st.st_mode & 07777, 0755);
	assert_int_equal(st.st_uid, 1000);
	/* A directory is not a file. */
	expect_error(fmt("{\"type\":\"write\",\"path\":\"%s\"}\n", P("u/p")), "is_directory");
	/* A file in the way of a directory. */
	expect_error(fmt("{\"type\":\"write\",\"path\":\"%s\"}\n", P("u/e/x")), "not_directory");
}

static void test_write_permissions(void **state)
{
	(void)state;
	NEED_ROOT();
	/* Root's directory: the user may not create in it, root may. */
	expect_error(fmt("{\"type\":\"write\",\"path\":\"%s\"}\n{\"type\":\"end\"}\n",
			 P("rootfile")),
		     "permission_denied");
	assert_false(exists(P("rootfile")));
	/* Group 0 is this thread's supplementary group; the user must not
	 * get it (no supplementary groups, section 6). */
	put_dir("grp", 0770, 0);
	expect_error(fmt("{\"type\":\"write\",\"path\":\"%s\"}\n{\"type\":\"end\"}\n", P("grp/x")),
		     "permission_denied");
	expect_lines(fmt("{\"type\":\"write\",\"path\":\"%s\",\"user\":\"root\"}\n{\"type\":\"end\"}\n",
			 P("rootfile")),
		     "{\"type\":\"ok\",\"bytes\":0}\n");
}

static void test_write_upload_errors(void **state)
{
	struct reply r;
	const char *req;

	(void)state;
	NEED_ROOT();
	/* The host leaves inside a payload: truncated, and the bytes that
	 * arrived stay written. */
	req = fmt("{\"type\":\"write\",\"path\":\"%s\"}\n{\"type\":\"data\",\"len\":10}\nabc",
		  P("u/cut"));
	run_raw(req, strlen(req), true, &r);
	assert_string_equal(err_code(&r), "truncated");
	reply_free(&r);
	assert_string_equal(slurp(P("u/cut"), NULL), "abc");
	/* Leaves between messages without end. */
	req = fmt("{\"type\":\"write\",\"path\":\"%s\",\"len\":2}\nab", P("u/cut2"));
	run_raw(req, strlen(req), true, &r);
	assert_string_equal(err_code(&r), "truncated");
	reply_free(&r);
	/* Anything but data/end. */
	expect_error(fmt("{\"type\":\"write\",\"path\":\"%s\"}\n{\"type\":\"ping\"}\n",
			 P("u/cut3")),
		     "unexpected_type");
	expect_error(fmt("{\"type\":\"write\",\"path\":\"%s\"}\n{\"type\":\"end\",\"x\":1}\n",
			 P("u/cut3")),
		     "unknown_field");
}

/* ---- stat, exists ---- */

static void test_stat_exists(void **state)
{
	struct reply r;

	(void)state;
	NEED_ROOT();
	put_file("u/s.txt", "12345", 0640, 1000);
	assert_int_equal(symlink("s.txt", P("u/ln")), 0);
	run(fmt("{\"type\":\"stat\",\"path\":\"%s\",\"follow\":false}\n", P("u/ln")), &r);
	assert_string_equal(json_string_value(json_object_get(r.last, "kind")), "symlink");
	assert_string_equal(json_string_value(json_object_get(r.last, "target")), "s.txt");
	assert_string_equal(json_string_value(json_object_get(r.last, "path")), P("u/ln"));
	reply_free(&r);
	run(fmt("{\"type\":\"stat\",\"path\":\"%s\"}\n", P("u/ln")), &r);
	assert_string_equal(json_string_value(json_object_get(r.last, "kind")), "file");
	assert_int_equal(json_integer_value(json_object_get(r.last, "size")), 5);
	assert_int_equal(json_integer_value(json_object_get(r.last, "mode")), 0640);
	assert_int_equal(json_integer_value(json_object_get(r.last, "uid")), 1000);
	assert_null(json_object_get(r.last, "target"));
	reply_free(&r);
	expect_error(fmt("{\"type\":\"stat\",\"path\":\"%s\"}\n", P("u/none")), "not_found");
	expect_error(fmt("{\"type\":\"stat\",\"path\":\"%s\"}\n", P("u/s.txt/x")), "not_directory");

	expect_lines(fmt("{\"type\":\"exists\",\"path\":\"%s\"}\n", P("u")),
		     "{\"type\":\"exists\",\"exists\":true,\"kind\":\"dir\"}\n");
	expect_lines(fmt("{\"type\":\"exists\",\"path\":\"%s\"}\n", P("u/none")),
		     "{\"type\":\"exists\",\"exists\":false}\n");
	expect_lines(fmt("{\"type\":\"exists\",\"path\":\"%s\"}\n", P("u/s.txt/x")),
		     "{\"type\":\"exists\",\"exists\":false}\n");
	/* A dangling link exists unless followed. */
	assert_int_equal(symlink("nowhere", P("u/dangling")), 0);
	expect_lines(fmt("{\"type\":\"exists\",\"path\":\"%s\",\"follow\":false}\n",
			 P("u/dangling")),
		     "{\"type\":\"exists\",\"exists\":true,\"kind\":\"symlink\"}\n");
	expect_lines(fmt("{\"type\":\"exists\",\"path\":\"%s\"}\n", P("u/dangling")),
		     "{\"type\":\"exists\",\"exists\":false}\n");
	/* Other failures are errors, not false. */
	put_dir("closed", 0700, 0);
	put_file("closed/f", "", 0600, 0);
	expect_error(fmt("{\"type\":\"exists\",\"path\":\"%s\"}\n", P("closed/f")),
		     "permission_denied");
}

/* ---- mkdir, rename ---- */

static void test_mkdir(void **state)
{
	struct stat st;

	(void)state;
	NEED_ROOT();
	expect_lines(fmt("{\"type\":\"mkdir\",\"path\":\"%s\",\"mode\":448}\n", P("u/m")),
		     "{\"type\":\"ok\"}\n");
	assert_int_equal(stat(P("u/m"), &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
	assert_int_equal(st.st_uid, 1000);
	expect_error(fmt("{\"type\":\"mkdir\",\"path\":\"%s\"}\n", P("u/m")), "exists");
	expect_error(fmt("{\"type\":\"mkdir\",\"path\":\"%s\"}\n", P("u/x/y")), "not_found");
	expect_lines(fmt("{\"type\":\"mkdir\",\"path\":\"%s\",\"parents\":true,\"mode\":%d}\n",
			 P("u/x/y/z"), 01755),
		     "{\"type\":\"ok\"}\n");
	/* Every created level gets the mode exactly (01755, sticky kept). */
	assert_int_equal(stat(P("u/x"), &st), 0);
	assert_int_equal(st.st_mode & 07777, 01755);
	assert_int_equal(stat(P("u/x/y/z"), &st), 0);
	assert_int_equal(st.st_mode & 07777, 01755);
	/* Existing directories are fine with parents. */
	expect_lines(fmt("{\"type\":\"mkdir\",\"path\":\"%s\",\"parents\":true}\n", P("u/x/y")),
		     "{\"type\":\"ok\"}\n");
	/* setgid, which mkdir(2) alone drops. */
	expect_lines(fmt("{\"type\":\"mkdir\",\"path\":\"%s\",\"mode\":%d}\n", P("u/sg2"), 02750),
		     "{\"type\":\"ok\"}\n");
	assert_int_equal(stat(P("u/sg2"), &st), 0);
	assert_int_equal(st.st_mode & 07777, 02750);
	/* A file in the way. */
	put_file("u/file", "", 0644, 1000);
	expect_error(fmt("{\"type\":\"mkdir\",\"path\":\"%s\",\"parents\":true}\n",
			 P("u/file/sub")),
		     "exists");
	expect_error(fmt("{\"type\":\"mkdir\",\"path\":\"%s\"}\n", P("nope")), "permission_denied");
}

static void test_rename(void **state)
{
	(void)state;
	NEED_ROOT();
	put_file("u/r1", "1", 0644, 1000);
	put_file("u/r2", "2", 0644, 1000);
	expect_lines(
		fmt("{\"type\":\"rename\",\"from\":\"%s\",\"to\":\"%s\"}\n", P("u/r1"), P("u/r2")),
		fmt("{\"type\":\"error\",\"code\":\"exists\",\"message\":\"rename '%s' to '%s': target exists; pass \\\"overwrite\\\": true to replace it\"}\n",
		    P("u/r1"), P("u/r2")));
	assert_string_equal(slurp(P("u/r2"), NULL), "2");
	expect_lines(fmt("{\"type\":\"rename\",\"from\":\"%s\",\"to\":\"%s\",\"overwrite\":true}\n",
			 P("u/r1"), P("u/r2")),
		     "{\"type\":\"ok\"}\n");
	assert_string_equal(slurp(P("u/r2"), NULL), "1");
	assert_false(exists(P("u/r1")));
	expect_lines(fmt("{\"type\":\"rename\",\"from\":\"%s\",\"to\":\"%s\"}\n", P("u/r2"),
			 P("u/r3")),
		     "{\"type\":\"ok\"}\n");
	expect_error(fmt("{\"type\":\"rename\",\"from\":\"%s\",\"to\":\"%s\"}\n", P("u/r2"),
			 P("u/r4")),
		     "not_found");
	expect_error(fmt("{\"type\":\"rename\",\"from\":\"%s\",\"to\":\"%s\"}\n", P("u/r3"),
			 P("moved")),
		     "permission_denied");
}

/* ---- remove ---- */

static void make_chain(const char *rel, int depth)
{
	char path[8192];
	size_t n;

	n = (size_t)snprintf(path, sizeof(path), "%s", P(rel));
	mk_dir(path);
	for (int i = 0; i < depth; i++) {
		n += (size_t)snprintf(path + n, sizeof(path) - n, "/d%d", i);
		mk_dir(path);
	}
	snprintf(path + n, sizeof(path) - n, "/leaf");
	mk_file(path);
}

static void test_remove(void **state)
{
	(void)state;
	NEED_ROOT();
	put_file("u/rf", "x", 0644, 1000);
	expect_lines(fmt("{\"type\":\"remove\",\"path\":\"%s\"}\n", P("u/rf")),
		     "{\"type\":\"ok\"}\n");
	assert_false(exists(P("u/rf")));
	expect_error(fmt("{\"type\":\"remove\",\"path\":\"%s\"}\n", P("u/rf")), "not_found");

	/* A symlink to a directory: the link goes, the directory stays. */
	put_dir("u/keep", 0755, 1000);
	put_file("u/keep/f", "x", 0644, 1000);
	assert_int_equal(symlink(P("u/keep"), P("u/lnk")), 0);
	expect_lines(fmt("{\"type\":\"remove\",\"path\":\"%s\",\"recursive\":true}\n", P("u/lnk")),
		     "{\"type\":\"ok\"}\n");
	assert_false(exists(P("u/lnk")));
	assert_true(exists(P("u/keep/f")));

	/* Not empty without recursive. */
	expect_error(fmt("{\"type\":\"remove\",\"path\":\"%s\"}\n", P("u/keep")), "not_empty");
	/* A file named with a trailing '/'. */
	expect_error(fmt("{\"type\":\"remove\",\"path\":\"%s/\"}\n", P("u/keep/f")),
		     "not_directory");

	/* The root, spelled any way, and paths ending in . or .. */
	expect_error("{\"type\":\"remove\",\"path\":\"/\",\"recursive\":true}\n", "unsafe_path");
	expect_error("{\"type\":\"remove\",\"path\":\"//./\",\"recursive\":true}\n", "unsafe_path");
	expect_error(fmt("{\"type\":\"remove\",\"path\":\"%s/..\",\"recursive\":true}\n",
			 P("u/keep")),
		     "bad_field");
	expect_error(fmt("{\"type\":\"remove\",\"path\":\"%s/.\",\"recursive\":true}\n",
			 P("u/keep")),
		     "bad_field");
	assert_true(exists(P("u/keep/f")));

	/* The user may not remove root's files. */
	put_file("rootonly", "", 0644, 0);
	expect_error(fmt("{\"type\":\"remove\",\"path\":\"%s\"}\n", P("rootonly")),
		     "permission_denied");
	assert_true(exists(P("rootonly")));
}

static void test_remove_recursive_never_follows(void **state)
{
	(void)state;
	NEED_ROOT();
	/* A tree with links that point outside it, to a file and to a
	 * directory full of files: they are removed as links only. */
	put_dir("victim", 0755, 0);
	put_file("victim/precious", "p", 0644, 0);
	put_dir("u/tree", 0755, 1000);
	put_dir("u/tree/a", 0755, 1000);
	put_dir("u/tree/a/b", 0755, 1000);
	put_file("u/tree/a/b/f", "f", 0644, 1000);
	put_file("u/tree/top", "t", 0644, 1000);
	assert_int_equal(symlink(P("victim"), P("u/tree/a/todir")), 0);
	assert_int_equal(symlink(P("victim/precious"), P("u/tree/a/b/tofile")), 0);
	assert_int_equal(symlink("../../..", P("u/tree/a/b/up")), 0);
	expect_lines(fmt("{\"type\":\"remove\",\"path\":\"%s\",\"recursive\":true,\"user\":\"root\"}\n",
			 P("u/tree")),
		     "{\"type\":\"ok\"}\n");
	assert_false(exists(P("u/tree")));
	assert_string_equal(slurp(P("victim/precious"), NULL), "p");

	/* Deeper than any descriptor budget: 300 levels. */
	make_chain("u/deep", 300);
	expect_lines(fmt("{\"type\":\"remove\",\"path\":\"%s\",\"recursive\":true,\"user\":\"root\"}\n",
			 P("u/deep")),
		     "{\"type\":\"ok\"}\n");
	assert_false(exists(P("u/deep")));

	/* As the user, a root-owned subdirectory stops it with
	 * permission_denied; what was removed before stays removed. */
	put_dir("u/mixed", 0755, 1000);
	put_dir("u/mixed/rootdir", 0755, 0);
	put_file("u/mixed/rootdir/f", "", 0644, 0);
	expect_error(fmt("{\"type\":\"remove\",\"path\":\"%s\",\"recursive\":true}\n",
			 P("u/mixed")),
		     "permission_denied");
	assert_true(exists(P("u/mixed/rootdir/f")));
}

static void test_remove_mount_point(void **state)
{
	(void)state;
	NEED_ROOT();
	put_dir("mnt", 0755, 0);
	put_dir("mnt/m", 0755, 0);
	if (mount("kiln-test", P("mnt/m"), "tmpfs", 0, "size=64k") < 0) {
		print_message("cannot mount a tmpfs here (%s): mount point case not run\n",
			      strerror(errno));
		return;
	}
	put_file("mnt/m/inside", "i", 0644, 0);
	expect_error(fmt("{\"type\":\"remove\",\"path\":\"%s\",\"recursive\":true,\"user\":\"root\"}\n",
			 P("mnt")),
		     "busy");
	expect_error(fmt("{\"type\":\"remove\",\"path\":\"%s\",\"recursive\":true,\"user\":\"root\"}\n",
			 P("mnt/m")),
		     "busy");
	assert_true(exists(P("mnt/m/inside")));
	umount(P("mnt/m"));
}

/* ---- list_dir ---- */

static void test_list_dir(void **state)
{
	struct reply r;

	(void)state;
	NEED_ROOT();
	put_dir("u/l", 0755, 1000);
	put_dir("u/l/sub", 0755, 1000);
	put_file("u/l/sub/x", "xx", 0644, 1000);
	put_file("u/l/f", "f", 0644, 1000);
	assert_int_equal(symlink("sub", P("u/l/ln")), 0);
	put_dir("u/l/shut", 0700, 0);
	put_file("u/l/shut/hidden", "", 0644, 0);

	run(fmt("{\"type\":\"list_dir\",\"path\":\"%s\"}\n", P("u/l")), &r);
	assert_int_equal(r.nlines, 5);
	assert_non_null(
		strstr(r.lines, fmt("\"path\":\"%s\",\"depth\":1,\"kind\":\"dir\"", P("u/l/sub"))));
	assert_non_null(
		strstr(r.lines,
		       fmt("\"path\":\"%s\",\"depth\":1,\"kind\":\"symlink\"", P("u/l/ln"))));
	assert_non_null(strstr(r.lines, "\"target\":\"sub\""));
	assert_null(strstr(r.lines, "\"depth\":2"));
	assert_string_equal(strrchr(r.lines, '{'),
			    "{\"type\":\"end\",\"count\":4,\"truncated\":false,\"skipped\":0}\n");
	reply_free(&r);

	/* Depth 2 with a trailing '/': sub/x is listed after sub; the link is
	 * not followed; the unreadable directory is listed and skipped. */
	run(fmt("{\"type\":\"list_dir\",\"path\":\"%s/\",\"depth\":2}\n", P("u/l")), &r);
	assert_int_equal(r.nlines, 6);
	{
		const char *sub = strstr(r.lines, fmt("\"path\":\"%s\",", P("u/l/sub")));
		const char *x = strstr(r.lines, fmt("\"path\":\"%s\",\"depth\":2", P("u/l/sub/x")));

		assert_non_null(sub);
		assert_non_null(x);
		assert_true(sub < x);
	}
	assert_null(strstr(r.lines, "hidden"));
	assert_string_equal(strrchr(r.lines, '{'),
			    "{\"type\":\"end\",\"count\":5,\"truncated\":false,\"skipped\":1}\n");
	reply_free(&r);

	/* The limit. */
	run(fmt("{\"type\":\"list_dir\",\"path\":\"%s\",\"limit\":2}\n", P("u/l")), &r);
	assert_int_equal(r.nlines, 3);
	assert_string_equal(strrchr(r.lines, '{'),
			    "{\"type\":\"end\",\"count\":2,\"truncated\":true,\"skipped\":0}\n");
	reply_free(&r);
	/* Exactly as many entries as the limit: not truncated. */
	run(fmt("{\"type\":\"list_dir\",\"path\":\"%s\",\"limit\":4}\n", P("u/l")), &r);
	assert_string_equal(strrchr(r.lines, '{'),
			    "{\"type\":\"end\",\"count\":4,\"truncated\":false,\"skipped\":0}\n");
	reply_free(&r);

	expect_error(fmt("{\"type\":\"list_dir\",\"path\":\"%s\"}\n", P("u/none")), "not_found");
	expect_error(fmt("{\"type\":\"list_dir\",\"path\":\"%s\"}\n", P("u/l/f")), "not_directory");
	expect_error(fmt("{\"type\":\"list_dir\",\"path\":\"%s\"}\n", P("u/l/shut")),
		     "permission_denied");
}

/* Deeper than the walk's descriptor budget, with siblings at every level
 * so each reopened directory must resume where it stopped. */
static void test_list_dir_deep(void **state)
{
	char path[4096];
	size_t n;
	struct reply r;
	int dirs = 0, files = 0;
	const char *p;

	(void)state;
	NEED_ROOT();
	n = (size_t)snprintf(path, sizeof(path), "%s", P("u/w"));
	mk_dir(path);
	for (int i = 0; i < 31; i++) {
		char f[4200];

		for (int k = 0; k < 3; k++) {
			snprintf(f, sizeof(f), "%s/f%d", path, k);
			mk_file(f);
		}
		n += (size_t)snprintf(path + n, sizeof(path) - n, "/d");
		mk_dir(path);
		/* One more file in the parent, created after the
		 * subdirectory: readdir may return it after `d`. */
		snprintf(f, sizeof(f), "%s/../g", path);
		mk_file(f);
	}
	run(fmt("{\"type\":\"list_dir\",\"path\":\"%s\",\"depth\":32,\"limit\":1000000}\n",
		P("u/w")),
	    &r);
	for (p = r.lines; (p = strstr(p, "\"kind\":\"dir\"")); p++)
		dirs++;
	for (p = r.lines; (p = strstr(p, "\"kind\":\"file\"")); p++)
		files++;
	assert_int_equal(dirs, 31);
	assert_int_equal(files, 31 * 4);
	assert_non_null(
		strstr(r.lines,
		       "{\"type\":\"end\",\"count\":155,\"truncated\":false,\"skipped\":0}\n"));
	reply_free(&r);
}

/* ---- tar ---- */

struct tarb {
	uint8_t *b;
	size_t n;
};

static void tb_add(struct tarb *t, char type, const char *name, const char *link,
		   const char *content, uint32_t mode)
{
	struct tar_out o = { .name = name,
			     .name_len = strlen(name),
			     .type = type,
			     .link = link,
			     .link_len = link ? strlen(link) : 0,
			     .size = content ? strlen(content) : 0,
			     .mode = mode,
			     .mtime = 1000000000 };
	uint8_t hdr[TAR_HEADER_BUILD_MAX];
	ssize_t w = tar_header_build(&o, hdr, sizeof(hdr));
	size_t data = content ? strlen(content) : 0;

	assert_true(w > 0);
	t->b = realloc(t->b, t->n + (size_t)w + data + 512);
	assert_non_null(t->b);
	memcpy(t->b + t->n, hdr, (size_t)w);
	t->n += (size_t)w;
	if (data) {
		memcpy(t->b + t->n, content, data);
		memset(t->b + t->n + data, 0, tar_pad(data));
		t->n += data + tar_pad(data);
	}
}

static void tb_end(struct tarb *t)
{
	t->b = realloc(t->b, t->n + 1024);
	memset(t->b + t->n, 0, 1024);
	t->n += 1024;
}

/* Upload `t` to `target` in data messages of `chunk` bytes. */
static void upload(const char *target, const char *user, const struct tarb *t, size_t chunk,
		   struct reply *r)
{
	size_t cap = t->n + 4096 + (t->n / chunk + 2) * 64, n = 0;
	char *req = malloc(cap);

	assert_non_null(req);
	n += (size_t)snprintf(req, cap,
			      "{\"type\":\"tar_upload\",\"path\":\"%s\",\"user\":\"%s\"}\n", target,
			      user);
	for (size_t off = 0; off < t->n; off += chunk) {
		size_t k = t->n - off < chunk ? t->n - off : chunk;

		n += (size_t)snprintf(req + n, cap - n, "{\"type\":\"data\",\"len\":%zu}\n", k);
		memcpy(req + n, t->b + off, k);
		n += k;
	}
	n += (size_t)snprintf(req + n, cap - n, "{\"type\":\"end\"}\n");
	run_raw(req, n, false, r);
	free(req);
}

static void test_tar_upload(void **state)
{
	struct tarb t = { 0 };
	struct reply r;
	struct stat st;
	char *big = malloc(200001);

	(void)state;
	NEED_ROOT();
	assert_non_null(big);
	memset(big, 'B', 200000);
	big[200000] = '\0';
	tb_add(&t, '5', "src/", NULL, NULL, 0750);
	tb_add(&t, '0', "src/main.c", NULL, "int main;\n", 04755); /* setuid: dropped for user */
	tb_add(&t, '0', "deep/er/file", NULL, "implicit parents\n", 0644);
	tb_add(&t, '2', "src/link", "main.c", NULL, 0777);
	tb_add(&t, '1', "hard", "src/main.c", NULL, 0644);
	tb_add(&t, '0', "big", NULL, big, 0600);
	tb_add(&t, '0', "./", NULL, NULL, 0755);
	tb_end(&t);
	upload(P("u/proj"), "user", &t, 7000, &r);
	assert_string_equal(
		r.lines,
		fmt("{\"type\":\"ok\",\"files\":3,\"dirs\":1,\"symlinks\":1,\"hardlinks\":1,\"skipped\":0,\"bytes\":%zu}\n",
		    t.n));
	reply_free(&r);
	assert_string_equal(slurp(P("u/proj/src/main.c"), NULL), "int main;\n");
	assert_int_equal(lstat(P("u/proj/src/main.c"), &st), 0);
	assert_int_equal(st.st_mode & 07777, 0755);
	assert_int_equal(st.st_uid, 1000);
	assert_int_equal(st.st_nlink, 2);
	assert_int_equal(st.st_mtime, 1000000000);
	assert_int_equal(lstat(P("u/proj/src"), &st), 0);
	assert_int_equal(st.st_mode & 07777, 0750);
	assert_int_equal(lstat(P("u/proj/deep/er"), &st), 0);
	assert_int_equal(st.st_uid, 1000);
	assert_int_equal(lstat(P("u/proj/src/link"), &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	{
		size_t n;

		slurp(P("u/proj/big"), &n);
		assert_int_equal(n, 200000);
	}

	/* Again over the same tree: files replace files, directories stay. */
	upload(P("u/proj"), "user", &t, 100000, &r);
	assert_null(err_code(&r));
	reply_free(&r);

	/* As root the setuid bit is kept. */
	upload(P("rootproj"), "root", &t, 65536, &r);
	assert_null(err_code(&r));
	reply_free(&r);
	assert_int_equal(lstat(P("rootproj/src/main.c"), &st), 0);
	assert_int_equal(st.st_mode & 07777, 04755);
	assert_int_equal(st.st_uid, 0);
	free(t.b);
	free(big);
}

static void test_tar_upload_confinement(void **state)
{
	struct tarb t = { 0 };
	struct reply r;

	(void)state;
	NEED_ROOT();
	put_dir("outside", 0777, 0);
	put_file("outside/victim", "v", 0666, 0);
	put_dir("u/t1", 0755, 1000);

	/* A symlink already in the target that leads out, then a member
	 * written through it: the kernel refuses, unsafe_path. */
	assert_int_equal(symlink(P("outside"), P("u/t1/out")), 0);
	tb_add(&t, '0', "ok", NULL, "fine", 0644);
	tb_add(&t, '0', "out/planted", NULL, "pwned", 0644);
	tb_end(&t);
	upload(P("u/t1"), "user", &t, 65536, &r);
	assert_string_equal(err_code(&r), "unsafe_path");
	reply_free(&r);
	assert_false(exists(P("outside/planted")));
	assert_true(exists(P("u/t1/ok"))); /* members before it stay */
	free(t.b);
	t = (struct tarb){ 0 };

	/* Relative symlink planted by the archive pointing up through
	 * another symlink member: `a -> .` then `a/l -> ../x`. */
	tb_add(&t, '2', "a", ".", NULL, 0777);
	tb_add(&t, '2', "a/l", "../x", NULL, 0777);
	tb_end(&t);
	upload(P("u/t2"), "user", &t, 65536, &r);
	assert_string_equal(err_code(&r), "unsafe_path");
	reply_free(&r);
	assert_false(exists(P("u/t2/l")));
	free(t.b);
	t = (struct tarb){ 0 };

	/* A hard link through the planted symlink to a file outside. */
	tb_add(&t, '1', "h", "out/victim", NULL, 0644);
	tb_end(&t);
	upload(P("u/t1"), "user", &t, 65536, &r);
	assert_string_equal(err_code(&r), "unsafe_path");
	reply_free(&r);
	assert_false(exists(P("u/t1/h")));
	free(t.b);
	t = (struct tarb){ 0 };

	/* A file member over an existing symlink to a file outside: the
	 * link is replaced, never written through. */
	assert_int_equal(symlink(P("outside/victim"), P("u/t1/f")), 0);
	tb_add(&t, '0', "f", NULL, "replaced", 0644);
	tb_end(&t);
	upload(P("u/t1"), "user", &t, 65536, &r);
	assert_null(err_code(&r));
	reply_free(&r);
	assert_string_equal(slurp(P("outside/victim"), NULL), "v");
	assert_string_equal(slurp(P("u/t1/f"), NULL), "replaced");
	free(t.b);
	t = (struct tarb){ 0 };

	/* A hard link to a directory. */
	tb_add(&t, '5', "dir/", NULL, NULL, 0755);
	tb_add(&t, '1', "hd", "dir", NULL, 0644);
	tb_end(&t);
	upload(P("u/t3"), "user", &t, 65536, &r);
	assert_string_equal(err_code(&r), "unsafe_path");
	reply_free(&r);
	free(t.b);
	t = (struct tarb){ 0 };

	/* Kind clashes. */
	tb_add(&t, '5', "d/", NULL, NULL, 0755);
	tb_add(&t, '0', "d", NULL, "x", 0644);
	tb_end(&t);
	upload(P("u/t4"), "user", &t, 65536, &r);
	assert_string_equal(err_code(&r), "is_directory");
	reply_free(&r);
	free(t.b);
	t = (struct tarb){ 0 };
	tb_add(&t, '0', "f", NULL, "x", 0644);
	tb_add(&t, '5', "f/", NULL, NULL, 0755);
	tb_end(&t);
	upload(P("u/t5"), "user", &t, 65536, &r);
	assert_string_equal(err_code(&r), "exists");
	reply_free(&r);
	free(t.b);
	t = (struct tarb){ 0 };

	/* The user cannot extract into root's directory. */
	tb_add(&t, '0', "f", NULL, "x", 0644);
	tb_end(&t);
	upload(P("outside/../rootowned"), "user", &t, 65536, &r);
	assert_string_equal(err_code(&r), "permission_denied");
	reply_free(&r);
	free(t.b);
}

/* A hard link to a symlink is the symlink again at another depth:
 * `d/e/l -> ../../x` stays inside, the same as `top` would point out. Only
 * regular files may be hard-linked; a fifo already there neither. */
static void test_tar_upload_hardlink_not_file(void **state)
{
	struct tarb t = { 0 };
	struct reply r;
	char got[16];

	(void)state;
	NEED_ROOT();
	put_dir("u/hl", 0755, 1000);
	tb_add(&t, '5', "d/", NULL, NULL, 0755);
	tb_add(&t, '5', "d/e/", NULL, NULL, 0755);
	tb_add(&t, '2', "d/e/l", "../../x", NULL, 0777);
	tb_add(&t, '1', "top", "d/e/l", NULL, 0644);
	tb_end(&t);
	upload(P("u/hl"), "user", &t, 65536, &r);
	if (!err_code(&r))
		fail_msg("hard link to a symlink accepted: %s", r.lines);
	assert_string_equal(err_code(&r), "unsafe_path");
	assert_string_equal(
		json_string_value(json_object_get(r.last, "message")),
		"tar hard link 'top' -> 'd/e/l': not a regular file; an archive may only hard-link files");
	reply_free(&r);
	assert_false(exists(P("u/hl/top")));
	assert_int_equal(readlink(P("u/hl/d/e/l"), got, sizeof(got)),
			 7); /* members before it stay */
	assert_memory_equal(got, "../../x", 7);
	free(t.b);
	t = (struct tarb){ 0 };

	assert_int_equal(mkfifo(P("u/hl/fifo"), 0644), 0);
	assert_int_equal(chown(P("u/hl/fifo"), 1000, 1000), 0);
	tb_add(&t, '1', "hf", "fifo", NULL, 0644);
	tb_end(&t);
	upload(P("u/hl"), "user", &t, 65536, &r);
	if (!err_code(&r))
		fail_msg("hard link to a fifo accepted: %s", r.lines);
	assert_string_equal(err_code(&r), "unsafe_path");
	reply_free(&r);
	assert_false(exists(P("u/hl/hf")));
	free(t.b);
}

static void test_tar_upload_hostile_bytes(void **state)
{
	struct tarb t = { 0 };
	struct reply r;
	char req[4096];
	int n;

	(void)state;
	NEED_ROOT();
	/* `..` in a raw header (the producer would not write it). */
	tb_add(&t, '0', "zz/../../etc/passwd", NULL, "x", 0644);
	tb_end(&t);
	upload(P("u/h1"), "user", &t, 65536, &r);
	assert_string_equal(err_code(&r), "unsafe_path");
	reply_free(&r);
	free(t.b);
	t = (struct tarb){ 0 };

	/* Cut off inside a member: bad_archive at `end`; the member's first
	 * bytes were written (no rollback). */
	tb_add(&t, '0', "cut", NULL, "0123456789", 0644);
	t.n = 512 + 4;
	upload(P("u/h2"), "user", &t, 65536, &r);
	assert_string_equal(err_code(&r), "bad_archive");
	reply_free(&r);
	assert_string_equal(slurp(P("u/h2/cut"), NULL), "0123");
	free(t.b);

	/* Not an archive at all, on the request itself. */
	n = snprintf(req, sizeof(req), "{\"type\":\"tar_upload\",\"path\":\"%s\",\"len\":512}\n",
		     P("u/h3"));
	memset(req + n, 'A', 512);
	memcpy(req + n + 512, "{\"type\":\"end\"}\n", 15);
	run_raw(req, (size_t)n + 512 + 15, false, &r);
	assert_string_equal(err_code(&r), "bad_archive");
	reply_free(&r);

	/* An empty upload: an empty archive. */
	expect_lines(
		fmt("{\"type\":\"tar_upload\",\"path\":\"%s\"}\n{\"type\":\"end\"}\n", P("u/h4")),
		"{\"type\":\"ok\",\"files\":0,\"dirs\":0,\"symlinks\":0,\"hardlinks\":0,\"skipped\":0,\"bytes\":0}\n");
	/* A target that is a file. */
	put_file("u/h5", "", 0644, 1000);
	expect_error(fmt("{\"type\":\"tar_upload\",\"path\":\"%s\"}\n{\"type\":\"end\"}\n",
			 P("u/h5")),
		     "exists");
}

/* Read a downloaded archive back: "name:size|" per member, and content. */
static void untar(const struct reply *r, char *out, size_t cap)
{
	struct tar_reader rd;
	struct tar_event ev;
	size_t off = 0, o = 0;

	out[0] = '\0';
	tar_reader_init(&rd, NULL);
	for (;;) {
		off += tar_reader_feed(&rd, r->data + off, r->data_len - off, &ev);
		if (ev.kind == TAR_EV_NEED_MORE || ev.kind == TAR_EV_END)
			break;
		assert_int_not_equal(ev.kind, TAR_EV_ERROR);
		if (ev.kind == TAR_EV_MEMBER)
			o += (size_t)snprintf(out + o, cap - o, "%c:%s%s%s|",
					      "fdlh"[ev.member->kind], ev.member->name,
					      ev.member->link ? "->" : "",
					      ev.member->link ? ev.member->link : "");
		if (ev.kind == TAR_EV_DATA)
			o += (size_t)snprintf(out + o, cap - o, "%.*s|", (int)ev.data_len,
					      (const char *)ev.data);
	}
	assert_int_equal(ev.kind, TAR_EV_END);
	tar_reader_free(&rd);
}

static void test_tar_download(void **state)
{
	struct reply r;
	char got[8192];
	const char *last;

	(void)state;
	NEED_ROOT();
	put_dir("u/dl", 0755, 1000);
	put_dir("u/dl/sub", 0755, 1000);
	put_file("u/dl/sub/a", "aaa", 0644, 1000);
	assert_int_equal(symlink("sub/a", P("u/dl/ln")), 0);
	assert_int_equal(mkfifo(P("u/dl/fifo"), 0644), 0);
	run(fmt("{\"type\":\"tar_download\",\"path\":\"%s\"}\n", P("u/dl")), &r);
	last = strrchr(r.lines, '{');
	assert_string_equal(
		last,
		fmt("{\"type\":\"end\",\"bytes\":%zu,\"files\":1,\"dirs\":1,\"symlinks\":1,\"skipped\":1}\n",
		    r.data_len));
	assert_int_equal(r.data_len % 512, 0);
	untar(&r, got, sizeof(got));
	/* readdir order: check membership, and that the directory's member
	 * comes before its contents. */
	assert_non_null(strstr(got, "d:sub|"));
	assert_non_null(strstr(got, "f:sub/a|aaa|"));
	assert_non_null(strstr(got, "l:ln->sub/a|"));
	assert_true(strstr(got, "d:sub|") < strstr(got, "f:sub/a|"));
	reply_free(&r);

	/* A single file, under its base name. */
	run(fmt("{\"type\":\"tar_download\",\"path\":\"%s\"}\n", P("u/dl/sub/a")), &r);
	untar(&r, got, sizeof(got));
	assert_string_equal(got, "f:a|aaa|");
	reply_free(&r);

	expect_error(fmt("{\"type\":\"tar_download\",\"path\":\"%s\"}\n", P("u/nope")),
		     "not_found");
	put_dir("private", 0700, 0);
	expect_error(fmt("{\"type\":\"tar_download\",\"path\":\"%s\"}\n", P("private")),
		     "permission_denied");
}

/* Download a tree deeper than the walk's descriptor budget and upload it
 * elsewhere: the same files come back. */
static void test_tar_roundtrip(void **state)
{
	struct reply r, up;
	char got[65536], got2[65536];
	char *req;
	int n;

	(void)state;
	NEED_ROOT();
	make_chain("u/rt", 40);
	put_file("u/rt/top", "top", 0640, 1000);
	run(fmt("{\"type\":\"tar_download\",\"path\":\"%s\"}\n", P("u/rt")), &r);
	assert_null(err_code(&r));
	untar(&r, got, sizeof(got));
	assert_non_null(strstr(got, "/d39/leaf|"));
	assert_non_null(strstr(got, "f:top|top|"));

	req = malloc(r.data_len + 512);
	assert_non_null(req);
	n = snprintf(req, 512, "{\"type\":\"tar_upload\",\"path\":\"%s\",\"len\":%zu}\n",
		     P("u/rt2"), r.data_len);
	memcpy(req + n, r.data, r.data_len);
	memcpy(req + n + r.data_len, "{\"type\":\"end\"}\n", 15);
	run_raw(req, (size_t)n + r.data_len + 15, false, &up);
	free(req);
	assert_null(err_code(&up));
	assert_non_null(strstr(up.lines, "\"files\":2,\"dirs\":40,"));
	reply_free(&up);
	reply_free(&r);
	run(fmt("{\"type\":\"tar_download\",\"path\":\"%s\"}\n", P("u/rt2")), &r);
	untar(&r, got2, sizeof(got2));
	reply_free(&r);
	/* Same members (readdir order may differ: compare sorted sizes). */
	assert_int_equal(strlen(got), strlen(got2));
	assert_string_equal(slurp(P("u/rt2/top"), NULL), "top");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_write_read),
		cmocka_unit_test(test_read_large_in_chunks),
		cmocka_unit_test(test_read_errors),
		cmocka_unit_test(test_read_write_fifo),
		cmocka_unit_test(test_write_options),
		cmocka_unit_test(test_write_permissions),
		cmocka_unit_test(test_write_upload_errors),
		cmocka_unit_test(test_stat_exists),
		cmocka_unit_test(test_mkdir),
		cmocka_unit_test(test_rename),
		cmocka_unit_test(test_remove),
		cmocka_unit_test(test_remove_recursive_never_follows),
		cmocka_unit_test(test_remove_mount_point),
		cmocka_unit_test(test_list_dir),
		cmocka_unit_test(test_list_dir_deep),
		cmocka_unit_test(test_tar_upload),
		cmocka_unit_test(test_tar_upload_confinement),
		cmocka_unit_test(test_tar_upload_hardlink_not_file),
		cmocka_unit_test(test_tar_upload_hostile_bytes),
		cmocka_unit_test(test_tar_download),
		cmocka_unit_test(test_tar_roundtrip),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
