/*
 * fuse_remote: FUSE requests built byte by byte, as a guest kernel (or a
 * hostile guest) sends them, turned into the share protocol's request
 * lines; replies written as a client (or a hostile one) would, turned
 * back into FUSE replies. Every op, the node table across renames, the
 * read-only share, and replies that break the protocol.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <linux/fuse.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "devices/fs/fuse_remote.h"

#define BUF (FS_REMOTE_IO_MAX + 4096)

struct fx {
	struct fuse_remote *fr;
	uint8_t in[BUF];
	uint8_t out[BUF];
	char line[FS_REMOTE_LINE_MAX];
	size_t line_len;
	long out_len;
	uint64_t unique;
	struct err e;
};

/* ---- builders ---- */

/* Header + fixed argument + up to two NUL-terminated names + data. */
static size_t build(struct fx *f, uint32_t op, uint64_t nodeid, const void *arg, size_t alen,
		    const char *n1, const char *n2, const void *data, size_t dlen)
{
	struct fuse_in_header h = { .opcode = op, .nodeid = nodeid, .unique = ++f->unique };
	size_t len = sizeof(h);

	if (alen)
		memcpy(f->in + len, arg, alen);
	len += alen;
	if (n1) {
		memcpy(f->in + len, n1, strlen(n1) + 1);
		len += strlen(n1) + 1;
	}
	if (n2) {
		memcpy(f->in + len, n2, strlen(n2) + 1);
		len += strlen(n2) + 1;
	}
	if (dlen)
		memcpy(f->in + len, data, dlen);
	len += dlen;
	h.len = (uint32_t)len;
	memcpy(f->in, &h, sizeof(h));
	return len;
}

/* Send a request; the reply's error (0, -errno), or 1 when a line went out. */
static int req(struct fx *f, uint32_t op, uint64_t nodeid, const void *arg, size_t alen,
	       const char *n1, const char *n2)
{
	size_t len = build(f, op, nodeid, arg, alen, n1, n2, NULL, 0);
	struct fuse_out_header oh;

	f->out_len = fuse_remote_begin(f->fr, f->in, len, f->out, sizeof(f->out), f->line,
				       &f->line_len);
	if (f->line_len) {
		assert_int_equal(f->out_len, 0);
		assert_true(f->line_len <= FS_REMOTE_LINE_MAX);
		assert_int_equal(f->line[f->line_len - 1], '\n');
		assert_null(memchr(f->line, '\n', f->line_len - 1));
		return 1;
	}
	assert_true(f->out_len >= (long)sizeof(oh));
	memcpy(&oh, f->out, sizeof(oh));
	assert_int_equal(oh.len, f->out_len);
	assert_int_equal(oh.unique, f->unique);
	return oh.error;
}

/* Answer the pending line with {"id":ID<rest>}: the reply's error. */
static int answer(struct fx *f, const char *rest)
{
	char buf[8192];
	struct fuse_out_header oh;
	int n = snprintf(buf, sizeof(buf), "{\"id\":%u%s}\n", fuse_remote_pending_id(f->fr), rest);

	f->out_len = fuse_remote_finish(f->fr, buf, (size_t)n, f->out, sizeof(f->out), &f->e);
	memcpy(&oh, f->out, sizeof(oh));
	assert_int_equal(oh.len, f->out_len);
	assert_int_equal(oh.unique, f->unique);
	return oh.error;
}

/* Answer with a raw line. */
static int answer_raw(struct fx *f, const char *line, size_t len)
{
	struct fuse_out_header oh;

	f->out_len = fuse_remote_finish(f->fr, line, len, f->out, sizeof(f->out), &f->e);
	memcpy(&oh, f->out, sizeof(oh));
	return oh.error;
}

/* The pending line, parsed; checks op and path. */
static json_t *line_is(struct fx *f, const char *op, const char *path)
{
	json_t *o = json_loadb(f->line, f->line_len, 0, NULL);

	assert_non_null(o);
	assert_int_equal(json_integer_value(json_object_get(o, "id")),
			 fuse_remote_pending_id(f->fr));
	assert_string_equal(json_string_value(json_object_get(o, "op")), op);
	assert_string_equal(json_string_value(json_object_get(o, "path")), path);
	return o;
}

static void *body(struct fx *f)
{
	return f->out + sizeof(struct fuse_out_header);
}

static void init(struct fx *f)
{
	struct fuse_init_in in = { .major = FUSE_KERNEL_VERSION,
				   .minor = 31,
				   .flags = FUSE_MAX_PAGES | FUSE_DO_READDIRPLUS };
	struct fuse_init_out out;

	assert_int_equal(req(f, FUSE_INIT, 0, &in, sizeof(in), NULL, NULL), 0);
	memcpy(&out, body(f), sizeof(out));
	assert_int_equal(out.max_write, FS_REMOTE_IO_MAX);
	assert_int_equal(out.max_pages, FS_REMOTE_IO_MAX / 4096);
	assert_int_equal(out.flags & FUSE_DO_READDIRPLUS, 0); /* a stat line per name: no */
}

static int setup_ro_flag(void **state, int ro)
{
	struct fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	assert_int_equal(fuse_remote_new(&f->fr, ro), 0);
	init(f);
	*state = f;
	return 0;
}

static int setup_rw(void **state)
{
	return setup_ro_flag(state, 0);
}

static int setup_ro(void **state)
{
	return setup_ro_flag(state, 1);
}

static int teardown(void **state)
{
	struct fx *f = *state;

	fuse_remote_free(f->fr);
	free(f);
	return 0;
}

