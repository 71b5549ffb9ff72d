/*
 * The agent's watch: the pure translation of inotify records into events
 * (agent_watch_events.c) with made-up records (create, coalesced modify,
 * delete, rename pairing, moves out of and into the tree, directory
 * moves rewriting the paths below, the bounded queue and its overflow,
 * the kernel's overflow, the watch limit, the root going away, hostile
 * record buffers), the watch request's parsing and reply lines
 * (agent_proto.c), and the whole path on this machine's inotify: the
 * agent's handler behind a kiln-vmm-like socket, the host library's
 * agent_client_watch, a recursive watch seeing create, modify, rename,
 * delete and a file in a new subdirectory, in order.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "api/agent-client/agent_client.h"
#include "guest-init/agent/agent_conn.h"
#include "guest-init/agent/agent_serve.h"
#include "guest-init/agent/agent_watch_events.h"
#include "lib/base/mono.h"
#include "fake_agent.h"
#include "tmpdir.h"

/* ---- pure translation ---- */

struct fx {
	struct watch_state w;
	char newdirs[512];
	int unwatched[16];
	size_t nunwatched;
};

static void on_new_dir(void *arg, const char *rel, size_t len)
{
	struct fx *f = arg;
	size_t n = strlen(f->newdirs);

	snprintf(f->newdirs + n, sizeof(f->newdirs) - n, "%.*s;", (int)len, rel);
}

static void on_unwatch(void *arg, int wd)
{
	struct fx *f = arg;

	if (f->nunwatched < 16)
		f->unwatched[f->nunwatched++] = wd;
}

static void fx_init(struct fx *f, bool recursive, uint32_t max_watches, uint32_t queue)
{
	memset(f, 0, sizeof(*f));
	assert_int_equal(watch_init(&f->w, recursive, max_watches, queue), 0);
	f->w.new_dir = on_new_dir;
	f->w.unwatch = on_unwatch;
	f->w.arg = f;
	assert_int_equal(watch_dir_add(&f->w, 1, "", 0), 0);
}

static void feed(struct fx *f, int wd, uint32_t mask, uint32_t cookie, const char *name)
{
	watch_feed(&f->w, wd, mask, cookie, name, name ? strlen(name) : 0);
}

/* Every queued event as "kind path[/]" lines ("rename old -> new",
 * "overflow reason dropped"), checking that seq counts from `seq`. */
static char *drain(struct fx *f, uint64_t seq)
{
	static char out[4096];
	const struct agent_fs_event *e;
	size_t n = 0;

	out[0] = '\0';
	while ((e = watch_peek(&f->w))) {
		assert_int_equal(e->seq, seq++);
		if (e->kind == AGENT_FS_OVERFLOW)
			n += (size_t)snprintf(out + n, sizeof(out) - n, "overflow %s %llu\n",
					      e->reason, (unsigned long long)e->dropped);
		else if (e->kind == AGENT_FS_RENAME)
			n += (size_t)snprintf(out + n, sizeof(out) - n, "rename %.*s -> %.*s%s\n",
					      (int)e->old_len, e->old_path, (int)e->path_len,
					      e->path, e->is_dir ? "/" : "");
		else
			n += (size_t)snprintf(out + n, sizeof(out) - n, "%s %.*s%s\n",
					      agent_fs_kind_name(e->kind), (int)e->path_len,
					      e->path, e->is_dir ? "/" : "");
		watch_pop(&f->w);
	}
	return out;
}

