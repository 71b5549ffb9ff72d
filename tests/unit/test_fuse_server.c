/*
 * fuse_server: FUSE requests built byte by byte, as a guest kernel (or a
 * hostile guest) would send them, against a share in a mkdtemp() directory
 * that also holds a file *outside* the share. Round trips check the host
 * side too; escapes through "..", '/' and symlinks must fail with the exact
 * errno, and so must every kind of malformed request.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <linux/fuse.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <grp.h>
#include <unistd.h>
#include <linux/mount.h>

#include "devices/fs/fuse_server.h"
#include "devices/fs/fuse_state.h"

#define BUF (FUSE_SERVER_MAX_REPLY)

struct fx {
	char base[64]; /* mkdtemp: holds share/ and secret */
	char share[96];
	char secret[96]; /* outside the share: must stay unreachable */
	struct fuse_server *s;
	uint8_t in[BUF];
	uint8_t out[BUF];
	long out_len;
	uint64_t unique;
	int fds; /* open before the server: all must be closed again after */
};

/* ---- request builders ---- */

/* Header + fixed argument + up to two NUL-terminated names. */
static size_t build(struct fx *f, uint32_t op, uint64_t nodeid, const void *arg, size_t alen,
		    const char *n1, const char *n2)
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
	h.len = (uint32_t)len;
	memcpy(f->in, &h, sizeof(h));
	return len;
}

/* Send f->in[0, len) with reply room `cap`; returns the reply's error and
 * checks the header is consistent. */
static int32_t send_cap(struct fx *f, size_t len, size_t cap)
{
	struct fuse_out_header oh;

	f->out_len = fuse_server_handle(f->s, f->in, len, f->out, cap);
	assert_true(f->out_len >= (long)sizeof(oh));
	assert_true((size_t)f->out_len <= cap);
	memcpy(&oh, f->out, sizeof(oh));
	assert_int_equal(oh.len, f->out_len);
	if (oh.error)
		assert_int_equal(oh.len, sizeof(oh)); /* errors carry no body */
	return oh.error;
}

static int32_t send_req(struct fx *f, size_t len)
{
	return send_cap(f, len, BUF);
}

static const void *body(struct fx *f)
{
	return f->out + sizeof(struct fuse_out_header);
}

static size_t body_len(struct fx *f)
{
	return (size_t)f->out_len - sizeof(struct fuse_out_header);
}

static int32_t do_init(struct fx *f)
{
	struct fuse_init_in in = {
		.major = 7, .minor = 38, .max_readahead = 131072, .flags = 0xffffffffu
	};

	return send_req(f, build(f, FUSE_INIT, 0, &in, sizeof(in), NULL, NULL));
}

static int32_t lookup(struct fx *f, uint64_t dir, const char *name, struct fuse_entry_out *eo)
{
	int32_t err = send_req(f, build(f, FUSE_LOOKUP, dir, NULL, 0, name, NULL));

	if (!err) {
		assert_int_equal(body_len(f), sizeof(*eo));
		memcpy(eo, body(f), sizeof(*eo));
	}
	return err;
}

static int32_t create(struct fx *f, uint64_t dir, const char *name, uint32_t flags, uint32_t mode,
		      struct fuse_entry_out *eo, uint64_t *fh)
{
	struct fuse_create_in in = { .flags = flags, .mode = S_IFREG | mode };
	struct fuse_open_out oo;
	int32_t err = send_req(f, build(f, FUSE_CREATE, dir, &in, sizeof(in), name, NULL));

	if (!err) {
		assert_int_equal(body_len(f), sizeof(*eo) + sizeof(oo));
		memcpy(eo, body(f), sizeof(*eo));
		memcpy(&oo, (const uint8_t *)body(f) + sizeof(*eo), sizeof(oo));
		*fh = oo.fh;
	}
	return err;
}

static int32_t open_node(struct fx *f, uint32_t op, uint64_t node, uint32_t flags, uint64_t *fh)
{
	struct fuse_open_in in = { .flags = flags };
	struct fuse_open_out oo;
	int32_t err = send_req(f, build(f, op, node, &in, sizeof(in), NULL, NULL));

	if (!err) {
		memcpy(&oo, body(f), sizeof(oo));
		*fh = oo.fh;
	}
	return err;
}

static int32_t write_fh(struct fx *f, uint64_t node, uint64_t fh, uint64_t off, const char *data)
{
	struct fuse_write_in in = { .fh = fh, .offset = off, .size = (uint32_t)strlen(data) };

	/* The data follows the fixed argument like a name would, minus the NUL. */
	size_t len = build(f, FUSE_WRITE, node, &in, sizeof(in), NULL, NULL);
	struct fuse_in_header h;

	memcpy(f->in + len, data, strlen(data));
	len += strlen(data);
	memcpy(&h, f->in, sizeof(h));
	h.len = (uint32_t)len;
	memcpy(f->in, &h, sizeof(h));
	return send_req(f, len);
}

static int32_t read_fh(struct fx *f, uint32_t op, uint64_t node, uint64_t fh, uint64_t off,
		       uint32_t size)
{
	struct fuse_read_in in = { .fh = fh, .offset = off, .size = size };

	return send_req(f, build(f, op, node, &in, sizeof(in), NULL, NULL));
}

static int32_t release(struct fx *f, uint32_t op, uint64_t node, uint64_t fh)
{
	struct fuse_release_in in = { .fh = fh };

	return send_req(f, build(f, op, node, &in, sizeof(in), NULL, NULL));
}

static int32_t getattr(struct fx *f, uint64_t node, struct fuse_attr *a)
{
	struct fuse_getattr_in in = { 0 };
	struct fuse_attr_out ao;
	int32_t err = send_req(f, build(f, FUSE_GETATTR, node, &in, sizeof(in), NULL, NULL));

	if (!err) {
		memcpy(&ao, body(f), sizeof(ao));
		*a = ao.attr;
	}
	return err;
}

static int32_t mkdir_at(struct fx *f, uint64_t dir, const char *name, struct fuse_entry_out *eo)
{
	struct fuse_mkdir_in in = { .mode = 0755 };
	int32_t err = send_req(f, build(f, FUSE_MKDIR, dir, &in, sizeof(in), name, NULL));

	if (!err)
		memcpy(eo, body(f), sizeof(*eo));
	return err;
}

static int32_t rename_at(struct fx *f, uint32_t op, uint64_t dir, const char *from, uint64_t newdir,
			 const char *to, uint32_t flags)
{
	struct fuse_rename2_in in = { .newdir = newdir, .flags = flags };
	size_t alen = op == FUSE_RENAME ? sizeof(struct fuse_rename_in) : sizeof(in);

	return send_req(f, build(f, op, dir, &in, alen, from, to));
}

static int32_t setattr(struct fx *f, uint64_t node, const struct fuse_setattr_in *in,
		       struct fuse_attr *a)
{
	struct fuse_attr_out ao;
	int32_t err = send_req(f, build(f, FUSE_SETATTR, node, in, sizeof(*in), NULL, NULL));

	if (!err && a) {
		memcpy(&ao, body(f), sizeof(ao));
		*a = ao.attr;
	}
	return err;
}

static void forget(struct fx *f, uint64_t node, uint64_t n)
{
	struct fuse_forget_in in = { .nlookup = n };
	size_t len = build(f, FUSE_FORGET, node, &in, sizeof(in), NULL, NULL);

	assert_int_equal(fuse_server_handle(f->s, f->in, len, f->out, BUF), 0);
}

/* ---- host side ---- */

static void put_file(const char *path, const char *data)
{
	FILE *fp = fopen(path, "w");

	assert_non_null(fp);
	fputs(data, fp);
	fclose(fp);
}

