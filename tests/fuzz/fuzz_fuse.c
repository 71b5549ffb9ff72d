/*
 * fuzz_fuse: FUSE requests (devices/fs/fuse_server.c) against a scratch
 * share on tmpfs, rebuilt for every input: any opcode, lying lengths,
 * every name form, node ids and file handles the server handed out (the
 * input may reuse the last ones) or made up.
 *
 * Input: flags (bit 0 read-only share, bit 1 small reply buffer, bit 2 a
 * saved session follows: [len: 2][bytes] restored into the new server,
 * refused or not), then requests [flags][len: 2][bytes]; request flags:
 * bit 0 set the header's len to the bytes given, bit 1 set nodeid to the
 * last one a reply returned, bit 2 set the first argument word (fh) to the
 * last handle, bit 3 first snapshot the server: save it, close it, open a
 * new one on the share and restore (which must succeed).
 * Invariants: every reply fits its buffer and says its own length; an
 * error reply is a bare header with -errno; nothing outside the share
 * changes (the secret beside it, no new entries beside it) and no read
 * returns its contents, however a restored table names files; a read-only
 * share does not change at all; no set-id file appears; when the server
 * closes, every fd it opened is closed.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <linux/fuse.h>
#include <sys/stat.h>
#include <unistd.h>

#include "devices/fs/fuse_server.h"
#include "fuzz.h"

static char base[] = "/dev/shm/kiln-fuzz-fuse-XXXXXX";
static char share[64], secret[64];
static uint8_t out[FUSE_SERVER_MAX_REPLY];
static uint8_t req[8192];
static uint8_t saved[1 << 20];

/* Save, close, reopen on the share, restore: what kiln-vmm does across a
 * snapshot. A session the server saved itself always restores. */
static void snapshot_cycle(struct fuse_server **s, int ro)
{
	struct err e = { { 0 } };
	long n = fuse_server_save(*s, saved, sizeof(saved));

	FUZZ_ASSERT(n >= 40);
	fuse_server_close(*s);
	FUZZ_ASSERT(fuse_server_open(s, share, ro, &e) == 0);
	if (fuse_server_restore(*s, saved, (size_t)n, &e) != 0) {
		fprintf(stderr, "restore of a save: %s\n", e.msg);
		abort();
	}
}

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	/* Directories only: chmod follows symlinks (the share's "out" points
	 * at the secret). */
	if (flag == FTW_DP)
		chmod(p, 0700);
	return remove(p);
}