static void test_basic_events(void **state)
{
	struct fx f;

	(void)state;
	fx_init(&f, false, 16, 64);
	/* echo hi > a; echo more >> a (two writes); touch b; rm a */
	feed(&f, 1, IN_CREATE, 0, "a");
	feed(&f, 1, IN_MODIFY, 0, "a");
	feed(&f, 1, IN_CLOSE_WRITE, 0, "a");
	feed(&f, 1, IN_MODIFY, 0, "a");
	feed(&f, 1, IN_MODIFY, 0, "a");
	feed(&f, 1, IN_CLOSE_WRITE, 0, "a");
	feed(&f, 1, IN_CREATE, 0, "b");
	feed(&f, 1, IN_CLOSE_WRITE, 0, "b");
	feed(&f, 1, IN_CLOSE_WRITE, 0, "b"); /* touch b again: opened for writing, closed */
	feed(&f, 1, IN_DELETE, 0, "a");
	feed(&f, 1, IN_CREATE | IN_ISDIR, 0, "d");
	assert_string_equal(drain(&f, 0),
			    "create a\nmodify a\nmodify a\ncreate b\nmodify b\ndelete a\ncreate d/\n");
	/* Not recursive: a new directory gets no watch. */
	assert_string_equal(f.newdirs, "");
	watch_free(&f.w);
}

/* Writes to two files interleaved: each switch is a new event. */
static void test_modify_interleaved(void **state)
{
	struct fx f;

	(void)state;
	fx_init(&f, false, 16, 64);
	feed(&f, 1, IN_MODIFY, 0, "x");
	feed(&f, 1, IN_MODIFY, 0, "y");
	feed(&f, 1, IN_MODIFY, 0, "x");
	feed(&f, 1, IN_MODIFY, 0, "x");
	feed(&f, 1, IN_CLOSE_WRITE, 0, "y");
	assert_string_equal(drain(&f, 0), "modify x\nmodify y\nmodify x\nmodify y\n");
	watch_free(&f.w);
}

static void test_rename_pairing(void **state)
{
	struct fx f;

	(void)state;
	fx_init(&f, true, 16, 64);
	assert_int_equal(watch_dir_add(&f.w, 2, "sub", 3), 0);
	/* Within one directory, across directories, out of the tree (no
	 * MOVED_TO: a delete once the next record or the flush comes), into
	 * the tree (a MOVED_TO without its MOVED_FROM: a create). */
	feed(&f, 1, IN_MOVED_FROM, 7, "a");
	feed(&f, 1, IN_MOVED_TO, 7, "b");
	feed(&f, 1, IN_MOVED_FROM, 8, "b");
	feed(&f, 2, IN_MOVED_TO, 8, "c");
	feed(&f, 2, IN_MOVED_FROM, 9, "c");
	assert_true(watch_pending(&f.w));
	feed(&f, 1, IN_CREATE, 0, "n");
	feed(&f, 1, IN_MOVED_FROM, 10, "n");
	watch_flush(&f.w);
	assert_false(watch_pending(&f.w));
	feed(&f, 1, IN_MOVED_TO, 11, "in");
	/* A MOVED_TO whose cookie is not the held one: the held is a delete. */
	feed(&f, 1, IN_MOVED_FROM, 12, "p");
	feed(&f, 1, IN_MOVED_TO, 13, "q");
	assert_string_equal(
		drain(&f, 0),
		"rename a -> b\nrename b -> sub/c\ndelete sub/c\ncreate n\ndelete n\ncreate in\ndelete p\ncreate q\n");
	watch_free(&f.w);
}