/* LOOKUP name in parent answered with a stat of type/size: the node id. */
static uint64_t lookup(struct fx *f, uint64_t parent, const char *name, const char *stat)
{
	struct fuse_entry_out eo;

	assert_int_equal(req(f, FUSE_LOOKUP, parent, NULL, 0, name, NULL), 1);
	assert_int_equal(answer(f, stat), 0);
	memcpy(&eo, body(f), sizeof(eo));
	assert_int_not_equal(eo.nodeid, 0);
	assert_int_equal(eo.attr.ino, eo.nodeid);
	return eo.nodeid;
}

static uint64_t open_node(struct fx *f, uint64_t node, uint32_t op, uint32_t flags)
{
	struct fuse_open_in in = { .flags = flags };
	struct fuse_open_out oo;

	assert_int_equal(req(f, op, node, &in, sizeof(in), NULL, NULL), 0);
	memcpy(&oo, body(f), sizeof(oo));
	return oo.fh;
}

/* ---- tests ---- */

static void test_lookup_getattr(void **state)
{
	struct fx *f = *state;
	struct fuse_entry_out eo;
	struct fuse_attr_out ao;
	struct fuse_getattr_in gi = { 0 };
	uint64_t a, b;
	json_t *o;

	assert_int_equal(req(f, FUSE_LOOKUP, FUSE_ROOT_ID, NULL, 0, "a.txt", NULL), 1);
	o = line_is(f, "stat", "/a.txt");
	assert_int_equal(json_object_size(o), 3);
	json_decref(o);
	assert_int_equal(answer(f, ",\"type\":\"file\",\"size\":5,\"mtime\":12.5"), 0);
	assert_string_equal(f->e.msg, "");
	memcpy(&eo, body(f), sizeof(eo));
	assert_int_equal(eo.attr.mode, S_IFREG | 0644);
	assert_int_equal(eo.attr.size, 5);
	assert_int_equal(eo.attr.mtime, 12);
	assert_int_equal(eo.attr.mtimensec, 500000000);
	assert_int_equal(eo.entry_valid, 1);
	a = eo.nodeid;
	/* The same path is the same node. */
	b = lookup(f, FUSE_ROOT_ID, "a.txt", ",\"type\":\"file\",\"size\":7,\"mode\":384");
	assert_int_equal(a, b);
	assert_int_equal(fuse_remote_nodes(f->fr), 2);

	assert_int_equal(req(f, FUSE_GETATTR, a, &gi, sizeof(gi), NULL, NULL), 1);
	json_decref(line_is(f, "stat", "/a.txt"));
	assert_int_equal(answer(f, ",\"type\":\"file\",\"size\":9"), 0);
	memcpy(&ao, body(f), sizeof(ao));
	assert_int_equal(ao.attr.size, 9);
	assert_int_equal(ao.attr.mode, S_IFREG | 0644);

	/* The root's stat asks for "/". */
	assert_int_equal(req(f, FUSE_GETATTR, FUSE_ROOT_ID, &gi, sizeof(gi), NULL, NULL), 1);
	json_decref(line_is(f, "stat", "/"));
	assert_int_equal(answer(f, ",\"type\":\"dir\",\"size\":0"), 0);
	memcpy(&ao, body(f), sizeof(ao));
	assert_int_equal(ao.attr.mode, S_IFDIR | 0755);

	/* Client errors pass through by name. */
	assert_int_equal(req(f, FUSE_LOOKUP, FUSE_ROOT_ID, NULL, 0, "nope", NULL), 1);
	assert_int_equal(answer(f, ",\"error\":\"ENOENT\""), -ENOENT);
	assert_string_equal(f->e.msg, "");

	/* FORGET drops the node after both lookups. */
	struct fuse_forget_in fi = { .nlookup = 2 };

	build(f, FUSE_FORGET, a, &fi, sizeof(fi), NULL, NULL, NULL, 0);
	assert_int_equal(fuse_remote_begin(f->fr, f->in, sizeof(struct fuse_in_header) + sizeof(fi),
					   f->out, sizeof(f->out), f->line, &f->line_len),
			 0);
	assert_int_equal(f->line_len, 0);
	assert_int_equal(fuse_remote_nodes(f->fr), 1);
	assert_int_equal(req(f, FUSE_GETATTR, a, &gi, sizeof(gi), NULL, NULL), -ENOENT);
}