static char *host_path(struct fx *f, const char *rel)
{
	static char p[256];

	snprintf(p, sizeof(p), "%s/%s", f->share, rel);
	return p;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	assert_non_null(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

static int fx_setup(void **state, int read_only)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct err e = { { 0 } };

	assert_non_null(f);
	strcpy(f->base, "/tmp/kiln-fuse-XXXXXX");
	assert_non_null(mkdtemp(f->base));
	snprintf(f->share, sizeof(f->share), "%s/share", f->base);
	snprintf(f->secret, sizeof(f->secret), "%s/secret", f->base);
	assert_int_equal(mkdir(f->share, 0755), 0);
	put_file(f->secret, "outside the share\n");
	put_file(host_path(f, "existing"), "old contents\n");
	f->fds = count_fds();
	assert_int_equal(fuse_server_open(&f->s, f->share, read_only, &e), 0);
	*state = f;
	return 0;
}

static int setup_rw(void **state)
{
	return fx_setup(state, 0);
}

static int setup_ro(void **state)
{
	return fx_setup(state, 1);
}

static int teardown(void **state)
{
	struct fx *f = *state;

	int want = f->fds, fds;

	fuse_server_close(f->s);
	fds = count_fds();
	nftw(f->base, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	free(f);
	assert_int_equal(fds, want); /* every node and handle closed */
	return 0;
}

/* Names of a READDIR(PLUS) reply as "|a|b|", plus the nodeid of `want`. */
static void dir_names(struct fx *f, int plus, char *names, size_t cap, const char *want,
		      uint64_t *want_node, uint64_t *dot_node)
{
	size_t pos = 0, len = body_len(f);

	strcpy(names, "|");
	while (pos < len) {
		struct fuse_entry_out eo = { 0 };
		struct fuse_dirent d;
		char name[256];

		if (plus) {
			memcpy(&eo, (const uint8_t *)body(f) + pos, sizeof(eo));
			pos += sizeof(eo);
		}
		memcpy(&d, (const uint8_t *)body(f) + pos, sizeof(d));
		assert_true(d.namelen < sizeof(name));
		memcpy(name, (const uint8_t *)body(f) + pos + FUSE_NAME_OFFSET, d.namelen);
		name[d.namelen] = 0;
		pos += FUSE_DIRENT_ALIGN(FUSE_NAME_OFFSET + d.namelen);
		if (want && !strcmp(name, want))
			*want_node = eo.nodeid;
		if (!strcmp(name, ".") && dot_node)
			*dot_node = eo.nodeid;
		strncat(names, name, cap - strlen(names) - 1);
		strncat(names, "|", cap - strlen(names) - 1);
	}
	assert_int_equal(pos, len);
}

/* ---- tests ---- */

/* INIT negotiates 7.38, caps max_write, and advertises only what exists. */
static void test_init(void **state)
{
	struct fx *f = *state;
	struct fuse_init_out io;
	struct fuse_init_in old = { .major = 7, .minor = 11 };

	assert_int_equal(do_init(f), 0);
	assert_int_equal(body_len(f), sizeof(io));
	memcpy(&io, body(f), sizeof(io));
	assert_int_equal(io.major, 7);
	assert_int_equal(io.minor, FUSE_KERNEL_MINOR_VERSION);
	assert_int_equal(io.max_write, FUSE_SERVER_MAX_WRITE);
	assert_int_equal(io.max_pages, FUSE_SERVER_MAX_WRITE / 4096);
	assert_int_equal(io.max_readahead, 131072);
	assert_true(io.flags & FUSE_DO_READDIRPLUS);
	assert_true(io.flags & FUSE_MAX_PAGES);
	/* Not implemented, so never advertised even when offered. */
	assert_false(io.flags &
		     (FUSE_POSIX_LOCKS | FUSE_FLOCK_LOCKS | FUSE_WRITEBACK_CACHE |
		      FUSE_EXPORT_SUPPORT | FUSE_SUBMOUNTS | FUSE_INIT_EXT | FUSE_MAP_ALIGNMENT |
		      FUSE_DONT_MASK | FUSE_POSIX_ACL | FUSE_SPLICE_READ));
	assert_true(fuse_server_active(f->s));
	/* Protocols older than 7.12 use other struct sizes: refused. */
	assert_int_equal(send_req(f, build(f, FUSE_INIT, 0, &old, sizeof(old), NULL, NULL)),
			 -EPROTO);
	/* DESTROY ends the session; requests other than INIT then get EIO. */
	assert_int_equal(send_req(f, build(f, FUSE_DESTROY, 0, NULL, 0, NULL, NULL)), 0);
	assert_false(fuse_server_active(f->s));
	assert_int_equal(send_req(f,
				  build(f, FUSE_LOOKUP, FUSE_ROOT_ID, NULL, 0, "existing", NULL)),
			 -EIO);
}

/* CREATE, WRITE, READ, GETATTR, LOOKUP, OPEN: the bytes land on the host. */
static void test_file_round_trip(void **state)
{
	struct fx *f = *state;
	struct fuse_entry_out eo, eo2;
	struct fuse_attr a;
	struct fuse_write_out wo;
	uint64_t fh, fh2;
	char buf[64] = { 0 };
	FILE *fp;
	struct stat st;

	assert_int_equal(do_init(f), 0);
	assert_int_equal(create(f, FUSE_ROOT_ID, "hello.txt", O_RDWR, 0644, &eo, &fh), 0);
	assert_true(S_ISREG(eo.attr.mode));
	assert_int_equal(eo.attr.mode & 07777, 0644);
	assert_int_equal(write_fh(f, eo.nodeid, fh, 0, "hello, world"), 0);
	memcpy(&wo, body(f), sizeof(wo));
	assert_int_equal(wo.size, 12);
	assert_int_equal(read_fh(f, FUSE_READ, eo.nodeid, fh, 7, 100), 0);
	assert_int_equal(body_len(f), 5);
	assert_memory_equal(body(f), "world", 5);
	assert_int_equal(release(f, FUSE_RELEASE, eo.nodeid, fh), 0);

	fp = fopen(host_path(f, "hello.txt"), "r");
	assert_non_null(fp);
	assert_non_null(fgets(buf, sizeof(buf), fp));
	fclose(fp);
	assert_string_equal(buf, "hello, world");
	assert_int_equal(stat(host_path(f, "hello.txt"), &st), 0);
	assert_int_equal(st.st_mode & 07777, 0644);

	/* The same inode: the same node id, one more lookup. */
	assert_int_equal(lookup(f, FUSE_ROOT_ID, "hello.txt", &eo2), 0);
	assert_int_equal(eo2.nodeid, eo.nodeid);
	assert_int_equal(eo2.attr.size, 12);
	assert_int_equal(getattr(f, eo.nodeid, &a), 0);
	assert_int_equal(a.size, 12);
	assert_int_equal(a.ino, st.st_ino);

	/* A file the host made is there too, and reads back. */
	assert_int_equal(lookup(f, FUSE_ROOT_ID, "existing", &eo2), 0);
	assert_int_equal(open_node(f, FUSE_OPEN, eo2.nodeid, O_RDONLY, &fh2), 0);
	assert_int_equal(read_fh(f, FUSE_READ, eo2.nodeid, fh2, 0, 4096), 0);
	assert_int_equal(body_len(f), strlen("old contents\n"));
	assert_memory_equal(body(f), "old contents\n", body_len(f));
	/* OPEN of a directory is OPENDIR's job. */
	assert_int_equal(open_node(f, FUSE_OPEN, FUSE_ROOT_ID, O_RDONLY, &fh), -EISDIR);
	assert_int_equal(lookup(f, FUSE_ROOT_ID, "missing", &eo2), -ENOENT);
}

/* MKDIR, CREATE inside it, READDIR and READDIRPLUS, RELEASEDIR. */
static void test_mkdir_readdir(void **state)
{
	struct fx *f = *state;
	struct fuse_entry_out d, x;
	uint64_t fh, dh, node = 0, dot = 1;
	char names[512];
	struct stat st;

	assert_int_equal(do_init(f), 0);
	assert_int_equal(mkdir_at(f, FUSE_ROOT_ID, "dir", &d), 0);
	assert_true(S_ISDIR(d.attr.mode));
	assert_int_equal(stat(host_path(f, "dir"), &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(mkdir_at(f, FUSE_ROOT_ID, "dir", &d), -EEXIST);
	assert_int_equal(create(f, d.nodeid, "inner", O_WRONLY, 0600, &x, &fh), 0);
	assert_int_equal(release(f, FUSE_RELEASE, x.nodeid, fh), 0);
	assert_int_equal(access(host_path(f, "dir/inner"), F_OK), 0);

	assert_int_equal(open_node(f, FUSE_OPENDIR, FUSE_ROOT_ID, 0, &dh), 0);
	assert_int_equal(read_fh(f, FUSE_READDIR, FUSE_ROOT_ID, dh, 0, 4096), 0);
	dir_names(f, 0, names, sizeof(names), NULL, NULL, NULL);
	assert_non_null(strstr(names, "|dir|"));
	assert_non_null(strstr(names, "|existing|"));
	assert_non_null(strstr(names, "|.|"));
	assert_non_null(strstr(names, "|..|"));
	assert_null(strstr(names, "inner"));

	/* READDIRPLUS: a real node for "dir", none for ".". */
	assert_int_equal(read_fh(f, FUSE_READDIRPLUS, FUSE_ROOT_ID, dh, 0, 4096), 0);
	dir_names(f, 1, names, sizeof(names), "dir", &node, &dot);
	assert_int_equal(node, d.nodeid);
	assert_int_equal(dot, 0);

	/* A buffer for one entry: the guest resumes from the offset it got. */
	assert_int_equal(read_fh(f, FUSE_READDIR, FUSE_ROOT_ID, dh, 0, 40), 0);
	assert_int_equal(body_len(f) > 0 && body_len(f) <= 40, 1);
	assert_int_equal(release(f, FUSE_RELEASEDIR, FUSE_ROOT_ID, dh), 0);
	/* OPENDIR of a file is refused. */
	assert_int_equal(open_node(f, FUSE_OPENDIR, x.nodeid, 0, &dh), -ENOTDIR);
}

/* RENAME, RENAME2 NOREPLACE, UNLINK, RMDIR, LINK, SYMLINK, READLINK. */
static void test_namespace_ops(void **state)
{
	struct fx *f = *state;
	struct fuse_entry_out a, d, l, s;
	struct fuse_link_in li;
	uint64_t fh;

	assert_int_equal(do_init(f), 0);
	assert_int_equal(create(f, FUSE_ROOT_ID, "a", O_WRONLY, 0644, &a, &fh), 0);
	assert_int_equal(release(f, FUSE_RELEASE, a.nodeid, fh), 0);
	assert_int_equal(mkdir_at(f, FUSE_ROOT_ID, "d", &d), 0);

	assert_int_equal(rename_at(f, FUSE_RENAME, FUSE_ROOT_ID, "a", d.nodeid, "b", 0), 0);
	assert_int_equal(access(host_path(f, "a"), F_OK), -1);
	assert_int_equal(access(host_path(f, "d/b"), F_OK), 0);
	assert_int_equal(rename_at(f, FUSE_RENAME2, d.nodeid, "b", FUSE_ROOT_ID, "existing",
				   RENAME_NOREPLACE),
			 -EEXIST);
	assert_int_equal(rename_at(f, FUSE_RENAME2, d.nodeid, "b", FUSE_ROOT_ID, "c",
				   RENAME_WHITEOUT),
			 -EINVAL);
	assert_int_equal(rename_at(f, FUSE_RENAME2, d.nodeid, "b", FUSE_ROOT_ID, "c",
				   RENAME_NOREPLACE),
			 0);
	assert_int_equal(access(host_path(f, "c"), F_OK), 0);

	li.oldnodeid = a.nodeid;
	assert_int_equal(send_req(f, build(f, FUSE_LINK, d.nodeid, &li, sizeof(li), "hard", NULL)),
			 0);
	memcpy(&l, body(f), sizeof(l));
	assert_int_equal(l.nodeid, a.nodeid);
	assert_int_equal(l.attr.nlink, 2);

	assert_int_equal(send_req(f,
				  build(f, FUSE_SYMLINK, FUSE_ROOT_ID, NULL, 0, "sym", "d/hard")),
			 0);
	memcpy(&s, body(f), sizeof(s));
	assert_true(S_ISLNK(s.attr.mode));
	assert_int_equal(send_req(f, build(f, FUSE_READLINK, s.nodeid, NULL, 0, NULL, NULL)), 0);
	assert_int_equal(body_len(f), 6);
	assert_memory_equal(body(f), "d/hard", 6);
	assert_int_equal(send_req(f, build(f, FUSE_READLINK, a.nodeid, NULL, 0, NULL, NULL)),
			 -EINVAL);

	assert_int_equal(send_req(f, build(f, FUSE_RMDIR, FUSE_ROOT_ID, NULL, 0, "d", NULL)),
			 -ENOTEMPTY);
	assert_int_equal(send_req(f, build(f, FUSE_UNLINK, d.nodeid, NULL, 0, "hard", NULL)), 0);
	assert_int_equal(send_req(f, build(f, FUSE_UNLINK, FUSE_ROOT_ID, NULL, 0, "c", NULL)), 0);
	assert_int_equal(send_req(f, build(f, FUSE_UNLINK, FUSE_ROOT_ID, NULL, 0, "sym", NULL)), 0);
	assert_int_equal(send_req(f, build(f, FUSE_RMDIR, FUSE_ROOT_ID, NULL, 0, "d", NULL)), 0);
	assert_int_equal(access(host_path(f, "d"), F_OK), -1);
	assert_int_equal(lookup(f, FUSE_ROOT_ID, "c", &a), -ENOENT);
}

/* SETATTR: mode (set-id stripped), size, explicit and NOW times. */
static void test_setattr(void **state)
{
	struct fx *f = *state;
	struct fuse_setattr_in in = { 0 };
	struct fuse_entry_out e;
	struct fuse_attr a;
	struct stat st;

	assert_int_equal(do_init(f), 0);
	assert_int_equal(lookup(f, FUSE_ROOT_ID, "existing", &e), 0);
	in.valid = FATTR_MODE;
	in.mode = S_IFREG | S_ISUID | S_ISGID | 0640;
	assert_int_equal(setattr(f, e.nodeid, &in, &a), 0);
	assert_int_equal(a.mode & 07777, 0640);
	in.valid = FATTR_SIZE | FATTR_MTIME | FATTR_ATIME;
	in.size = 3;
	in.mtime = 1000000;
	in.mtimensec = 5;
	in.atime = 2000000;
	assert_int_equal(setattr(f, e.nodeid, &in, &a), 0);
	assert_int_equal(a.size, 3);
	assert_int_equal(a.mtime, 1000000);
	assert_int_equal(stat(host_path(f, "existing"), &st), 0);
	assert_int_equal(st.st_size, 3);
	assert_int_equal(st.st_mode & 07777, 0640);
	assert_int_equal(st.st_mtim.tv_sec, 1000000);
	assert_int_equal(st.st_mtim.tv_nsec, 5);
	assert_int_equal(st.st_atim.tv_sec, 2000000);
	in.valid = FATTR_MTIME | FATTR_MTIME_NOW;
	assert_int_equal(setattr(f, e.nodeid, &in, &a), 0);
	assert_true(a.mtime > 1000000);
	assert_int_equal(a.atime, 2000000); /* untouched: UTIME_OMIT */
	/* A handle of another node: refused, nothing truncated. */
	in.valid = FATTR_SIZE | FATTR_FH;
	in.fh = 12345;
	in.size = 0;
	assert_int_equal(setattr(f, e.nodeid, &in, NULL), -EBADF);
	assert_int_equal(stat(host_path(f, "existing"), &st), 0);
	assert_int_equal(st.st_size, 3);
	/* Truncating a directory. */
	in.valid = FATTR_SIZE;
	assert_int_equal(setattr(f, FUSE_ROOT_ID, &in, NULL), -EISDIR);
}

/* "..", '/', "." and "" never name anything: the share root is a wall. */
static void test_dotdot_escape(void **state)
{
	struct fx *f = *state;
	struct fuse_entry_out e;
	struct fuse_mkdir_in mi = { .mode = 0755 };
	uint64_t fh;

	assert_int_equal(do_init(f), 0);
	assert_int_equal(lookup(f, FUSE_ROOT_ID, "..", &e), -EINVAL);
	assert_int_equal(lookup(f, FUSE_ROOT_ID, "../secret", &e), -EINVAL);
	assert_int_equal(lookup(f, FUSE_ROOT_ID, ".", &e), -EINVAL);
	assert_int_equal(lookup(f, FUSE_ROOT_ID, "", &e), -EINVAL);
	assert_int_equal(lookup(f, FUSE_ROOT_ID, "/etc/passwd", &e), -EINVAL);
	assert_int_equal(create(f, FUSE_ROOT_ID, "../planted", O_WRONLY, 0644, &e, &fh), -EINVAL);
	assert_int_equal(send_req(f,
				  build(f, FUSE_MKDIR, FUSE_ROOT_ID, &mi, sizeof(mi), "..", NULL)),
			 -EINVAL);
	assert_int_equal(send_req(f,
				  build(f, FUSE_UNLINK, FUSE_ROOT_ID, NULL, 0, "../secret", NULL)),
			 -EINVAL);
	assert_int_equal(rename_at(f, FUSE_RENAME, FUSE_ROOT_ID, "existing", FUSE_ROOT_ID,
				   "../moved", 0),
			 -EINVAL);
	assert_int_equal(access(f->secret, F_OK), 0);
	assert_int_equal(access(host_path(f, "existing"), F_OK), 0);
	snprintf(f->secret, sizeof(f->secret), "%s/planted", f->base);
	assert_int_equal(access(f->secret, F_OK), -1);
}

/* A detached clone of dir (what a graft must be); needs root. */
static int clone_dir(const char *dir)
{
	int fd = (int)syscall(SYS_open_tree, AT_FDCWD, dir, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);

	assert_true(fd >= 0);
	return fd;
}

/* Grafts: a directory outside the share (a detached clone) attached
 * under a name in its root; it shadows what the share holds there, goes
 * with ungraft; names, kinds and table bounds are checked. */
static void test_graft(void **state)
{
	struct fx *f = *state;
	struct fuse_entry_out e, r;
	char graft[128], inside[160], names[64];
	int fd;

	assert_int_equal(do_init(f), 0);
	snprintf(graft, sizeof(graft), "%s/graft", f->base);
	snprintf(inside, sizeof(inside), "%s/inside", graft);
	assert_int_equal(mkdir(graft, 0755), 0);
	put_file(inside, "grafted\n");
	/* a plain directory: ".." from it would lead out */
	fd = open(graft, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_int_equal(fuse_server_graft(f->s, "c1", fd), -EXDEV);
	close(fd);
	fd = open(f->secret, O_PATH | O_CLOEXEC);
	assert_int_equal(fuse_server_graft(f->s, "f", fd), -ENOTDIR);
	close(fd);
	if (geteuid() != 0) {
		unlink(inside);
		rmdir(graft);
		skip(); /* a clone needs root */
	}
	assert_int_equal(mkdir(host_path(f, "c1"), 0700), 0); /* shadowed */
	fd = clone_dir(graft);
	assert_int_equal(fuse_server_graft(f->s, "..", fd), -EINVAL);
	assert_int_equal(fuse_server_graft(f->s, "a/b", fd), -EINVAL);
	assert_int_equal(fuse_server_graft(f->s, "", fd), -EINVAL);
	assert_int_equal(fuse_server_graft(f->s, "c1", fd), 0);
	assert_int_equal(lookup(f, FUSE_ROOT_ID, "c1", &e), 0);
	assert_int_equal(lookup(f, e.nodeid, "inside", &r), 0);
	assert_true(S_ISREG(r.attr.mode));
	assert_int_equal(lookup(f, e.nodeid, "..", &r), -EINVAL);
	forget(f, r.nodeid, 1);
	forget(f, e.nodeid, 1);
	assert_int_equal(fuse_server_ungraft(f->s, "c1"), 0);
	assert_int_equal(fuse_server_ungraft(f->s, "c1"), -ENOENT);
	assert_int_equal(lookup(f, FUSE_ROOT_ID, "c1", &e), 0);
	assert_int_equal(lookup(f, e.nodeid, "inside", &r), -ENOENT);
	forget(f, e.nodeid, 1);
	/* the table is bounded; close closes what is still grafted */
	for (int i = 0; i < FUSE_SERVER_MAX_GRAFTS; i++) {
		snprintf(names, sizeof(names), "g%d", i);
		assert_int_equal(fuse_server_graft(f->s, names, clone_dir(graft)), 0);
	}
	fd = clone_dir(graft);
	assert_int_equal(fuse_server_graft(f->s, "one-more", fd), -ENOSPC);
	assert_int_equal(fuse_server_graft(f->s, "g3", fd), 0); /* replaces */
	rmdir(host_path(f, "c1"));
	unlink(inside);
	rmdir(graft);
}

/* Symlinks in the share are nodes the guest reads, never paths the host
 * follows: through a link to /etc or to "..", nothing outside is reached. */
static void test_symlink_escape(void **state)
{
	struct fx *f = *state;
	struct fuse_entry_out etc, pw, up, out, e;
	struct fuse_setattr_in sa = { .valid = FATTR_SIZE, .size = 0 };
	char target[128];
	uint64_t fh = 0;
	struct stat st;

	assert_int_equal(symlink("/etc", host_path(f, "etc")), 0);
	assert_int_equal(symlink("/etc/passwd", host_path(f, "pw")), 0);
	assert_int_equal(symlink("..", host_path(f, "up")), 0);
	assert_int_equal(symlink(f->secret, host_path(f, "out")), 0);
	snprintf(target, sizeof(target), "%s/planted", f->base);
	assert_int_equal(symlink(target, host_path(f, "dangling")), 0);
	assert_int_equal(do_init(f), 0);

	/* The links themselves are visible as links. */
	assert_int_equal(lookup(f, FUSE_ROOT_ID, "etc", &etc), 0);
	assert_true(S_ISLNK(etc.attr.mode));
	assert_int_equal(lookup(f, FUSE_ROOT_ID, "pw", &pw), 0);
	assert_int_equal(lookup(f, FUSE_ROOT_ID, "up", &up), 0);
	assert_int_equal(lookup(f, FUSE_ROOT_ID, "out", &out), 0);
	/* Through them: nothing. */
	assert_int_equal(lookup(f, etc.nodeid, "passwd", &e), -ENOTDIR);
	assert_int_equal(lookup(f, up.nodeid, "secret", &e), -ENOTDIR);
	assert_int_equal(open_node(f, FUSE_OPENDIR, etc.nodeid, 0, &fh), -ENOTDIR);
	assert_int_equal(open_node(f, FUSE_OPEN, pw.nodeid, O_RDONLY, &fh), -ELOOP);
	assert_int_equal(open_node(f, FUSE_OPEN, out.nodeid, O_RDWR, &fh), -ELOOP);
	/* READLINK gives the link's text, not the file behind it. */
	assert_int_equal(send_req(f, build(f, FUSE_READLINK, pw.nodeid, NULL, 0, NULL, NULL)), 0);
	assert_int_equal(body_len(f), strlen("/etc/passwd"));
	assert_memory_equal(body(f), "/etc/passwd", body_len(f));
	/* Modifying through a link does not reach the target. */
	assert_int_equal(setattr(f, out.nodeid, &sa, NULL), -EINVAL);
	assert_int_equal(stat(f->secret, &st), 0);
	assert_int_equal(st.st_size, strlen("outside the share\n"));
	/* CREATE over a dangling link does not create its target. */
	assert_int_equal(create(f, FUSE_ROOT_ID, "dangling", O_WRONLY, 0644, &e, &fh), -ELOOP);
	assert_int_equal(access(target, F_OK), -1);
	/* GETATTR of the link describes the link, not /etc/passwd. */
	assert_int_equal(getattr(f, pw.nodeid, &e.attr), 0);
	assert_true(S_ISLNK(e.attr.mode));
	assert_int_equal(e.attr.size, strlen("/etc/passwd"));
}

/* A read-only share: every modifying opcode gets EROFS, reads still work. */
static void test_read_only(void **state)
{
	struct fx *f = *state;
	struct fuse_entry_out e, x;
	struct fuse_setattr_in sa = { .valid = FATTR_SIZE };
	struct fuse_mkdir_in mi = { .mode = 0755 };
	struct fuse_rename_in ri = { .newdir = FUSE_ROOT_ID };
	uint64_t fh;
	struct stat st;

	assert_int_equal(do_init(f), 0);
	assert_int_equal(lookup(f, FUSE_ROOT_ID, "existing", &e), 0);
	assert_int_equal(create(f, FUSE_ROOT_ID, "new", O_WRONLY, 0644, &x, &fh), -EROFS);
	assert_int_equal(send_req(f,
				  build(f, FUSE_MKDIR, FUSE_ROOT_ID, &mi, sizeof(mi), "d", NULL)),
			 -EROFS);
	assert_int_equal(send_req(f,
				  build(f, FUSE_UNLINK, FUSE_ROOT_ID, NULL, 0, "existing", NULL)),
			 -EROFS);
	assert_int_equal(setattr(f, e.nodeid, &sa, NULL), -EROFS);
	assert_int_equal(send_req(f,
				  build(f, FUSE_RENAME, FUSE_ROOT_ID, &ri, sizeof(ri), "existing",
					"moved")),
			 -EROFS);
	assert_int_equal(open_node(f, FUSE_OPEN, e.nodeid, O_WRONLY, &fh), -EROFS);
	assert_int_equal(open_node(f, FUSE_OPEN, e.nodeid, O_RDONLY | O_TRUNC, &fh), -EROFS);
	assert_int_equal(open_node(f, FUSE_OPEN, e.nodeid, O_RDONLY, &fh), 0);
	assert_int_equal(write_fh(f, e.nodeid, fh, 0, "x"), -EROFS);
	assert_int_equal(read_fh(f, FUSE_READ, e.nodeid, fh, 0, 3), 0);
	assert_memory_equal(body(f), "old", 3);
	assert_int_equal(stat(host_path(f, "existing"), &st), 0);
	assert_int_equal(st.st_size, strlen("old contents\n"));
	assert_int_equal(access(host_path(f, "new"), F_OK), -1);
}

/* Malformed requests: each gets its exact errno (or no reply), no crash. */
static void test_hostile_requests(void **state)
{
	struct fx *f = *state;
	struct fuse_in_header h;
	struct fuse_out_header oh;
	struct fuse_entry_out e;
	size_t len;

	assert_int_equal(do_init(f), 0);
	/* Shorter than a header: EINVAL, with unique 0 (there is none). */
	len = build(f, FUSE_GETATTR, FUSE_ROOT_ID, NULL, 0, NULL, NULL);
	assert_int_equal(send_req(f, 20), -EINVAL);
	memcpy(&oh, f->out, sizeof(oh));
	assert_int_equal(oh.unique, 0);
	assert_int_equal(send_req(f, 0), -EINVAL);
	/* header.len that lies about the request's size. */
	len = build(f, FUSE_LOOKUP, FUSE_ROOT_ID, NULL, 0, "existing", NULL);
	assert_int_equal(send_req(f, len - 1), -EINVAL);
	memcpy(&oh, f->out, sizeof(oh));
	assert_int_equal(oh.unique, f->unique);
	memcpy(&h, f->in, sizeof(h));
	h.len = 0xffffffffu;
	memcpy(f->in, &h, sizeof(h));
	assert_int_equal(send_req(f, len), -EINVAL);
	/* Arguments too short for the opcode. */
	assert_int_equal(send_req(f, build(f, FUSE_GETATTR, FUSE_ROOT_ID, "ab", 2, NULL, NULL)),
			 -EINVAL);
	assert_int_equal(send_req(f, build(f, FUSE_READ, FUSE_ROOT_ID, "abcd", 4, NULL, NULL)),
			 -EINVAL);
	assert_int_equal(send_req(f, build(f, FUSE_INIT, 0, "abcd", 4, NULL, NULL)), -EINVAL);
	/* A name without its NUL (the last byte replaced). */
	len = build(f, FUSE_LOOKUP, FUSE_ROOT_ID, NULL, 0, "existing", NULL);
	f->in[len - 1] = 'x';
	assert_int_equal(send_req(f, len), -EINVAL);
	assert_int_equal(send_req(f, build(f, FUSE_LOOKUP, FUSE_ROOT_ID, NULL, 0, NULL, NULL)),
			 -EINVAL);
	/* Extensions claimed beyond the end of the request. */
	len = build(f, FUSE_LOOKUP, FUSE_ROOT_ID, NULL, 0, "existing", NULL);
	memcpy(&h, f->in, sizeof(h));
	h.total_extlen = 100;
	memcpy(f->in, &h, sizeof(h));
	assert_int_equal(send_req(f, len), -EINVAL);
	/* Unknown opcodes, and ones kiln does not serve, get ENOSYS. */
	assert_int_equal(send_req(f, build(f, 999, FUSE_ROOT_ID, NULL, 0, NULL, NULL)), -ENOSYS);
	assert_int_equal(send_req(f, build(f, 0, FUSE_ROOT_ID, NULL, 0, NULL, NULL)), -ENOSYS);
	assert_int_equal(send_req(f, build(f, FUSE_IOCTL, FUSE_ROOT_ID, NULL, 0, NULL, NULL)),
			 -ENOSYS);
	assert_int_equal(send_req(f, build(f, CUSE_INIT, FUSE_ROOT_ID, NULL, 0, NULL, NULL)),
			 -ENOSYS);
	assert_int_equal(send_req(f,
				  build(f, FUSE_GETXATTR, FUSE_ROOT_ID, "12345678", 8, "user.x",
					NULL)),
			 -ENOSYS);
	/* WRITE claiming more data than it carries. */
	{
		struct fuse_write_in wi = { .fh = 0, .size = 100 };

		assert_int_equal(send_req(f,
					  build(f, FUSE_WRITE, FUSE_ROOT_ID, &wi, sizeof(wi), "abc",
						NULL)),
				 -EINVAL);
	}
	/* BATCH_FORGET with a count beyond the request: ignored, no reply. */
	{
		struct fuse_batch_forget_in bf = { .count = 0x10000000 };

		len = build(f, FUSE_BATCH_FORGET, 0, &bf, sizeof(bf), NULL, NULL);
		assert_int_equal(fuse_server_handle(f->s, f->in, len, f->out, BUF), 0);
	}
	/* The server still works. */
	assert_int_equal(lookup(f, FUSE_ROOT_ID, "existing", &e), 0);
}

/* Reply room too small: ERANGE before any effect; none at all: no reply. */
static void test_reply_too_small(void **state)
{
	struct fx *f = *state;
	struct fuse_entry_out e, e2;
	size_t len;
	uint64_t fh;

	assert_int_equal(do_init(f), 0);
	len = build(f, FUSE_LOOKUP, FUSE_ROOT_ID, NULL, 0, "existing", NULL);
	assert_int_equal(send_cap(f, len, sizeof(struct fuse_out_header) + 10), -ERANGE);
	assert_int_equal(fuse_server_handle(f->s, f->in, len, f->out, 15), 0);
	/* The refused LOOKUPs took no reference: one FORGET frees the node. */
	assert_int_equal(lookup(f, FUSE_ROOT_ID, "existing", &e), 0);
	forget(f, e.nodeid, 1);
	assert_int_equal(getattr(f, e.nodeid, &e2.attr), -ENOENT);
	/* CREATE refused for room creates nothing. */
	{
		struct fuse_create_in ci = { .flags = O_WRONLY, .mode = S_IFREG | 0644 };

		len = build(f, FUSE_CREATE, FUSE_ROOT_ID, &ci, sizeof(ci), "nope", NULL);
		assert_int_equal(send_cap(f, len, sizeof(struct fuse_out_header) + 130), -ERANGE);
		assert_int_equal(access(host_path(f, "nope"), F_OK), -1);
	}
	/* READ with little room returns what fits. */
	assert_int_equal(lookup(f, FUSE_ROOT_ID, "existing", &e), 0);
	assert_int_equal(open_node(f, FUSE_OPEN, e.nodeid, O_RDONLY, &fh), 0);
	len = build(f, FUSE_READ, e.nodeid, &(struct fuse_read_in){ .fh = fh, .size = 4096 },
		    sizeof(struct fuse_read_in), NULL, NULL);
	assert_int_equal(send_cap(f, len, sizeof(struct fuse_out_header) + 3), 0);
	assert_int_equal(body_len(f), 3);
	assert_memory_equal(body(f), "old", 3);
}

/* Made-up, stale and forgotten node ids; made-up, closed and wrong-kind fhs. */
static void test_bogus_ids(void **state)
{
	struct fx *f = *state;
	struct fuse_entry_out e, e2;
	struct fuse_attr a;
	uint64_t fh, dh;

	assert_int_equal(do_init(f), 0);
	assert_int_equal(getattr(f, 0, &a), -ENOENT);
	assert_int_equal(getattr(f, 12345, &a), -ENOENT);
	assert_int_equal(getattr(f, 0xffffffffffffffffULL, &a), -ENOENT);
	assert_int_equal(getattr(f, (1ULL << 32) | FUSE_ROOT_ID, &a), -ENOENT);
	assert_int_equal(lookup(f, 999999, "existing", &e), -ENOENT);
	/* Two lookups need two forgets; then the id is stale, and stays stale
	 * when its slot is reused. */
	assert_int_equal(lookup(f, FUSE_ROOT_ID, "existing", &e), 0);
	assert_int_equal(lookup(f, FUSE_ROOT_ID, "existing", &e2), 0);
	assert_int_equal(e2.nodeid, e.nodeid);
	forget(f, e.nodeid, 1);
	assert_int_equal(getattr(f, e.nodeid, &a), 0);
	forget(f, e.nodeid, 1);
	assert_int_equal(getattr(f, e.nodeid, &a), -ENOENT);
	forget(f, e.nodeid, 1);        /* again: ignored */
	forget(f, FUSE_ROOT_ID, 1000); /* the root is never forgotten */
	assert_int_equal(getattr(f, FUSE_ROOT_ID, &a), 0);
	assert_int_equal(lookup(f, FUSE_ROOT_ID, "existing", &e2), 0);
	assert_int_not_equal(e2.nodeid, e.nodeid);
	assert_int_equal(getattr(f, e.nodeid, &a), -ENOENT);

	/* File handles. */
	assert_int_equal(read_fh(f, FUSE_READ, e2.nodeid, 0, 0, 10), -EBADF);
	assert_int_equal(read_fh(f, FUSE_READ, e2.nodeid, 0xffffffffffULL, 0, 10), -EBADF);
	assert_int_equal(write_fh(f, e2.nodeid, 7, 0, "x"), -EBADF);
	assert_int_equal(open_node(f, FUSE_OPEN, e2.nodeid, O_RDONLY, &fh), 0);
	assert_int_equal(open_node(f, FUSE_OPENDIR, FUSE_ROOT_ID, 0, &dh), 0);
	assert_int_equal(read_fh(f, FUSE_READDIR, FUSE_ROOT_ID, fh, 0, 4096), -EBADF);
	assert_int_equal(read_fh(f, FUSE_READ, e2.nodeid, dh, 0, 10), -EBADF);
	assert_int_equal(release(f, FUSE_RELEASE, e2.nodeid, dh), -EBADF);
	assert_int_equal(release(f, FUSE_RELEASE, e2.nodeid, fh), 0);
	assert_int_equal(release(f, FUSE_RELEASE, e2.nodeid, fh), -EBADF);
	assert_int_equal(read_fh(f, FUSE_READ, e2.nodeid, fh, 0, 10), -EBADF);
	/* A new handle in the freed slot does not revive the old fh. */
	assert_int_equal(open_node(f, FUSE_OPEN, e2.nodeid, O_RDONLY, &dh), 0);
	assert_int_not_equal(dh, fh);
	assert_int_equal(read_fh(f, FUSE_READ, e2.nodeid, fh, 0, 10), -EBADF);
	/* A new session (INIT) forgets everything of the old one. */
	assert_int_equal(do_init(f), 0);
	assert_int_equal(getattr(f, e2.nodeid, &a), -ENOENT);
	assert_int_equal(read_fh(f, FUSE_READ, e2.nodeid, dh, 0, 10), -EBADF);
}

/* MKNOD: regular files and fifos yes, device nodes no; STATFS, ACCESS,
 * FSYNC, LSEEK and FALLOCATE on a real handle. */
static void test_misc_ops(void **state)
{
	struct fx *f = *state;
	struct fuse_mknod_in mn = { .mode = S_IFIFO | 0644 };
	struct fuse_entry_out e;
	struct fuse_statfs_out so;
	struct fuse_access_in ai = { .mask = R_OK };
	struct fuse_fsync_in fi;
	struct fuse_lseek_in li;
	struct fuse_fallocate_in fa;
	uint64_t fh;
	struct stat st;

	assert_int_equal(do_init(f), 0);
	assert_int_equal(send_req(f,
				  build(f, FUSE_MKNOD, FUSE_ROOT_ID, &mn, sizeof(mn), "fifo",
					NULL)),
			 0);
	memcpy(&e, body(f), sizeof(e));
	assert_true(S_ISFIFO(e.attr.mode));
	/* The guest opens fifos itself; the host never does (it would block). */
	assert_int_equal(open_node(f, FUSE_OPEN, e.nodeid, O_RDONLY, &fh), -EACCES);
	mn.mode = S_IFCHR | 0666;
	mn.rdev = 0x0103; /* /dev/null's numbers */
	assert_int_equal(send_req(f,
				  build(f, FUSE_MKNOD, FUSE_ROOT_ID, &mn, sizeof(mn), "null",
					NULL)),
			 -EPERM);
	assert_int_equal(lstat(host_path(f, "null"), &st), -1);
	mn.mode = S_IFREG | 0600;
	assert_int_equal(send_req(f,
				  build(f, FUSE_MKNOD, FUSE_ROOT_ID, &mn, sizeof(mn), "reg", NULL)),
			 0);

	assert_int_equal(send_req(f, build(f, FUSE_STATFS, FUSE_ROOT_ID, NULL, 0, NULL, NULL)), 0);
	memcpy(&so, body(f), sizeof(so));
	assert_true(so.st.bsize > 0 && so.st.namelen > 0);
	assert_int_equal(send_req(f,
				  build(f, FUSE_ACCESS, FUSE_ROOT_ID, &ai, sizeof(ai), NULL, NULL)),
			 0);
	ai.mask = 0x100;
	assert_int_equal(send_req(f,
				  build(f, FUSE_ACCESS, FUSE_ROOT_ID, &ai, sizeof(ai), NULL, NULL)),
			 -EINVAL);

	assert_int_equal(lookup(f, FUSE_ROOT_ID, "existing", &e), 0);
	assert_int_equal(open_node(f, FUSE_OPEN, e.nodeid, O_RDWR, &fh), 0);
	fi = (struct fuse_fsync_in){ .fh = fh, .fsync_flags = FUSE_FSYNC_FDATASYNC };
	assert_int_equal(send_req(f, build(f, FUSE_FSYNC, e.nodeid, &fi, sizeof(fi), NULL, NULL)),
			 0);
	fa = (struct fuse_fallocate_in){ .fh = fh, .offset = 0, .length = 65536 };
	assert_int_equal(send_req(f,
				  build(f, FUSE_FALLOCATE, e.nodeid, &fa, sizeof(fa), NULL, NULL)),
			 0);
	assert_int_equal(stat(host_path(f, "existing"), &st), 0);
	assert_int_equal(st.st_size, 65536);
	li = (struct fuse_lseek_in){ .fh = fh, .offset = 0, .whence = SEEK_END };
	assert_int_equal(send_req(f, build(f, FUSE_LSEEK, e.nodeid, &li, sizeof(li), NULL, NULL)),
			 0);
	assert_int_equal(((const struct fuse_lseek_out *)body(f))->offset, 65536);
	li.whence = 77;
	assert_int_equal(send_req(f, build(f, FUSE_LSEEK, e.nodeid, &li, sizeof(li), NULL, NULL)),
			 -EINVAL);
	assert_int_equal(release(f, FUSE_RELEASE, e.nodeid, fh), 0);
	fi.fh = fh;
	assert_int_equal(send_req(f, build(f, FUSE_FSYNC, e.nodeid, &fi, sizeof(fi), NULL, NULL)),
			 -EBADF);
}

/* CREATE without O_EXCL on an existing fifo must refuse like OPEN does,
 * not open it on the host: that open blocks the device thread for ever.
 * alarm() turns the hang of the unfixed server into a failure. */
static void test_create_existing_fifo(void **state)
{
	struct fx *f = *state;
	struct fuse_entry_out e;
	uint64_t fh;

	assert_int_equal(do_init(f), 0);
	assert_int_equal(mkfifo(host_path(f, "fifo"), 0644), 0);
	alarm(5);
	assert_int_equal(create(f, FUSE_ROOT_ID, "fifo", O_RDWR, 0644, &e, &fh), -EACCES);
	assert_int_equal(create(f, FUSE_ROOT_ID, "fifo", O_RDONLY, 0644, &e, &fh), -EACCES);
	alarm(0);
	/* A regular file is still opened, not refused. */
	assert_int_equal(create(f, FUSE_ROOT_ID, "existing", O_RDWR, 0644, &e, &fh), 0);
}

/* fuse_server_open() refuses what it cannot serve, with a message. */
static void test_open_errors(void **state)
{
	struct fuse_server *s = NULL;
	struct err e = { { 0 } };

	(void)state;
	assert_int_equal(fuse_server_open(&s, "/nonexistent/kiln-share", 0, &e), -ENOENT);
	assert_non_null(strstr(e.msg, "/nonexistent/kiln-share"));
	assert_int_equal(fuse_server_open(&s, "/etc/passwd", 0, &e), -ENOTDIR);
	assert_null(s);
}

/* A directory handed over as a descriptor (kilnd opened it without
 * following symbolic links) is served as it is; the descriptor stays the
 * caller's. Anything but an open directory is refused with a message. */
static void test_open_fd(void **state)
{
	struct fx *f = *state;
	struct fuse_server *s = NULL, *mine = f->s;
	struct err e = { { 0 } };
	struct fuse_entry_out eo;
	int dir, file, fds;

	dir = open(f->share, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(dir >= 0);
	fds = count_fds();
	assert_int_equal(fuse_server_open_fd(&s, dir, 0, &e), 0);
	f->s = s;
	assert_int_equal(do_init(f), 0);
	assert_int_equal(lookup(f, FUSE_ROOT_ID, "existing", &eo), 0);
	assert_int_equal(lookup(f, FUSE_ROOT_ID, "..", &eo), -EINVAL);
	fuse_server_close(s);
	f->s = mine;
	assert_int_equal(count_fds(), fds);
	assert_true(fcntl(dir, F_GETFD) >= 0); /* still open: the caller's */
	close(dir);

	s = NULL;
	file = open(f->secret, O_RDONLY | O_CLOEXEC);
	assert_true(file >= 0);
	assert_int_equal(fuse_server_open_fd(&s, file, 0, &e), -ENOTDIR);
	assert_non_null(strstr(e.msg, "fd="));
	close(file);
	assert_int_equal(fuse_server_open_fd(&s, 1000, 0, &e), -EBADF);
	assert_non_null(strstr(e.msg, "no such open descriptor"));
	assert_null(s);
}

/* ---- snapshots: save, change the share, restore in a new server ---- */

static uint8_t snap_buf[1 << 16];

/* Save f->s, close it (as kiln-vmm exits), open a new server on `dir` and
 * restore into it; the restore's result. */
static int snap_cycle(struct fx *f, const char *dir, void (*between)(struct fx *f), struct err *e)
{
	long n = fuse_server_save(f->s, snap_buf, sizeof(snap_buf));

	assert_true(n > 40);
	assert_int_equal(fuse_server_save(f->s, snap_buf, 39), -E2BIG);
	fuse_server_close(f->s);
	f->s = NULL;
	if (between)
		between(f);
	assert_int_equal(fuse_server_open(&f->s, dir, 0, e), 0);
	return fuse_server_restore(f->s, snap_buf, (size_t)n, e);
}

/* The host changes the share while the VM is a snapshot. */
static void change_share(struct fx *f)
{
	char p[256];

	assert_int_equal(unlink(host_path(f, "gone")), 0);
	snprintf(p, sizeof(p), "%s/moved2", f->share);
	assert_int_equal(rename(host_path(f, "moved"), p), 0);
	/* "existing" replaced by another file of the same name, as editors
	 * do (written beside it first: a new inode, not a reused number) */
	snprintf(p, sizeof(p), "%s/existing.new", f->share);
	put_file(p, "a new file\n");
	assert_int_equal(rename(p, host_path(f, "existing")), 0);
	/* "sub" (a directory) replaced by a symlink to the share's parent */
	snprintf(p, sizeof(p), "%s/sub/inner", f->share);
	assert_int_equal(unlink(p), 0);
	assert_int_equal(rmdir(host_path(f, "sub")), 0);
	assert_int_equal(symlink("..", host_path(f, "sub")), 0);
	/* "kept" renamed and renamed back: the same file at the same path */
	snprintf(p, sizeof(p), "%s/kept.tmp", f->share);
	assert_int_equal(rename(host_path(f, "kept"), p), 0);
	assert_int_equal(rename(p, host_path(f, "kept")), 0);
}

static void test_snapshot_restore(void **state)
{
	struct fx *f = *state;
	struct fuse_entry_out ex, gone, moved, sub, inner, kept, made, lnk, d;
	struct fuse_attr a;
	struct err e = { { 0 } };
	uint64_t fh_ex, fh_made, fh_kept, fh_dir;
	char p[256];
	FILE *fp;

	put_file(host_path(f, "gone"), "gone\n");
	put_file(host_path(f, "moved"), "moved\n");
	put_file(host_path(f, "kept"), "kept\n");
	assert_int_equal(mkdir(host_path(f, "sub"), 0755), 0);
	snprintf(p, sizeof(p), "%s/sub/inner", f->share);
	put_file(p, "inner\n");
	assert_int_equal(symlink("../secret", host_path(f, "lnk")), 0);
	assert_int_equal(do_init(f), 0);
	assert_int_equal(lookup(f, FUSE_ROOT_ID, "existing", &ex), 0);
	assert_int_equal(lookup(f, FUSE_ROOT_ID, "gone", &gone), 0);
	assert_int_equal(lookup(f, FUSE_ROOT_ID, "moved", &moved), 0);
	assert_int_equal(lookup(f, FUSE_ROOT_ID, "sub", &sub), 0);
	assert_int_equal(lookup(f, sub.nodeid, "inner", &inner), 0);
	assert_int_equal(lookup(f, FUSE_ROOT_ID, "kept", &kept), 0);
	assert_int_equal(lookup(f, FUSE_ROOT_ID, "lnk", &lnk), 0);
	assert_int_equal(mkdir_at(f, FUSE_ROOT_ID, "d", &d), 0);
	/* A slot freed before the save: its generation must survive. */
	forget(f, gone.nodeid, 1);
	assert_int_equal(lookup(f, FUSE_ROOT_ID, "gone", &gone), 0);
	assert_int_not_equal(gone.nodeid >> 32, 0);
	assert_int_equal(open_node(f, FUSE_OPEN, ex.nodeid, O_RDONLY, &fh_ex), 0);
	assert_int_equal(open_node(f, FUSE_OPEN, kept.nodeid, O_WRONLY | O_APPEND | O_TRUNC,
				   &fh_kept),
			 0);
	assert_int_equal(create(f, d.nodeid, "made", O_WRONLY | O_CREAT | O_EXCL, 0644, &made,
				&fh_made),
			 0);
	assert_int_equal(write_fh(f, made.nodeid, fh_made, 0, "before\n"), 0);
	assert_int_equal(open_node(f, FUSE_OPENDIR, d.nodeid, O_RDONLY, &fh_dir), 0);
	/* Renamed on the host before the save: saved under its new name. */
	snprintf(p, sizeof(p), "%s/d/made2", f->share);
	assert_int_equal(rename(host_path(f, "d/made"), p), 0);

	assert_int_equal(snap_cycle(f, f->share, change_share, &e), 0);
	/* Stale: gone, moved, existing (replaced), sub and inner (a symlink
	 * now), and the handle on existing. */
	assert_int_equal(fuse_server_stale(f->s), 6);
	assert_int_equal(getattr(f, gone.nodeid, &a), -ESTALE);
	assert_int_equal(getattr(f, moved.nodeid, &a), -ESTALE);
	assert_int_equal(getattr(f, ex.nodeid, &a), -ESTALE);
	assert_int_equal(getattr(f, sub.nodeid, &a), -ESTALE);
	assert_int_equal(getattr(f, inner.nodeid, &a), -ESTALE);
	assert_int_equal(lookup(f, sub.nodeid, "secret", &inner), -ESTALE);
	assert_int_equal(read_fh(f, FUSE_READ, ex.nodeid, fh_ex, 0, 100), -ESTALE);
	assert_int_equal(release(f, FUSE_RELEASE, ex.nodeid, fh_ex), 0);
	assert_int_equal(release(f, FUSE_RELEASE, ex.nodeid, fh_ex), -EBADF);
	forget(f, gone.nodeid, 1);
	assert_int_equal(getattr(f, gone.nodeid, &a), -ENOENT);
	/* Live, under the same ids and handles. */
	assert_int_equal(getattr(f, kept.nodeid, &a), 0);
	assert_int_equal(getattr(f, lnk.nodeid, &a), 0);
	assert_true(S_ISLNK(a.mode));
	assert_int_equal(write_fh(f, kept.nodeid, fh_kept, 0, "more\n"), 0);
	assert_int_equal(write_fh(f, made.nodeid, fh_made, 7, "after\n"), 0);
	assert_int_equal(read_fh(f, FUSE_READDIR, d.nodeid, fh_dir, 0, 4096), 0);
	assert_int_equal(release(f, FUSE_RELEASEDIR, d.nodeid, fh_dir), 0);
	/* O_TRUNC was not applied again; O_APPEND was. */
	fp = fopen(host_path(f, "kept"), "r");
	assert_non_null(fp);
	assert_non_null(fgets(p, sizeof(p), fp));
	assert_string_equal(p, "more\n");
	fclose(fp);
	snprintf(p, sizeof(p), "%s/d/made2", f->share);
	fp = fopen(p, "r");
	assert_non_null(fp);
	assert_int_equal(fread(p, 1, sizeof(p), fp), 13);
	fclose(fp);
	assert_memory_equal(p, "before\nafter\n", 13);
	/* A new lookup of a replaced name gets a new node. */
	assert_int_equal(lookup(f, FUSE_ROOT_ID, "existing", &ex), 0);
	assert_int_equal(open_node(f, FUSE_OPEN, ex.nodeid, O_RDONLY, &fh_ex), 0);
	assert_int_equal(read_fh(f, FUSE_READ, ex.nodeid, fh_ex, 0, 100), 0);
	assert_int_equal(body_len(f), 11);
	/* A second snapshot keeps stale nodes stale. */
	assert_int_equal(snap_cycle(f, f->share, NULL, &e), 0);
	assert_int_equal(getattr(f, moved.nodeid, &a), -ESTALE);
	assert_int_equal(getattr(f, made.nodeid, &a), 0);
}

/* Restored into another directory with the same names (a moved or copied
 * share): nodes come back by name and kind, whatever their inode. */
static void test_snapshot_other_dir(void **state)
{
	struct fx *f = *state;
	struct fuse_entry_out ex, sub;
	struct fuse_attr a;
	struct err e = { { 0 } };
	char other[128], p[160];
	uint64_t fh;

	assert_int_equal(mkdir(host_path(f, "sub"), 0755), 0);
	assert_int_equal(do_init(f), 0);
	assert_int_equal(lookup(f, FUSE_ROOT_ID, "existing", &ex), 0);
	assert_int_equal(lookup(f, FUSE_ROOT_ID, "sub", &sub), 0);
	assert_int_equal(open_node(f, FUSE_OPEN, ex.nodeid, O_RDONLY, &fh), 0);
	snprintf(other, sizeof(other), "%s/other", f->base);
	assert_int_equal(mkdir(other, 0755), 0);
	snprintf(p, sizeof(p), "%s/existing", other);
	put_file(p, "copied\n");
	snprintf(p, sizeof(p), "%s/sub", other);
	assert_int_equal(mkdir(p, 0755), 0); /* a file in the copy would be stale */
	assert_int_equal(snap_cycle(f, other, NULL, &e), 0);
	assert_int_equal(fuse_server_stale(f->s), 0);
	assert_int_equal(getattr(f, sub.nodeid, &a), 0);
	assert_int_equal(read_fh(f, FUSE_READ, ex.nodeid, fh, 0, 100), 0);
	assert_int_equal(body_len(f), 7);
}

/* A planted table: refused, or stale, never a way out of the share. */
static void test_snapshot_hostile(void **state)
{
	struct fx *f = *state;
	struct fuse_state st = { .flags = FUSE_STATE_ACTIVE, .inode_cap = 64, .handle_cap = 64 };
	struct fuse_state_node n = { .slot = 1, .nlookup = 1, .mode = S_IFREG };
	struct fuse_state_handle h = { .slot = 0,
				       .nodeid = 1 | (uint64_t)0 << 32,
				       .flags = O_RDWR };
	struct fuse_state_writer w;
	struct fuse_attr a;
	struct err e = { { 0 } };
	long len;

	h.nodeid = 2; /* slot 1, generation 0 */
	assert_int_equal(symlink("..", host_path(f, "up")), 0);
	/* "up/secret": resolving through a symlink is refused by openat2. */
	n.path = "up/secret";
	n.path_len = 9;
	fuse_state_begin(&w, snap_buf, sizeof(snap_buf), &st);
	fuse_state_put_node(&w, &n);
	fuse_state_put_handle(&w, &h);
	len = fuse_state_finish(&w);
	assert_true(len > 0);
	assert_int_equal(fuse_server_restore(f->s, snap_buf, (size_t)len, &e), 0);
	assert_int_equal(fuse_server_stale(f->s), 2);
	assert_int_equal(getattr(f, 2, &a), -ESTALE);
	assert_int_equal(read_fh(f, FUSE_READ, 2, 0, 0, 100), -ESTALE);
	/* "../secret": refused outright. */
	n.path = "../secret";
	fuse_state_begin(&w, snap_buf, sizeof(snap_buf), &st);
	fuse_state_put_node(&w, &n);
	len = fuse_state_finish(&w);
	assert_int_equal(fuse_server_restore(f->s, snap_buf, (size_t)len, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "not a plain path"));
	assert_int_equal(getattr(f, 2, &a), -EIO); /* no session left */
	/* The old format (no session) still restores. */
	memcpy(snap_buf, "1sfk", 4);
	assert_int_equal(fuse_server_restore(f->s, snap_buf, 4, &e), 0);
}

/* A planted table of nodes (slot = index + 1, generation 0) and handles
 * (slot = index) into snap_buf; its length. */
static long plant(const struct fuse_state_node *n, int nn, const struct fuse_state_handle *h,
		  int nh)
{
	struct fuse_state st = { .flags = FUSE_STATE_ACTIVE, .inode_cap = 64, .handle_cap = 64 };
	struct fuse_state_writer w;

	fuse_state_begin(&w, snap_buf, sizeof(snap_buf), &st);
	for (int i = 0; i < nn; i++)
		fuse_state_put_node(&w, &n[i]);
	for (int i = 0; i < nh; i++)
		fuse_state_put_handle(&w, &h[i]);
	return fuse_state_finish(&w);
}

/*
 * Handles in a planted table come back only as OPEN or OPENDIR would have
 * made them on this share: on a read-only share no write access and no
 * O_TRUNC, no flag OPEN never records, a directory handle only as
 * O_RDONLY | O_DIRECTORY on a directory, a file handle only on a regular
 * file. Everything else is stale, not opened.
 */
static void test_snapshot_reopen_checks(void **state)
{
	struct fx *f = *state;
	const struct fuse_state_node n[] = {
		{ .slot = 1, .nlookup = 1, .mode = S_IFREG, .path = "existing", .path_len = 8 },
		{ .slot = 2, .nlookup = 1, .mode = S_IFDIR, .path = "sub", .path_len = 3 },
	};
	const uint64_t file = 2, dir = 3; /* node ids: slot + 1, generation 0 */
	const struct fuse_state_handle h[] = {
		{ .slot = 0, .nodeid = file, .flags = O_RDWR },
		{ .slot = 1, .nodeid = file, .flags = O_WRONLY | O_APPEND },
		{ .slot = 2, .nodeid = file, .flags = O_RDONLY | O_TRUNC },
		{ .slot = 3, .nodeid = file, .flags = O_RDONLY | O_NOATIME },
		{ .slot = 4, .nodeid = file, .flags = O_RDONLY | O_DIRECTORY },
		{ .slot = 5, .nodeid = dir, .flags = O_RDWR | O_DIRECTORY, .dir = 1 },
		{ .slot = 6, .nodeid = dir, .flags = O_RDONLY },
		{ .slot = 7, .nodeid = file, .flags = O_RDONLY | O_DIRECTORY, .dir = 1 },
		{ .slot = 8, .nodeid = file, .flags = O_RDONLY },
		{ .slot = 9, .nodeid = dir, .flags = O_RDONLY | O_DIRECTORY, .dir = 1 },
	};
	struct err e = { { 0 } };
	long len;

	assert_int_equal(mkdir(host_path(f, "sub"), 0755), 0);
	len = plant(n, 2, h, 10);
	assert_true(len > 0);
	assert_int_equal(fuse_server_restore(f->s, snap_buf, (size_t)len, &e), 0);
	/* The first eight handles: stale; the last two, the ones OPEN and
	 * OPENDIR make, live. */
	assert_int_equal(fuse_server_stale(f->s), 8);
	for (int i = 0; i < 8; i++)
		assert_int_equal(h[i].dir ? read_fh(f, FUSE_READDIR, dir, h[i].slot, 0, 4096)
					  : read_fh(f, FUSE_READ, file, h[i].slot, 0, 100),
				 -ESTALE);
	assert_int_equal(read_fh(f, FUSE_READ, file, 8, 0, 100), 0);
	assert_int_equal(body_len(f), 13);
	assert_int_equal(read_fh(f, FUSE_READDIR, dir, 9, 0, 4096), 0);
	/* O_TRUNC did nothing: the file is whole. */
	assert_int_equal(read_fh(f, FUSE_READ, file, 8, 0, 100), 0);
	assert_int_equal(body_len(f), 13);
}

/*
 * A handle is reopened with the caller's own credentials, as OPEN opens:
 * a restore run as an unprivileged uid (kiln-vmm's jail) gets no handle on
 * a file only root may open, whatever the table says. Run in a child that
 * drops to nobody (root needed to drop; skipped otherwise).
 */
static void test_snapshot_reopen_as_caller(void **state)
{
	struct fx *f = *state;
	const struct fuse_state_node n[] = {
		{ .slot = 1, .nlookup = 1, .mode = S_IFREG, .path = "existing", .path_len = 8 },
		{ .slot = 2, .nlookup = 1, .mode = S_IFREG, .path = "private", .path_len = 7 },
	};
	const struct fuse_state_handle h[] = {
		{ .slot = 0, .nodeid = 2, .flags = O_RDWR },
		{ .slot = 1, .nodeid = 3, .flags = O_RDWR },
		{ .slot = 2, .nodeid = 3, .flags = O_RDONLY },
	};
	long len;
	pid_t pid;
	int status;

	if (geteuid() != 0)
		skip();
	put_file(host_path(f, "private"), "root only\n");
	assert_int_equal(chmod(host_path(f, "private"), 0600), 0);
	assert_int_equal(chmod(host_path(f, "existing"), 0666), 0);
	len = plant(n, 2, h, 3);
	assert_true(len > 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct err e = { { 0 } };

		int dir = open(f->share, O_PATH | O_DIRECTORY | O_CLOEXEC);

		/* The child's own server (its /proc/self/fd is the child's), on
		 * the share opened as root: the base above it is 0700. */
		if (dir < 0 || setgroups(0, NULL) || setresgid(65534, 65534, 65534) ||
		    setresuid(65534, 65534, 65534) || fuse_server_open_fd(&f->s, dir, 0, &e))
			_exit(10);
		if (fuse_server_restore(f->s, snap_buf, (size_t)len, &e))
			_exit(11);
		/* Both handles on "private" stale; the one on "existing" open. */
		if (fuse_server_stale(f->s) != 2)
			_exit(20 + (int)fuse_server_stale(f->s));
		_exit(read_fh(f, FUSE_READ, 3, 1, 0, 100) == -ESTALE &&
				      read_fh(f, FUSE_READ, 2, 0, 0, 100) == 0
			      ? 0
			      : 12);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_init, setup_rw, teardown),
		cmocka_unit_test_setup_teardown(test_open_fd, setup_rw, teardown),
		cmocka_unit_test_setup_teardown(test_file_round_trip, setup_rw, teardown),
		cmocka_unit_test_setup_teardown(test_mkdir_readdir, setup_rw, teardown),
		cmocka_unit_test_setup_teardown(test_namespace_ops, setup_rw, teardown),
		cmocka_unit_test_setup_teardown(test_setattr, setup_rw, teardown),
		cmocka_unit_test_setup_teardown(test_dotdot_escape, setup_rw, teardown),
		cmocka_unit_test_setup_teardown(test_graft, setup_rw, teardown),
		cmocka_unit_test_setup_teardown(test_symlink_escape, setup_rw, teardown),
		cmocka_unit_test_setup_teardown(test_read_only, setup_ro, teardown),
		cmocka_unit_test_setup_teardown(test_hostile_requests, setup_rw, teardown),
		cmocka_unit_test_setup_teardown(test_reply_too_small, setup_rw, teardown),
		cmocka_unit_test_setup_teardown(test_bogus_ids, setup_rw, teardown),
		cmocka_unit_test_setup_teardown(test_misc_ops, setup_rw, teardown),
		cmocka_unit_test_setup_teardown(test_create_existing_fifo, setup_rw, teardown),
		cmocka_unit_test(test_open_errors),
		cmocka_unit_test_setup_teardown(test_snapshot_restore, setup_rw, teardown),
		cmocka_unit_test_setup_teardown(test_snapshot_other_dir, setup_rw, teardown),
		cmocka_unit_test_setup_teardown(test_snapshot_hostile, setup_rw, teardown),
		cmocka_unit_test_setup_teardown(test_snapshot_reopen_checks, setup_ro, teardown),
		cmocka_unit_test_setup_teardown(test_snapshot_reopen_as_caller, setup_rw, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