static void test_dir_moves(void **state)
{
	struct fx f;

	(void)state;
	fx_init(&f, true, 16, 64);
	/* A new directory is handed to the caller, which adds its watch. */
	feed(&f, 1, IN_CREATE | IN_ISDIR, 0, "d");
	assert_string_equal(f.newdirs, "d;");
	assert_int_equal(watch_dir_add(&f.w, 2, "d", 1), 0);
	assert_int_equal(watch_dir_add(&f.w, 3, "d/e", 3), 0);
	assert_int_equal(watch_dir_add(&f.w, 4, "dx", 2), 0);
	/* d renamed to z: d and d/e are now z and z/e, dx untouched. */
	feed(&f, 1, IN_MOVED_FROM | IN_ISDIR, 5, "d");
	feed(&f, 1, IN_MOVED_TO | IN_ISDIR, 5, "z");
	assert_string_equal(watch_dir_find(&f.w, 2)->rel, "z");
	assert_string_equal(watch_dir_find(&f.w, 3)->rel, "z/e");
	assert_string_equal(watch_dir_find(&f.w, 4)->rel, "dx");
	feed(&f, 3, IN_CREATE, 0, "f");
	/* z moved out of the tree: its watches are dropped, dx stays. */
	feed(&f, 1, IN_MOVED_FROM | IN_ISDIR, 6, "z");
	watch_flush(&f.w);
	assert_int_equal(f.nunwatched, 2);
	assert_null(watch_dir_find(&f.w, 2));
	assert_null(watch_dir_find(&f.w, 3));
	assert_non_null(watch_dir_find(&f.w, 4));
	/* Records of a dropped watch still queued in the kernel: ignored. */
	feed(&f, 3, IN_CREATE, 0, "late");
	/* A deleted directory leaves the table with IN_IGNORED. */
	feed(&f, 4, IN_DELETE_SELF, 0, NULL);
	feed(&f, 4, IN_IGNORED, 0, NULL);
	feed(&f, 1, IN_DELETE | IN_ISDIR, 0, "dx");
	assert_null(watch_dir_find(&f.w, 4));
	assert_null(watch_ended(&f.w));
	assert_string_equal(drain(&f, 0),
			    "create d/\nrename d -> z/\ncreate z/e/f\ndelete z/\ndelete dx/\n");
	watch_free(&f.w);
	/* A held directory move flushed by a record of another directory
	 * reorders the table under it (found by fuzz_agent_watch). */
	fx_init(&f, true, 16, 64);
	assert_int_equal(watch_dir_add(&f.w, 2, "a", 1), 0);
	assert_int_equal(watch_dir_add(&f.w, 3, "b", 1), 0);
	feed(&f, 1, IN_MOVED_FROM | IN_ISDIR, 9, "a");
	feed(&f, 3, IN_IGNORED, 0, NULL);
	assert_null(watch_dir_find(&f.w, 2));
	assert_null(watch_dir_find(&f.w, 3));
	assert_int_equal(f.w.ndirs, 1);
	assert_string_equal(drain(&f, 0), "delete a/\n");
	watch_free(&f.w);
}

static void test_queue_overflow(void **state)
{
	struct fx f;
	const struct agent_fs_event *e;

	(void)state;
	fx_init(&f, false, 16, 16);
	for (int i = 0; i < 40; i++) {
		char name[8];

		snprintf(name, sizeof(name), "f%d", i);
		feed(&f, 1, IN_CREATE, 0, name);
	}
	/* 16 held, 24 dropped: the overflow comes once there is room. */
	e = watch_peek(&f.w);
	assert_non_null(e);
	assert_string_equal(e->path, "f0");
	for (int i = 0; i < 16; i++)
		watch_pop(&f.w);
	e = watch_peek(&f.w);
	assert_non_null(e);
	assert_int_equal(e->kind, AGENT_FS_OVERFLOW);
	assert_int_equal(e->seq, 16);
	assert_string_equal(e->reason, "queue");
	assert_int_equal(e->dropped, 24);
	watch_pop(&f.w);
	/* The stream goes on, seq without holes. */
	feed(&f, 1, IN_DELETE, 0, "f0");
	assert_string_equal(drain(&f, 17), "delete f0\n");
	/* An event arriving while the queue is full after an overflow: the
	 * overflow takes the first free slot, before any later event. */
	for (int i = 0; i < 17; i++)
		feed(&f, 1, IN_DELETE, 0, "g");
	watch_pop(&f.w);
	feed(&f, 1, IN_CREATE, 0, "h");
	for (int i = 0; i < 15; i++)
		watch_pop(&f.w);
	assert_string_equal(drain(&f, 34), "overflow queue 1\noverflow queue 1\n");
	/* The kernel's overflow, reported as such. */
	feed(&f, -1, IN_Q_OVERFLOW, 0, NULL);
	assert_string_equal(drain(&f, 36), "overflow kernel 0\n");
	watch_free(&f.w);
}