static void test_read_write(void **state)
{
	struct fx *f = *state;
	struct fuse_read_in ri = { .offset = 3, .size = 10 };
	struct fuse_write_in wi = { .offset = 4, .size = 5 };
	struct fuse_write_out wo;
	struct fuse_attr_out ao;
	struct fuse_getattr_in gi = { 0 };
	struct fuse_setattr_in si = { .valid = FATTR_MODE, .mode = 0600 };
	uint64_t n = lookup(f, FUSE_ROOT_ID, "f", ",\"type\":\"file\",\"size\":5");
	uint64_t fh = open_node(f, n, FUSE_OPEN, O_RDWR);
	size_t len;
	json_t *o;

	ri.fh = fh;
	assert_int_equal(req(f, FUSE_READ, 0, &ri, sizeof(ri), NULL, NULL), 1);
	o = line_is(f, "read", "/f");
	assert_int_equal(json_integer_value(json_object_get(o, "offset")), 3);
	assert_int_equal(json_integer_value(json_object_get(o, "size")), 10);
	json_decref(o);
	assert_int_equal(answer(f, ",\"data\":\"aGVsbG8=\""), 0);
	assert_int_equal(f->out_len, sizeof(struct fuse_out_header) + 5);
	assert_memory_equal(body(f), "hello", 5);
	/* More than asked: EIO, and why. */
	ri.size = 2;
	assert_int_equal(req(f, FUSE_READ, 0, &ri, sizeof(ri), NULL, NULL), 1);
	assert_int_equal(answer(f, ",\"data\":\"aGVsbG8=\""), -EIO);
	assert_non_null(strstr(f->e.msg, "read"));
	/* A read larger than the protocol's is asked as FS_REMOTE_IO_MAX. */
	ri.size = 1 << 20;
	assert_int_equal(req(f, FUSE_READ, 0, &ri, sizeof(ri), NULL, NULL), 1);
	o = line_is(f, "read", "/f");
	assert_int_equal(json_integer_value(json_object_get(o, "size")), FS_REMOTE_IO_MAX);
	json_decref(o);
	assert_int_equal(answer(f, ",\"data\":\"\""), 0);
	assert_int_equal(f->out_len, sizeof(struct fuse_out_header));

	wi.fh = fh;
	len = build(f, FUSE_WRITE, n, &wi, sizeof(wi), NULL, NULL, "world", 5);
	assert_int_equal(fuse_remote_begin(f->fr, f->in, len, f->out, sizeof(f->out), f->line,
					   &f->line_len),
			 0);
	assert_true(f->line_len > 0);
	o = line_is(f, "write", "/f");
	assert_int_equal(json_integer_value(json_object_get(o, "offset")), 4);
	assert_string_equal(json_string_value(json_object_get(o, "data")), "d29ybGQ=");
	json_decref(o);
	assert_int_equal(answer(f, ",\"size\":5"), 0);
	memcpy(&wo, body(f), sizeof(wo));
	assert_int_equal(wo.size, 5);
	/* The cached size grew: a mode change answers it without a line. */
	assert_int_equal(req(f, FUSE_SETATTR, n, &si, sizeof(si), NULL, NULL), 0);
	memcpy(&ao, body(f), sizeof(ao));
	assert_int_equal(ao.attr.size, 9);
	/* More written than sent: EIO. */
	len = build(f, FUSE_WRITE, n, &wi, sizeof(wi), NULL, NULL, "world", 5);
	fuse_remote_begin(f->fr, f->in, len, f->out, sizeof(f->out), f->line, &f->line_len);
	assert_int_equal(answer(f, ",\"size\":6"), -EIO);
	/* Data the header claims but the request lacks. */
	wi.size = 100;
	len = build(f, FUSE_WRITE, n, &wi, sizeof(wi), NULL, NULL, "world", 5);
	fuse_remote_begin(f->fr, f->in, len, f->out, sizeof(f->out), f->line, &f->line_len);
	assert_int_equal(f->line_len, 0);
	assert_int_equal(((struct fuse_out_header *)f->out)->error, -EINVAL);

	/* SETATTR(size) is a truncate line. */
	si = (struct fuse_setattr_in){ .valid = FATTR_SIZE, .size = 2 };
	assert_int_equal(req(f, FUSE_SETATTR, n, &si, sizeof(si), NULL, NULL), 1);
	o = line_is(f, "truncate", "/f");
	assert_int_equal(json_integer_value(json_object_get(o, "size")), 2);
	json_decref(o);
	assert_int_equal(answer(f, ""), 0);
	memcpy(&ao, body(f), sizeof(ao));
	assert_int_equal(ao.attr.size, 2);
	(void)gi;

	/* Handles: made up, the wrong kind, released. */
	ri.fh = fh + 1;
	assert_int_equal(req(f, FUSE_READ, 0, &ri, sizeof(ri), NULL, NULL), -EBADF);
	ri.fh = fh;
	assert_int_equal(req(f, FUSE_READDIR, 0, &ri, sizeof(ri), NULL, NULL), -EBADF);
	struct fuse_release_in rel = { .fh = fh };

	assert_int_equal(req(f, FUSE_FLUSH, 0, &rel, sizeof(struct fuse_flush_in), NULL, NULL), 0);
	assert_int_equal(req(f, FUSE_RELEASE, 0, &rel, sizeof(rel), NULL, NULL), 0);
	assert_int_equal(fuse_remote_handles(f->fr), 0);
	assert_int_equal(req(f, FUSE_READ, 0, &ri, sizeof(ri), NULL, NULL), -EBADF);
	assert_int_equal(req(f, FUSE_RELEASE, 0, &rel, sizeof(rel), NULL, NULL), -EBADF);
	/* A directory is not opened as a file, nor a file as a directory. */
	assert_int_equal(req(f, FUSE_OPEN, FUSE_ROOT_ID, &(struct fuse_open_in){ 0 },
			     sizeof(struct fuse_open_in), NULL, NULL),
			 -EISDIR);
	assert_int_equal(req(f, FUSE_OPENDIR, n, &(struct fuse_open_in){ 0 },
			     sizeof(struct fuse_open_in), NULL, NULL),
			 -ENOTDIR);
}

/* The dirents of a READDIR reply: names joined by ' ', the last offset. */
static uint64_t dirents(struct fx *f, char *names, size_t cap)
{
	size_t pos = 0, len = (size_t)f->out_len - sizeof(struct fuse_out_header);
	uint64_t off = 0;

	names[0] = '\0';
	while (pos < len) {
		struct fuse_dirent d;

		memcpy(&d, (uint8_t *)body(f) + pos, sizeof(d));
		snprintf(names + strlen(names), cap - strlen(names), "%s%.*s%s",
			 names[0] ? " " : "", (int)d.namelen,
			 (char *)body(f) + pos + FUSE_NAME_OFFSET, d.type == DT_DIR ? "/" : "");
		off = d.off;
		pos += FUSE_DIRENT_ALIGN(FUSE_NAME_OFFSET + d.namelen);
	}
	return off;
}