static void cleanup(void)
{
	nftw(base, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void put(const char *dir, const char *name, const char *text)
{
	char p[128];
	int fd;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	fd = open(p, O_CREAT | O_WRONLY | O_TRUNC, 0644);
	FUZZ_ASSERT(fd >= 0 && write(fd, text, strlen(text)) == (ssize_t)strlen(text));
	close(fd);
}

/* The share: a file, a directory with a file, a symlink out, a fifo. */
static void make_share(void)
{
	char p[128];

	nftw(share, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	FUZZ_ASSERT(mkdir(share, 0755) == 0);
	put(share, "existing", "old contents\n");
	snprintf(p, sizeof(p), "%s/dir", share);
	mkdir(p, 0755);
	put(p, "inner", "inner\n");
	snprintf(p, sizeof(p), "%s/out", share);
	symlink("../secret", p);
	snprintf(p, sizeof(p), "%s/fifo", share);
	mkfifo(p, 0644);
}

/* A listing of the tree under `dir`: names, types, sizes, modes. */
static size_t listing(const char *dir, char *buf, size_t cap, size_t n, int depth)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	if (!d || depth > 8)
		return d ? (closedir(d), n) : n;
	while ((e = readdir(d))) {
		char p[512];
		struct stat st;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		if (lstat(p, &st))
			continue;
		/* A guest must not plant set-id files on the host. */
		FUZZ_ASSERT(!S_ISREG(st.st_mode) || !(st.st_mode & (S_ISUID | S_ISGID)));
		if (n < cap)
			n += (size_t)snprintf(buf + n, cap - n, "%s %o %lld\n", p, st.st_mode,
					      (long long)st.st_size);
		if (n > cap)
			n = cap;
		if (S_ISDIR(st.st_mode))
			n = listing(p, buf, cap, n, depth + 1);
	}
	closedir(d);
	return n;
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

static void setup_once(void)
{
	static int done;

	if (done)
		return;
	FUZZ_ASSERT(mkdtemp(base));
	snprintf(share, sizeof(share), "%s/share", base);
	snprintf(secret, sizeof(secret), "%s/secret", base);
	put(base, "secret", "outside the share\n");
	atexit(cleanup);
	done = 1;
}

/* Beside the share: the secret, unchanged, and nothing new. */
static void check_outside(void)
{
	char p[64];
	struct stat st;
	int fd = open(secret, O_RDONLY | O_NOFOLLOW);
	ssize_t r = fd >= 0 ? read(fd, p, sizeof(p)) : -1;
	DIR *d = opendir(base);
	int k = 0;

	FUZZ_ASSERT(r == 18 && !memcmp(p, "outside the share\n", 18));
	FUZZ_ASSERT(fstat(fd, &st) == 0);
	if ((st.st_mode & 07777) != 0644 || st.st_nlink != 1)
		fprintf(stderr, "secret: mode %o nlink %lu\n", st.st_mode,
			(unsigned long)st.st_nlink);
	FUZZ_ASSERT((st.st_mode & 07777) == 0644 && st.st_nlink == 1);
	close(fd);
	while (readdir(d))
		k++;
	closedir(d);
	FUZZ_ASSERT(k == 4); /* ., .., share, secret */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char before[16384], after[16384];
	struct fuzz_in in = { data, size };
	struct fuse_server *s;
	struct err e = { { 0 } };
	uint8_t fl = take8(&in);
	int ro = fl & 1, fds;
	size_t cap = fl & 2 ? 200 : sizeof(out), nb = 0;
	uint64_t last_node = FUSE_ROOT_ID, last_fh = 0;
	static int trace = -1;

	if (trace < 0)
		trace = getenv("KILN_FUZZ_TRACE") != NULL; /* one line per request */

	setup_once();
	make_share();
	if (ro)
		nb = listing(share, before, sizeof(before), 0, 0);
	fds = count_fds();
	if (fuse_server_open(&s, share, ro, &e) != 0) {
		fprintf(stderr, "fuse_server_open: %s\n", e.msg);
		abort();
	}
	if (fl & 4) {
		size_t len = take16(&in), got;
		const uint8_t *p = take_bytes(&in, len, &got);

		fuse_server_restore(s, p, got, &e);
	}
	while (in.n) {
		uint8_t rf = take8(&in);
		size_t len = take16(&in) % sizeof(req), got;
		const uint8_t *p = take_bytes(&in, len, &got);
		struct fuse_in_header *ih = (struct fuse_in_header *)req;
		struct fuse_out_header oh;
		long r;

		if (rf & 8)
			snapshot_cycle(&s, ro);
		memset(req, 0, sizeof(struct fuse_in_header) + 8);
		memcpy(req, p, got);
		if (got >= sizeof(*ih)) {
			if (rf & 1)
				ih->len = (uint32_t)got;
			if (rf & 2)
				ih->nodeid = last_node;
			if ((rf & 4) && got >= sizeof(*ih) + 8)
				memcpy(req + sizeof(*ih), &last_fh, 8);
		}
		r = fuse_server_handle(s, req, got, out, cap);
		if (trace)
			fprintf(stderr, "fuse: opcode %u len %zu -> %ld error %d\n",
				got >= sizeof(*ih) ? ih->opcode : 0, got, r,
				r >= (long)sizeof(oh) ? ((struct fuse_out_header *)out)->error : 0);
		FUZZ_ASSERT(r >= 0 && (size_t)r <= cap);
		if (r == 0)
			continue;
		FUZZ_ASSERT((size_t)r >= sizeof(oh));
		memcpy(&oh, out, sizeof(oh));
		FUZZ_ASSERT(oh.len == (uint32_t)r);
		FUZZ_ASSERT(oh.error <= 0 && oh.error > -4096);
		if (oh.error) {
			FUZZ_ASSERT(r == sizeof(oh));
			continue;
		}
		/* The secret, through any node: a way out of the share. */
		FUZZ_ASSERT(!memmem(out, (size_t)r, "outside the share", 17));
		if (got >= sizeof(*ih)) {
			FUZZ_ASSERT(oh.unique == ih->unique);
			switch (ih->opcode) {
			case FUSE_LOOKUP:
			case FUSE_MKNOD:
			case FUSE_MKDIR:
			case FUSE_SYMLINK:
			case FUSE_LINK:
			case FUSE_CREATE:
				FUZZ_ASSERT((size_t)r >=
					    sizeof(oh) + sizeof(struct fuse_entry_out));
				memcpy(&last_node, out + sizeof(oh), 8);
				if (ih->opcode == FUSE_CREATE) {
					FUZZ_ASSERT((size_t)r >= sizeof(oh) +
							    sizeof(struct fuse_entry_out) +
							    sizeof(struct fuse_open_out));
					memcpy(&last_fh,
					       out + sizeof(oh) + sizeof(struct fuse_entry_out), 8);
				}
				break;
			case FUSE_OPEN:
			case FUSE_OPENDIR:
				FUZZ_ASSERT((size_t)r >= sizeof(oh) + sizeof(struct fuse_open_out));
				memcpy(&last_fh, out + sizeof(oh), 8);
				break;
			}
		}
	}
	fuse_server_close(s);
	FUZZ_ASSERT(count_fds() == fds);
	check_outside();
	if (ro)
		FUZZ_ASSERT(listing(share, after, sizeof(after), 0, 0) == nb &&
			    !memcmp(before, after, nb));
	return 0;
}