static void test_limits(void **state)
{
	struct fx f;
	char big[AGENT_PATH_MAX + 1];

	(void)state;
	fx_init(&f, true, 2, 64);
	assert_int_equal(watch_dir_add(&f.w, 2, "a", 1), 0);
	assert_int_equal(watch_dir_add(&f.w, 3, "b", 1), -ENOSPC);
	/* The same wd again (the kernel's answer for a known inode): a move. */
	assert_int_equal(watch_dir_add(&f.w, 2, "c", 1), 0);
	assert_string_equal(watch_dir_find(&f.w, 2)->rel, "c");
	assert_string_equal(drain(&f, 0), "overflow watch_limit 0\n");
	/* A name that would make the path longer than a path may be. */
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	feed(&f, 2, IN_CREATE, 0, big);
	assert_string_equal(drain(&f, 1), "overflow queue 0\n");
	{
		size_t n;
		char *s = watch_join("c", 1, big, AGENT_PATH_MAX - 2, &n);

		assert_non_null(s);
		assert_int_equal(n, AGENT_PATH_MAX);
		free(s);
		assert_null(watch_join("c", 1, big, AGENT_PATH_MAX - 1, &n));
	}
	watch_free(&f.w);
	/* Bad sizes. */
	assert_int_equal(watch_init(&f.w, false, 1, 0), -EINVAL);
	assert_int_equal(watch_init(&f.w, false, 0, 16), -EINVAL);
	assert_int_equal(watch_init(&f.w, false, 1, AGENT_WATCH_QUEUE_MAX + 1), -EINVAL);
}

static void test_root_gone(void **state)
{
	static const struct {
		uint32_t mask;
		const char *reason;
	} cases[] = {
		{ IN_DELETE_SELF, "deleted" },
		{ IN_MOVE_SELF, "moved" },
		{ IN_UNMOUNT, "unmounted" },
		{ IN_IGNORED, "deleted" },
	};
	struct fx f;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		fx_init(&f, false, 4, 16);
		feed(&f, 1, IN_CREATE, 0, "x");
		feed(&f, 1, cases[i].mask, 0, NULL);
		assert_string_equal(watch_ended(&f.w), cases[i].reason);
		/* Nothing after the end; what came before is still delivered. */
		feed(&f, 1, IN_CREATE, 0, "y");
		assert_string_equal(drain(&f, 0), "create x\n");
		watch_free(&f.w);
	}
	/* A held move is flushed before the end. */
	fx_init(&f, false, 4, 16);
	feed(&f, 1, IN_MOVED_FROM, 3, "x");
	feed(&f, 1, IN_DELETE_SELF, 0, NULL);
	assert_string_equal(drain(&f, 0), "delete x\n");
	watch_free(&f.w);
}