static void test_readdir(void **state)
{
	struct fx *f = *state;
	struct fuse_read_in ri = { .size = 4096 };
	const char *list = ",\"entries\":[{\"name\":\"a\",\"type\":\"file\"},"
			   "{\"name\":\"sub\",\"type\":\"dir\"},{\"name\":\"z\",\"type\":\"file\"}]";
	char names[256];
	uint64_t off;

	ri.fh = open_node(f, FUSE_ROOT_ID, FUSE_OPENDIR, O_RDONLY);
	assert_int_equal(req(f, FUSE_READDIR, 0, &ri, sizeof(ri), NULL, NULL), 1);
	json_decref(line_is(f, "readdir", "/"));
	assert_int_equal(answer(f, list), 0);
	off = dirents(f, names, sizeof(names));
	assert_string_equal(names, "./ ../ a sub/ z");
	assert_int_equal(off, 5);
	/* Continue from an offset: the listing again, from there. */
	ri.offset = 3;
	assert_int_equal(req(f, FUSE_READDIR, 0, &ri, sizeof(ri), NULL, NULL), 1);
	assert_int_equal(answer(f, list), 0);
	dirents(f, names, sizeof(names));
	assert_string_equal(names, "sub/ z");
	/* A small buffer takes what fits. */
	ri.offset = 0;
	ri.size = 63; /* "." takes 32 */
	assert_int_equal(req(f, FUSE_READDIR, 0, &ri, sizeof(ri), NULL, NULL), 1);
	assert_int_equal(answer(f, list), 0);
	dirents(f, names, sizeof(names));
	assert_string_equal(names, "./");
	/* Bad entries: each refused, the listing with it. */
	static const char *bad[] = {
		",\"entries\":[{\"name\":\"a/b\",\"type\":\"file\"}]",
		",\"entries\":[{\"name\":\"..\",\"type\":\"dir\"}]",
		",\"entries\":[{\"name\":\"\",\"type\":\"dir\"}]",
		",\"entries\":[{\"name\":\"a\\u0000b\",\"type\":\"file\"}]",
		",\"entries\":[{\"name\":\"a\",\"type\":\"link\"}]",
		",\"entries\":[{\"name\":\"a\"}]",
		",\"entries\":[\"a\"]",
		",\"entries\":{}",
		"",
	};
	ri.size = 4096;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(req(f, FUSE_READDIR, 0, &ri, sizeof(ri), NULL, NULL), 1);
		assert_int_equal(answer(f, bad[i]), -EIO);
		assert_string_not_equal(f->e.msg, "");
	}
	/* More than FS_REMOTE_ENTRIES_MAX entries. */
	char *big = malloc(48 * (FS_REMOTE_ENTRIES_MAX + 1) + 64), *p = big;

	p += sprintf(p, "{\"id\":%u,\"entries\":[", fuse_remote_pending_id(f->fr) + 1);
	for (unsigned i = 0; i <= FS_REMOTE_ENTRIES_MAX; i++)
		p += sprintf(p, "%s{\"name\":\"%u\",\"type\":\"file\"}", i ? "," : "", i);
	p += sprintf(p, "]}");
	assert_int_equal(req(f, FUSE_READDIR, 0, &ri, sizeof(ri), NULL, NULL), 1);
	assert_int_equal(answer_raw(f, big, (size_t)(p - big)), -EIO);
	free(big);
}

