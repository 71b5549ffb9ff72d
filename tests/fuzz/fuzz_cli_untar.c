/*
 * fuzz_cli_untar: `kiln cp`'s extraction of a ustar stream into a local
 * directory (api/kiln/cli_tar.c over api/proto/agent_tar.c): the archive
 * comes from a guest, through kilnd, onto the user's disk. The
 * destination is rebuilt on tmpfs for every input, with a file beside it
 * and symlinks inside it that point out.
 *
 * Input: split seed (1 byte; bit 1: fix every ustar header's checksum
 * first), then the archive.
 * Invariants: nothing outside the destination changes (the directory
 * beside it holds its one file, unchanged); no set-id file appears; no
 * symlink but the two planted ones points out of the destination, read
 * lexically from where it sits (a hard link to a symlink would be it at
 * another depth); a failure says why; no file descriptor leaks.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/kiln/cli_tar.h"
#include "fuzz.h"
#include "tar_fixup.h"

static char base[] = "/dev/shm/kiln-fuzz-untar-XXXXXX";
static char dest[80], outside[80], secret[96];

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP)
		chmod(p, 0700); /* directories only: chmod follows symlinks */
	return remove(p);
}

static void cleanup(void)
{
	nftw(base, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
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

static void setup(void)
{
	char p[128];
	int fd;

	if (!dest[0]) {
		FUZZ_ASSERT(mkdtemp(base));
		snprintf(dest, sizeof(dest), "%s/dest", base);
		snprintf(outside, sizeof(outside), "%s/outside", base);
		snprintf(secret, sizeof(secret), "%s/outside/secret", base);
		atexit(cleanup);
	}
	nftw(dest, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	nftw(outside, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	FUZZ_ASSERT(mkdir(dest, 0755) == 0 && mkdir(outside, 0755) == 0);
	fd = open(secret, O_CREAT | O_WRONLY | O_TRUNC, 0644);
	FUZZ_ASSERT(fd >= 0 && write(fd, "secret\n", 7) == 7);
	close(fd);
	snprintf(p, sizeof(p), "%s/link", dest);
	FUZZ_ASSERT(symlink("../outside/secret", p) == 0);
	snprintf(p, sizeof(p), "%s/ldir", dest);
	FUZZ_ASSERT(symlink("../outside", p) == 0);
}

static void check_outside(void)
{
	DIR *d = opendir(outside);
	struct dirent *e;
	char buf[16];
	struct stat st;
	int n = 0, fd;

	FUZZ_ASSERT(d);
	while ((e = readdir(d)))
		n++;
	closedir(d);
	FUZZ_ASSERT(n == 3); /* ., .., secret */
	fd = open(secret, O_RDONLY | O_NOFOLLOW);
	FUZZ_ASSERT(fd >= 0 && read(fd, buf, sizeof(buf)) == 7 && !memcmp(buf, "secret\n", 7));
	FUZZ_ASSERT(fstat(fd, &st) == 0 && (st.st_mode & 07777) == 0644 && st.st_nlink == 1);
	close(fd);
}

/* Whether symlink p, ftw->level deep below dest, resolves lexically
 * inside it. The extractor never creates through a symlink, so the
 * directories above p are real and the lexical reading is the kernel's. */
static int link_stays_in(const char *p, const struct FTW *ftw)
{
	char t[PATH_MAX + 1];
	ssize_t n = readlink(p, t, PATH_MAX);
	int depth = ftw->level - 1;

	FUZZ_ASSERT(n >= 0);
	t[n] = 0;
	if (t[0] == '/')
		return 0;
	for (char *c = strtok(t, "/"); c; c = strtok(NULL, "/")) {
		if (!strcmp(c, ".."))
			depth--;
		else if (strcmp(c, "."))
			depth++;
		if (depth < 0)
			return 0;
	}
	return 1;
}

static int check_entry(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	bool planted = ftw->level == 1 &&
		(!strcmp(p + ftw->base, "link") || !strcmp(p + ftw->base, "ldir"));

	(void)flag;
	FUZZ_ASSERT(!S_ISREG(st->st_mode) || !(st->st_mode & (S_ISUID | S_ISGID)));
	FUZZ_ASSERT(!S_ISLNK(st->st_mode) || planted || link_stays_in(p, ftw));
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cli_untar u;
	uint32_t rnd;
	int root, fds, r = 0;
	size_t off = 1;
	static uint8_t *fixed;

	if (size < 1)
		return 0;
	if (data[0] & 2) {
		free(fixed);
		fixed = malloc(size);
		FUZZ_ASSERT(fixed);
		memcpy(fixed, data, size);
		tar_fixup(fixed + 1, size - 1);
		data = fixed;
	}
	setup();
	fds = count_fds();
	root = open(dest, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	FUZZ_ASSERT(root >= 0);
	cli_untar_init(&u, root, 022, "dest");
	rnd = data[0] | 1;
	while (off < size && r == 0) {
		size_t piece;

		rnd = rnd * 1103515245u + 12345u;
		piece = 1 + (rnd >> 16) % 1500;
		if (piece > size - off)
			piece = size - off;
		r = cli_untar_feed(&u, data + off, piece);
		off += piece;
	}
	if (r == 0)
		r = cli_untar_finish(&u);
	FUZZ_ASSERT(r == 0 || r == -1);
	if (r)
		FUZZ_ASSERT(u.err[0] && memchr(u.err, 0, sizeof(u.err)));
	cli_untar_free(&u);
	close(root);
	FUZZ_ASSERT(count_fds() == fds);
	check_outside();
	nftw(dest, check_entry, 16, FTW_PHYS);
	return 0;
}