/* Record buffers as read() returns them, and hostile ones. */
static void test_records(void **state)
{
	uint8_t buf[256];
	struct inotify_event ev = { .wd = 3, .mask = IN_CREATE, .cookie = 0, .len = 16 };
	const char *name;
	uint32_t mask, cookie;
	size_t pos = 0, n, off;
	int wd;

	(void)state;
	memset(buf, 0, sizeof(buf));
	memcpy(buf, &ev, sizeof(ev));
	memcpy(buf + sizeof(ev), "hello", 5);
	off = sizeof(ev) + 16;
	ev.len = 0;
	ev.mask = IN_IGNORED;
	memcpy(buf + off, &ev, sizeof(ev));
	off += sizeof(ev);
	assert_true(watch_record_next(buf, off, &pos, &wd, &mask, &cookie, &name, &n));
	assert_int_equal(wd, 3);
	assert_int_equal(n, 5);
	assert_memory_equal(name, "hello", 5);
	assert_true(watch_record_next(buf, off, &pos, &wd, &mask, &cookie, &name, &n));
	assert_int_equal(mask, IN_IGNORED);
	assert_int_equal(n, 0);
	assert_false(watch_record_next(buf, off, &pos, &wd, &mask, &cookie, &name, &n));
	/* A name length past the buffer, a cut header, a name without NUL. */
	ev.len = 1000;
	memcpy(buf, &ev, sizeof(ev));
	pos = 0;
	assert_false(watch_record_next(buf, sizeof(buf), &pos, &wd, &mask, &cookie, &name, &n));
	pos = 0;
	assert_false(watch_record_next(buf, sizeof(ev) - 1, &pos, &wd, &mask, &cookie, &name, &n));
	ev.len = 4;
	memcpy(buf, &ev, sizeof(ev));
	memcpy(buf + sizeof(ev), "abcd", 4);
	pos = 0;
	assert_true(watch_record_next(buf, sizeof(ev) + 4, &pos, &wd, &mask, &cookie, &name, &n));
	assert_int_equal(n, 4);
	pos = SIZE_MAX;
	assert_false(watch_record_next(buf, sizeof(buf), &pos, &wd, &mask, &cookie, &name, &n));
}

/* ---- request and lines ---- */

static void test_request_parse(void **state)
{
	static const struct {
		const char *line;
		enum agent_code code;
	} bad[] = {
		{ "{\"type\":\"watch\"}", AGENT_E_MISSING_FIELD },
		{ "{\"type\":\"watch\",\"path\":\"rel\"}", AGENT_E_BAD_FIELD },
		{ "{\"type\":\"watch\",\"path\":\"/x\",\"recursive\":1}", AGENT_E_BAD_FIELD },
		{ "{\"type\":\"watch\",\"path\":\"/x\",\"max_watches\":0}", AGENT_E_BAD_FIELD },
		{ "{\"type\":\"watch\",\"path\":\"/x\",\"max_watches\":65537}", AGENT_E_BAD_FIELD },
		{ "{\"type\":\"watch\",\"path\":\"/x\",\"queue\":15}", AGENT_E_BAD_FIELD },
		{ "{\"type\":\"watch\",\"path\":\"/x\",\"queue\":-1}", AGENT_E_BAD_FIELD },
		{ "{\"type\":\"watch\",\"path\":\"/x\",\"user\":\"nobody\"}", AGENT_E_BAD_FIELD },
		{ "{\"type\":\"watch\",\"path\":\"/x\",\"follow\":true}", AGENT_E_UNKNOWN_FIELD },
		{ "{\"type\":\"watch\",\"path\":\"/x\",\"len\":3}", AGENT_E_BAD_FIELD },
	};
	struct agent_msg m;
	struct agent_err err;
	const char *ok =
		"{\"type\":\"watch\",\"path\":\"/w\",\"recursive\":true,\"max_watches\":5,\"queue\":16,\"user\":\"root\"}";

	(void)state;
	assert_int_equal(agent_msg_parse_line(ok, strlen(ok), AGENT_CTX_REQUEST, &m, &err),
			 AGENT_OK);
	assert_int_equal(m.type, AGENT_T_WATCH);
	assert_string_equal(m.u.watch.path, "/w");
	assert_true(m.u.watch.recursive);
	assert_int_equal(m.u.watch.max_watches, 5);
	assert_int_equal(m.u.watch.queue, 16);
	assert_int_equal(m.u.watch.user, AGENT_USER_ROOT);
	agent_msg_free(&m);
	ok = "{\"type\":\"watch\",\"path\":\"/w\"}";
	assert_int_equal(agent_msg_parse_line(ok, strlen(ok), AGENT_CTX_REQUEST, &m, &err),
			 AGENT_OK);
	assert_false(m.u.watch.recursive);
	assert_int_equal(m.u.watch.max_watches, AGENT_WATCH_WATCHES_DEFAULT);
	assert_int_equal(m.u.watch.queue, AGENT_WATCH_QUEUE_DEFAULT);
	assert_int_equal(m.u.watch.user, AGENT_USER_USER);
	agent_msg_free(&m);
	/* Not on an attached stream. */
	assert_int_equal(agent_msg_parse_line(ok, strlen(ok), AGENT_CTX_ATTACHED, &m, &err),
			 AGENT_E_UNEXPECTED_TYPE);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (agent_msg_parse_line(bad[i].line, strlen(bad[i].line), AGENT_CTX_REQUEST, &m,
					 &err) != bad[i].code)
			fail_msg("%s: got %s (%s)", bad[i].line, agent_code_name(err.code),
				 err.msg);
	}
}