static void test_namespace_ops(void **state)
{
	struct fx *f = *state;
	struct fuse_mkdir_in mi = { .mode = 0750 };
	struct fuse_create_in ci = { .mode = S_IFREG | 06755, .flags = O_WRONLY };
	struct fuse_entry_out eo;
	struct fuse_open_out oo;
	json_t *o;

	assert_int_equal(req(f, FUSE_MKDIR, FUSE_ROOT_ID, &mi, sizeof(mi), "d", NULL), 1);
	o = line_is(f, "mkdir", "/d");
	assert_int_equal(json_integer_value(json_object_get(o, "mode")), 0750);
	json_decref(o);
	assert_int_equal(answer(f, ""), 0);
	memcpy(&eo, body(f), sizeof(eo));
	assert_int_equal(eo.attr.mode, S_IFDIR | 0750);

	assert_int_equal(req(f, FUSE_CREATE, eo.nodeid, &ci, sizeof(ci), "x", NULL), 1);
	o = line_is(f, "create", "/d/x");
	/* No set-id bits reach the client. */
	assert_int_equal(json_integer_value(json_object_get(o, "mode")), 0755);
	json_decref(o);
	assert_int_equal(answer(f, ""), 0);
	assert_int_equal(f->out_len, sizeof(struct fuse_out_header) + sizeof(eo) + sizeof(oo));
	memcpy(&oo, (uint8_t *)body(f) + sizeof(eo), sizeof(oo));
	assert_int_not_equal(oo.fh, 0);
	assert_int_equal(fuse_remote_handles(f->fr), 1);
	assert_int_equal(req(f, FUSE_CREATE, eo.nodeid, &ci, sizeof(ci), "x", NULL), 1);
	assert_int_equal(answer(f, ",\"error\":\"EEXIST\""), -EEXIST);

	assert_int_equal(req(f, FUSE_UNLINK, eo.nodeid, NULL, 0, "x", NULL), 1);
	json_decref(line_is(f, "unlink", "/d/x"));
	assert_int_equal(answer(f, ""), 0);
	assert_int_equal(req(f, FUSE_RMDIR, FUSE_ROOT_ID, NULL, 0, "d", NULL), 1);
	json_decref(line_is(f, "rmdir", "/d"));
	assert_int_equal(answer(f, ",\"error\":\"ENOTEMPTY\""), -ENOTEMPTY);

	/* MKNOD of a regular file is a create; of anything else, EPERM. */
	struct fuse_mknod_in ni = { .mode = S_IFREG | 0600 };

	assert_int_equal(req(f, FUSE_MKNOD, FUSE_ROOT_ID, &ni, sizeof(ni), "n", NULL), 1);
	json_decref(line_is(f, "create", "/n"));
	assert_int_equal(answer(f, ""), 0);
	assert_int_equal(f->out_len, sizeof(struct fuse_out_header) + sizeof(eo));
	ni.mode = S_IFIFO | 0600;
	assert_int_equal(req(f, FUSE_MKNOD, FUSE_ROOT_ID, &ni, sizeof(ni), "p", NULL), -EPERM);

	/* Names: '/', "..", too long, not UTF-8, parent a file. */
	char longname[300];

	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	assert_int_equal(req(f, FUSE_LOOKUP, FUSE_ROOT_ID, NULL, 0, "a/b", NULL), -EINVAL);
	assert_int_equal(req(f, FUSE_LOOKUP, FUSE_ROOT_ID, NULL, 0, "..", NULL), -EINVAL);
	assert_int_equal(req(f, FUSE_LOOKUP, FUSE_ROOT_ID, NULL, 0, longname, NULL), -ENAMETOOLONG);
	assert_int_equal(req(f, FUSE_LOOKUP, FUSE_ROOT_ID, NULL, 0, "\xff\xfe", NULL), -EINVAL);
	assert_int_equal(req(f, FUSE_LOOKUP, eo.nodeid, NULL, 0, "y", NULL), 1); /* d: a dir */
	assert_int_equal(answer(f, ",\"error\":\"ENOENT\""), -ENOENT);
	uint64_t file = lookup(f, FUSE_ROOT_ID, "n", ",\"type\":\"file\",\"size\":0");

	assert_int_equal(req(f, FUSE_LOOKUP, file, NULL, 0, "y", NULL), -ENOTDIR);
	/* Control characters travel escaped, on one line. */
	assert_int_equal(req(f, FUSE_LOOKUP, FUSE_ROOT_ID, NULL, 0, "a\nb\"c", NULL), 1);
	json_decref(line_is(f, "stat", "/a\nb\"c"));
	assert_int_equal(answer(f, ",\"error\":\"ENOENT\""), -ENOENT);
}

static void test_path_bounds(void **state)
{
	struct fx *f = *state;
	char name[256];
	uint64_t dir = FUSE_ROOT_ID;

	memset(name, 'n', 255);
	name[255] = '\0';
	/* 15 levels of 256 bytes: 3840; one more name of 255 makes 4096. */
	for (int i = 0; i < 15; i++)
		dir = lookup(f, dir, name, ",\"type\":\"dir\",\"size\":0");
	assert_int_equal(req(f, FUSE_LOOKUP, dir, NULL, 0, name, NULL), 1);
	assert_int_equal(answer(f, ",\"error\":\"ENOENT\""), -ENOENT);
	name[254] = 'x'; /* same length */
	assert_int_equal(req(f, FUSE_LOOKUP, dir, NULL, 0, name, NULL), 1);
	answer(f, ",\"error\":\"ENOENT\"");
	char longer[257];

	memset(longer, 'n', 256);
	longer[256] = '\0';
	assert_int_equal(req(f, FUSE_LOOKUP, dir, NULL, 0, longer, NULL), -ENAMETOOLONG);
	/* "/q" more: 3842 + 1 + 254 = 4097 bytes. */
	uint64_t d2 = lookup(f, dir, "q", ",\"type\":\"dir\",\"size\":0");

	assert_int_equal(req(f, FUSE_LOOKUP, d2, NULL, 0, name + 1, NULL), -ENAMETOOLONG);
}