/* Lines are not NUL-terminated: compare with their length. */
static void line_is(struct agent_line *l, const char *want)
{
	if (l->len != strlen(want) || memcmp(l->data, want, l->len))
		fail_msg("line %.*s, wanted %s", (int)l->len, l->data, want);
	agent_line_free(l);
}

static void test_lines(void **state)
{
	struct agent_line l;
	struct agent_fs_event ev = { .kind = AGENT_FS_RENAME,
				     .seq = 4,
				     .path = "a/n\xff",
				     .path_len = 4,
				     .old_path = "a/o",
				     .old_len = 3 };

	(void)state;
	assert_int_equal(agent_line_fs_event(&l, &ev), 0);
	line_is(&l,
		"{\"type\":\"fs_event\",\"seq\":4,\"event\":\"rename\",\"path\":\"a/n\xef\xbf\xbd\",\"old_path\":\"a/o\",\"is_dir\":false,\"lossy\":true}\n");
	ev = (struct agent_fs_event){ .kind = AGENT_FS_OVERFLOW, .seq = 9, .reason = "kernel" };
	assert_int_equal(agent_line_fs_event(&l, &ev), 0);
	line_is(&l,
		"{\"type\":\"fs_event\",\"seq\":9,\"event\":\"overflow\",\"reason\":\"kernel\",\"dropped\":0}\n");
	ev.kind = AGENT_FS_KIND_COUNT;
	assert_int_equal(agent_line_fs_event(&l, &ev), -EINVAL);
	assert_int_equal(agent_line_watching(&l, "/w", true, 3), 0);
	line_is(&l, "{\"type\":\"watching\",\"path\":\"/w\",\"recursive\":true,\"watches\":3}\n");
	assert_int_equal(agent_line_watch_end(&l, 12, "deleted"), 0);
	line_is(&l, "{\"type\":\"watch_end\",\"seq\":12,\"reason\":\"deleted\"}\n");
	assert_int_equal(agent_fs_kind_parse("modify"), AGENT_FS_MODIFY);
	assert_int_equal(agent_fs_kind_parse("attrib"), -1);
	assert_null(agent_fs_kind_name(AGENT_FS_KIND_COUNT));
}

/* ---- the whole path on this machine ---- */

/* The real watch handler behind a kiln-vmm-like socket (fake_agent.h). */
static void serve_watch(struct agent_conn *c, struct agent_msg *m)
{
	agent_serve_watch(NULL, c, m);
}

/* The next event as a drain()-style line; fails after 5 s. */
static void expect(struct agent_client_watch *w, const char *want)
{
	struct agent_client_fs_event ev;
	struct agent_client_err e;
	const char *end = NULL;
	char got[512];
	int r = agent_client_watch_next(w, 5000, &ev, &end, &e);

	if (r == 1)
		snprintf(got, sizeof(got), "end %s", end);
	else if (r < 0)
		fail_msg("watch_next: %d %s (wanted %s)", r, e.msg, want);
	else if (ev.kind == AGENT_FS_RENAME)
		snprintf(got, sizeof(got), "rename %s -> %s%s", ev.old_path, ev.path,
			 ev.is_dir ? "/" : "");
	else
		snprintf(got, sizeof(got), "%s %s%s", agent_fs_kind_name(ev.kind),
			 ev.path ? ev.path : ev.reason, ev.is_dir ? "/" : "");
	assert_string_equal(got, want);
}

static void put_file(const char *dir, const char *name, const char *text, const char *mode)
{
	char p[256];
	FILE *fp;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	fp = fopen(p, mode);
	assert_non_null(fp);
	fputs(text, fp);
	fclose(fp);
}

static void test_watch_real(void **state)
{
	struct tmpdir_fx *t = *state;
	struct agent_client_watch_opts o = { .recursive = true, .user = AGENT_USER_ROOT };
	struct agent_client_watch *w;
	struct agent_client_err e;
	struct agent_client c;
	struct fake_agent v;
	char p[256], q[256];
	uint32_t watches = 0;

	fake_agent_start(&v, 3, serve_watch);
	assert_int_equal(agent_client_init(&c, v.v.path), 0);
	c.timeout_ms = 5000;
	/* One directory already there, so the first answer counts 2 watches. */
	snprintf(p, sizeof(p), "%s/old", t->dir);
	assert_int_equal(mkdir(p, 0755), 0);
	if (agent_client_watch(&c, t->dir, &o, &w, &watches, &e) != 0)
		fail_msg("watch: %s", e.msg);
	assert_int_equal(watches, 2);
	put_file(t->dir, "a.txt", "one\n", "w");
	put_file(t->dir, "a.txt", "two\n", "a");
	snprintf(p, sizeof(p), "%s/a.txt", t->dir);
	snprintf(q, sizeof(q), "%s/b.txt", t->dir);
	assert_int_equal(rename(p, q), 0);
	assert_int_equal(unlink(q), 0);
	snprintf(p, sizeof(p), "%s/new", t->dir);
	assert_int_equal(mkdir(p, 0755), 0);
	put_file(p, "inner.txt", "x", "w");
	put_file(t->dir, "old/deep.txt", "y", "w");
	expect(w, "create a.txt");
	expect(w, "modify a.txt");
	expect(w, "modify a.txt");
	expect(w, "rename a.txt -> b.txt");
	expect(w, "delete b.txt");
	expect(w, "create new/");
	/* The file may be made before or after the new directory's watch: a
	 * scan reports what was there, inotify what came after. */
	expect(w, "create new/inner.txt");
	{
		struct agent_client_fs_event ev;
		int r;

		/* The scan and inotify may both have seen it. */
		r = agent_client_watch_next(w, 5000, &ev, NULL, &e);
		assert_int_equal(r, 0);
		if (ev.kind == AGENT_FS_CREATE && !strcmp(ev.path, "new/inner.txt"))
			r = agent_client_watch_next(w, 5000, &ev, NULL, &e);
		if (r == 0 && ev.kind == AGENT_FS_MODIFY && !strcmp(ev.path, "new/inner.txt"))
			r = agent_client_watch_next(w, 5000, &ev, NULL, &e);
		assert_int_equal(r, 0);
		assert_int_equal(ev.kind, AGENT_FS_CREATE);
		assert_string_equal(ev.path, "old/deep.txt");
	}
	expect(w, "modify old/deep.txt");
	/* The directory moved away: the watch ends, saying so. */
	snprintf(p, sizeof(p), "%s-moved", t->dir);
	assert_int_equal(rename(t->dir, p), 0);
	expect(w, "end moved");
	agent_client_watch_close(w);
	assert_int_equal(rename(p, t->dir), 0);

	/* Errors reach the caller with the agent's code. */
	snprintf(p, sizeof(p), "%s/missing", t->dir);
	assert_int_equal(agent_client_watch(&c, p, &o, &w, NULL, &e), -EREMOTEIO);
	assert_int_equal(e.code, AGENT_E_NOT_FOUND);
	put_file(t->dir, "file", "", "w");
	snprintf(p, sizeof(p), "%s/file", t->dir);
	assert_int_equal(agent_client_watch(&c, p, &o, &w, NULL, &e), -EREMOTEIO);
	assert_int_equal(e.code, AGENT_E_NOT_DIRECTORY);
	fake_agent_stop(&v);

	/* Refused locally, before any connection: a relative path. */
	assert_int_equal(agent_client_watch(&c, "rel", &o, &w, NULL, &e), -EINVAL);
	assert_int_equal(e.fail, AGENT_FAIL_REQUEST);
}