static void test_rename_moves_descendants(void **state)
{
	struct fx *f = *state;
	struct fuse_rename_in rn;
	struct fuse_getattr_in gi = { 0 };
	uint64_t d = lookup(f, FUSE_ROOT_ID, "d", ",\"type\":\"dir\",\"size\":0");
	uint64_t s = lookup(f, d, "s", ",\"type\":\"dir\",\"size\":0");
	uint64_t x = lookup(f, s, "x", ",\"type\":\"file\",\"size\":1");
	uint64_t dd = lookup(f, FUSE_ROOT_ID, "dd", ",\"type\":\"file\",\"size\":1");
	uint64_t e = lookup(f, FUSE_ROOT_ID, "e", ",\"type\":\"dir\",\"size\":0");
	json_t *o;

	rn.newdir = e;
	assert_int_equal(req(f, FUSE_RENAME, FUSE_ROOT_ID, &rn, sizeof(rn), "d", "moved"), 1);
	o = line_is(f, "rename", "/d");
	assert_string_equal(json_string_value(json_object_get(o, "to")), "/e/moved");
	json_decref(o);
	assert_int_equal(answer(f, ""), 0);
	/* Beneath the moved directory, paths follow it; "/dd" is not beneath "/d". */
	assert_int_equal(req(f, FUSE_GETATTR, x, &gi, sizeof(gi), NULL, NULL), 1);
	json_decref(line_is(f, "stat", "/e/moved/s/x"));
	answer(f, ",\"type\":\"file\",\"size\":1");
	assert_int_equal(req(f, FUSE_GETATTR, dd, &gi, sizeof(gi), NULL, NULL), 1);
	json_decref(line_is(f, "stat", "/dd"));
	answer(f, ",\"type\":\"file\",\"size\":1");
	/* A lookup of the new path finds the same node. */
	assert_int_equal(lookup(f, e, "moved", ",\"type\":\"dir\",\"size\":0"), d);
	/* The old path is a new node now. */
	assert_int_not_equal(lookup(f, FUSE_ROOT_ID, "d", ",\"type\":\"dir\",\"size\":0"), d);
	/* Into itself: refused without a line. */
	rn.newdir = s;
	assert_int_equal(req(f, FUSE_RENAME, e, &rn, sizeof(rn), "moved", "in"), -EINVAL);
	/* Onto an ancestor (a guest kernel never asks; a hostile one may):
	 * refused as rename(2) does, without a line, so the node table never
	 * has to move a directory over its own parent. */
	rn.newdir = FUSE_ROOT_ID;
	assert_int_equal(req(f, FUSE_RENAME, d, &rn, sizeof(rn), "s", "e"), -ENOTEMPTY);
	rn.newdir = e;
	assert_int_equal(req(f, FUSE_RENAME, s, &rn, sizeof(rn), "x", "moved"), -ENOTEMPTY);
	/* A file renamed over another: the replaced one's node no longer
	 * answers to that path. */
	rn.newdir = FUSE_ROOT_ID;
	assert_int_equal(req(f, FUSE_RENAME, s, &rn, sizeof(rn), "x", "dd"), 1);
	json_decref(line_is(f, "rename", "/e/moved/s/x"));
	assert_int_equal(answer(f, ""), 0);
	assert_int_equal(lookup(f, FUSE_ROOT_ID, "dd", ",\"type\":\"file\",\"size\":1"), x);
	/* A failed rename moves nothing. */
	assert_int_equal(req(f, FUSE_RENAME, FUSE_ROOT_ID, &rn, sizeof(rn), "dd", "zz"), 1);
	assert_int_equal(answer(f, ",\"error\":\"EACCES\""), -EACCES);
	assert_int_equal(lookup(f, FUSE_ROOT_ID, "dd", ",\"type\":\"file\",\"size\":1"), x);
	/* A name renamed onto itself stays its node. */
	assert_int_equal(req(f, FUSE_RENAME, FUSE_ROOT_ID, &rn, sizeof(rn), "dd", "dd"), 1);
	assert_int_equal(answer(f, ""), 0);
	assert_int_equal(lookup(f, FUSE_ROOT_ID, "dd", ",\"type\":\"file\",\"size\":1"), x);
	/* A directory renamed over one the client let it replace: the nodes
	 * beneath the replaced one are not found by their old paths. */
	uint64_t g = lookup(f, FUSE_ROOT_ID, "g", ",\"type\":\"dir\",\"size\":0");
	uint64_t gk = lookup(f, g, "k", ",\"type\":\"file\",\"size\":0");
	uint64_t h = lookup(f, FUSE_ROOT_ID, "h", ",\"type\":\"dir\",\"size\":0");

	assert_int_equal(req(f, FUSE_RENAME, FUSE_ROOT_ID, &rn, sizeof(rn), "h", "g"), 1);
	assert_int_equal(answer(f, ""), 0);
	assert_int_equal(lookup(f, FUSE_ROOT_ID, "g", ",\"type\":\"dir\",\"size\":0"), h);
	assert_int_not_equal(lookup(f, h, "k", ",\"type\":\"file\",\"size\":0"), gk);
	/* RENAME2 (flags) is not the protocol's. */
	struct fuse_rename2_in r2 = { .newdir = FUSE_ROOT_ID, .flags = 1 };

	assert_int_equal(req(f, FUSE_RENAME2, FUSE_ROOT_ID, &r2, sizeof(r2), "dd", "zz"), -ENOSYS);
}

static void test_read_only(void **state)
{
	struct fx *f = *state;
	struct fuse_mkdir_in mi = { .mode = 0755 };
	struct fuse_create_in ci = { .mode = 0644 };
	struct fuse_setattr_in si = { .valid = FATTR_SIZE };
	struct fuse_access_in ai = { .mask = W_OK };
	struct fuse_rename_in rn = { .newdir = FUSE_ROOT_ID };
	uint64_t n = lookup(f, FUSE_ROOT_ID, "f", ",\"type\":\"file\",\"size\":5");

	assert_int_equal(req(f, FUSE_MKDIR, FUSE_ROOT_ID, &mi, sizeof(mi), "d", NULL), -EROFS);
	assert_int_equal(req(f, FUSE_CREATE, FUSE_ROOT_ID, &ci, sizeof(ci), "c", NULL), -EROFS);
	assert_int_equal(req(f, FUSE_UNLINK, FUSE_ROOT_ID, NULL, 0, "f", NULL), -EROFS);
	assert_int_equal(req(f, FUSE_RMDIR, FUSE_ROOT_ID, NULL, 0, "f", NULL), -EROFS);
	assert_int_equal(req(f, FUSE_RENAME, FUSE_ROOT_ID, &rn, sizeof(rn), "f", "g"), -EROFS);
	assert_int_equal(req(f, FUSE_SETATTR, n, &si, sizeof(si), NULL, NULL), -EROFS);
	assert_int_equal(req(f, FUSE_ACCESS, n, &ai, sizeof(ai), NULL, NULL), -EROFS);
	assert_int_equal(req(f, FUSE_OPEN, n, &(struct fuse_open_in){ .flags = O_WRONLY },
			     sizeof(struct fuse_open_in), NULL, NULL),
			 -EROFS);
	struct fuse_write_in wi = { .fh = open_node(f, n, FUSE_OPEN, O_RDONLY), .size = 1 };
	size_t len = build(f, FUSE_WRITE, n, &wi, sizeof(wi), NULL, NULL, "x", 1);

	fuse_remote_begin(f->fr, f->in, len, f->out, sizeof(f->out), f->line, &f->line_len);
	assert_int_equal(f->line_len, 0);
	assert_int_equal(((struct fuse_out_header *)f->out)->error, -EROFS);
	/* Reading still asks. */
	struct fuse_read_in ri = { .fh = wi.fh, .size = 5 };

	assert_int_equal(req(f, FUSE_READ, 0, &ri, sizeof(ri), NULL, NULL), 1);
	assert_int_equal(answer(f, ",\"data\":\"aGVsbG8=\""), 0);
}

static void test_bad_replies(void **state)
{
	struct fx *f = *state;
	static const char *bad_stat[] = {
		"",
		",\"type\":\"file\"",
		",\"type\":\"link\",\"size\":0",
		",\"type\":1,\"size\":0",
		",\"type\":\"file\",\"size\":-1",
		",\"type\":\"file\",\"size\":\"5\"",
		",\"type\":\"file\",\"size\":1.5",
		",\"type\":\"file\",\"size\":0,\"mode\":4096",
		",\"type\":\"file\",\"size\":0,\"mode\":-1",
		",\"type\":\"file\",\"size\":0,\"mtime\":-1",
		",\"type\":\"file\",\"size\":0,\"mtime\":\"now\"",
		",\"type\":\"file\",\"size\":0,\"mtime\":1e300",
		",\"error\":\"EBOGUS\"",
		",\"error\":5",
		",\"type\":\"file\",\"size\":0,\"size\":1",
	};
	static const char *bad_lines[] = {
		"",
		"\n",
		"not json\n",
		"[1]\n",
		"{}\n",
		"{\"id\":\"1\"}\n",
		"{\"id\":0}\n",
		"{\"id\":-1}\n",
		"{\"id\":4294967296}\n",
		"{\"id\":1,\"type\":\"file\",\"size\":0}{}\n",
	};

	for (size_t i = 0; i < sizeof(bad_stat) / sizeof(bad_stat[0]); i++) {
		assert_int_equal(req(f, FUSE_LOOKUP, FUSE_ROOT_ID, NULL, 0, "a", NULL), 1);
		assert_int_equal(answer(f, bad_stat[i]), -EIO);
		assert_string_not_equal(f->e.msg, "");
	}
	/* A reply for another id. */
	assert_int_equal(req(f, FUSE_LOOKUP, FUSE_ROOT_ID, NULL, 0, "a", NULL), 1);
	char line[128];
	int n = snprintf(line, sizeof(line), "{\"id\":%u,\"type\":\"file\",\"size\":0}\n",
			 fuse_remote_pending_id(f->fr) + 1);

	assert_int_equal(answer_raw(f, line, (size_t)n), -EIO);
	assert_non_null(strstr(f->e.msg, "id"));
	for (size_t i = 0; i < sizeof(bad_lines) / sizeof(bad_lines[0]); i++) {
		assert_int_equal(req(f, FUSE_LOOKUP, FUSE_ROOT_ID, NULL, 0, "a", NULL), 1);
		assert_int_equal(answer_raw(f, bad_lines[i], strlen(bad_lines[i])), -EIO);
		assert_string_not_equal(f->e.msg, "");
	}
	/* No reply at all (timeout, dead client): EIO, nothing to blame. */
	assert_int_equal(req(f, FUSE_LOOKUP, FUSE_ROOT_ID, NULL, 0, "a", NULL), 1);
	assert_int_equal(answer_raw(f, NULL, 0), -EIO);
	assert_string_equal(f->e.msg, "");
	/* "EIO" by name is a client's answer, not a broken line. */
	assert_int_equal(req(f, FUSE_LOOKUP, FUSE_ROOT_ID, NULL, 0, "a", NULL), 1);
	assert_int_equal(answer(f, ",\"error\":\"EIO\""), -EIO);
	assert_string_equal(f->e.msg, "");
	/* Every error name of the protocol. */
	static const struct {
		const char *n;
		int e;
	} names[] = { { "ENOENT", ENOENT },
		      { "EEXIST", EEXIST },
		      { "ENOTDIR", ENOTDIR },
		      { "EISDIR", EISDIR },
		      { "ENOTEMPTY", ENOTEMPTY },
		      { "EACCES", EACCES },
		      { "EPERM", EPERM },
		      { "EROFS", EROFS },
		      { "ENOSPC", ENOSPC },
		      { "EINVAL", EINVAL },
		      { "ENOSYS", ENOSYS },
		      { "EFBIG", EFBIG },
		      { "ENAMETOOLONG", ENAMETOOLONG } };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char rest[64];

		snprintf(rest, sizeof(rest), ",\"error\":\"%s\"", names[i].n);
		assert_int_equal(req(f, FUSE_LOOKUP, FUSE_ROOT_ID, NULL, 0, "a", NULL), 1);
		assert_int_equal(answer(f, rest), -names[i].e);
	}
	/* A read's data: not base64, not canonical, too long. */
	uint64_t node = lookup(f, FUSE_ROOT_ID, "f", ",\"type\":\"file\",\"size\":5");
	struct fuse_read_in ri = { .fh = open_node(f, node, FUSE_OPEN, O_RDONLY), .size = 3 };
	static const char *bad_data[] = { ",\"data\":\"aGVsbG8\"",
					  ",\"data\":\"aGV$\"",
					  ",\"data\":\"aGVsbA==\"",
					  ",\"data\":\"aGVs bG8=\"",
					  ",\"data\":\"aGVsbG8=\"",
					  ",\"data\":5",
					  "" };
	for (size_t i = 0; i < sizeof(bad_data) / sizeof(bad_data[0]); i++) {
		assert_int_equal(req(f, FUSE_READ, 0, &ri, sizeof(ri), NULL, NULL), 1);
		assert_int_equal(answer(f, bad_data[i]), -EIO);
	}
	/* A line over the maximum. */
	char *big = malloc(FS_REMOTE_LINE_MAX + 1);

	memset(big, ' ', FS_REMOTE_LINE_MAX + 1);
	assert_int_equal(req(f, FUSE_LOOKUP, FUSE_ROOT_ID, NULL, 0, "a", NULL), 1);
	assert_int_equal(answer_raw(f, big, FS_REMOTE_LINE_MAX + 1), -EIO);
	free(big);
	/* A type that changed: the old node is not the new one. */
	uint64_t a = lookup(f, FUSE_ROOT_ID, "t", ",\"type\":\"file\",\"size\":0");

	assert_int_not_equal(lookup(f, FUSE_ROOT_ID, "t", ",\"type\":\"dir\",\"size\":0"), a);
}