/* As "user": a subdirectory that user may not read is not watched, and
 * an overflow with reason watch_limit says so; the rest is watched. */
static void test_watch_as_user(void **state)
{
	struct tmpdir_fx *t = *state;
	struct agent_client_watch_opts o = { .recursive = true, .user = AGENT_USER_USER };
	struct agent_client_watch *w;
	struct agent_client_err e;
	struct agent_client c;
	struct fake_agent v;
	char p[256];
	uint32_t watches = 0;

	assert_int_equal(chmod(t->dir, 0755), 0);
	snprintf(p, sizeof(p), "%s/open", t->dir);
	assert_int_equal(mkdir(p, 0777), 0);
	assert_int_equal(chmod(p, 0777), 0);
	snprintf(p, sizeof(p), "%s/open/closed", t->dir);
	assert_int_equal(mkdir(p, 0700), 0);
	fake_agent_start(&v, 1, serve_watch);
	assert_int_equal(agent_client_init(&c, v.v.path), 0);
	c.timeout_ms = 5000;
	snprintf(p, sizeof(p), "%s/open", t->dir);
	if (agent_client_watch(&c, p, &o, &w, &watches, &e) != 0)
		fail_msg("watch: %s", e.msg);
	assert_int_equal(watches, 1);
	expect(w, "overflow watch_limit");
	agent_client_watch_close(w);
	fake_agent_stop(&v);
}

/* The host closes: the agent ends the watch (its handler returns). */
static void test_watch_cancel(void **state)
{
	struct tmpdir_fx *t = *state;
	struct agent_client_watch_opts o = { .user = AGENT_USER_ROOT };
	struct agent_client_watch *w;
	struct agent_client_fs_event ev;
	struct agent_client_err e;
	struct agent_client c;
	struct fake_agent v;

	fake_agent_start(&v, 1, serve_watch);
	assert_int_equal(agent_client_init(&c, v.v.path), 0);
	c.timeout_ms = 5000;
	assert_int_equal(agent_client_watch(&c, t->dir, &o, &w, NULL, &e), 0);
	assert_int_equal(agent_client_watch_next(w, 50, &ev, NULL, &e), -ETIMEDOUT);
	agent_client_watch_close(w);
	fake_agent_stop(&v); /* joins: the handler noticed the close */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_basic_events),
		cmocka_unit_test(test_modify_interleaved),
		cmocka_unit_test(test_rename_pairing),
		cmocka_unit_test(test_dir_moves),
		cmocka_unit_test(test_queue_overflow),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_root_gone),
		cmocka_unit_test(test_records),
		cmocka_unit_test(test_request_parse),
		cmocka_unit_test(test_lines),
		cmocka_unit_test_setup_teardown(test_watch_real, tmpdir_setup, tmpdir_teardown),
		cmocka_unit_test_setup_teardown(test_watch_as_user, tmpdir_setup, tmpdir_teardown),
		cmocka_unit_test_setup_teardown(test_watch_cancel, tmpdir_setup, tmpdir_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