static void test_hostile_requests(void **state)
{
	struct fx *f = *state;
	struct fuse_getattr_in gi = { 0 };
	struct fuse_in_header h = { .len = 10, .opcode = FUSE_GETATTR, .unique = 7 };

	/* Made-up node ids. */
	assert_int_equal(req(f, FUSE_GETATTR, 12345, &gi, sizeof(gi), NULL, NULL), -ENOENT);
	assert_int_equal(req(f, FUSE_GETATTR, (1ull << 32) | FUSE_ROOT_ID, &gi, sizeof(gi), NULL,
			     NULL),
			 -ENOENT);
	/* Framing: a length that lies, a short header. */
	memcpy(f->in, &h, sizeof(h));
	f->out_len = fuse_remote_begin(f->fr, f->in, sizeof(h), f->out, sizeof(f->out), f->line,
				       &f->line_len);
	assert_int_equal(((struct fuse_out_header *)f->out)->error, -EINVAL);
	f->out_len = fuse_remote_begin(f->fr, f->in, 3, f->out, sizeof(f->out), f->line,
				       &f->line_len);
	assert_int_equal(((struct fuse_out_header *)f->out)->error, -EINVAL);
	/* No room for a header: no reply. */
	build(f, FUSE_GETATTR, FUSE_ROOT_ID, &gi, sizeof(gi), NULL, NULL, NULL, 0);
	assert_int_equal(fuse_remote_begin(f->fr, f->in, sizeof(h) + sizeof(gi), f->out, 8, f->line,
					   &f->line_len),
			 0);
	assert_int_equal(f->line_len, 0);
	/* A name not terminated inside the request. */
	build(f, FUSE_LOOKUP, FUSE_ROOT_ID, NULL, 0, NULL, NULL, "abc", 3);
	f->out_len = fuse_remote_begin(f->fr, f->in, sizeof(h) + 3, f->out, sizeof(f->out), f->line,
				       &f->line_len);
	assert_int_equal(((struct fuse_out_header *)f->out)->error, -EINVAL);
	/* Ops the protocol has none for. */
	assert_int_equal(req(f, FUSE_SYMLINK, FUSE_ROOT_ID, NULL, 0, "l", "t"), -ENOSYS);
	assert_int_equal(req(f, FUSE_GETXATTR, FUSE_ROOT_ID, NULL, 0, NULL, NULL), -ENOSYS);
	assert_int_equal(req(f, FUSE_READDIRPLUS, FUSE_ROOT_ID, NULL, 0, NULL, NULL), -ENOSYS);
	assert_int_equal(req(f, 9999, FUSE_ROOT_ID, NULL, 0, NULL, NULL), -ENOSYS);
	/* STATFS answers locally. */
	assert_int_equal(req(f, FUSE_STATFS, FUSE_ROOT_ID, NULL, 0, NULL, NULL), 0);
	/* The handle table is bounded. */
	unsigned i;

	for (i = 0; i < FUSE_REMOTE_MAX_HANDLES; i++)
		open_node(f, FUSE_ROOT_ID, FUSE_OPENDIR, O_RDONLY);
	assert_int_equal(req(f, FUSE_OPENDIR, FUSE_ROOT_ID, &(struct fuse_open_in){ 0 },
			     sizeof(struct fuse_open_in), NULL, NULL),
			 -ENFILE);
	/* DESTROY drops them all; then nothing but INIT is served. */
	assert_int_equal(req(f, FUSE_DESTROY, 0, NULL, 0, NULL, NULL), 0);
	assert_int_equal(fuse_remote_handles(f->fr), 0);
	assert_int_equal(req(f, FUSE_GETATTR, FUSE_ROOT_ID, &gi, sizeof(gi), NULL, NULL), -EIO);
	/* finish() without a request pending writes nothing. */
	assert_int_equal(fuse_remote_finish(f->fr, "{}", 2, f->out, sizeof(f->out), &f->e), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_lookup_getattr, setup_rw, teardown),
		cmocka_unit_test_setup_teardown(test_read_write, setup_rw, teardown),
		cmocka_unit_test_setup_teardown(test_readdir, setup_rw, teardown),
		cmocka_unit_test_setup_teardown(test_namespace_ops, setup_rw, teardown),
		cmocka_unit_test_setup_teardown(test_path_bounds, setup_rw, teardown),
		cmocka_unit_test_setup_teardown(test_rename_moves_descendants, setup_rw, teardown),
		cmocka_unit_test_setup_teardown(test_read_only, setup_ro, teardown),
		cmocka_unit_test_setup_teardown(test_bad_replies, setup_rw, teardown),
		cmocka_unit_test_setup_teardown(test_hostile_requests, setup_rw, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
