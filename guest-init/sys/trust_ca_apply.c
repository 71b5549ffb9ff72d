/* trust_probe(), trust_ca_apply(), trust_ca_installed(): see trust_ca.h. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "guest-init/sys/netconf.h"
#include "guest-init/sys/trust_ca.h"
#include "lib/base/fd_io.h"
#include "lib/base/file_replace.h"

/* "configure: trust_ca: <what failed>: <strerror>". */
#define fail(err, e, ...) netconf_fail(err, e, "trust_ca: " __VA_ARGS__)

/* root + path into out; -ENAMETOOLONG when it does not fit. */
static int at_root(char *out, size_t cap, const char *root, const char *path)
{
	int n = snprintf(out, cap, "%s%s", root, path);

	return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

unsigned trust_probe(const char *root)
{
	char p[PATH_MAX];
	struct statvfs vfs;
	struct stat st;
	unsigned has = 0;

	for (size_t i = 0; i < trust_paths_n; i++)
		/* stat, not lstat: RHEL's and Alpine's bundles are symbolic links. */
		if (at_root(p, sizeof(p), root, trust_paths[i].path) == 0 && stat(p, &st) == 0 &&
		    (trust_paths[i].dir ? S_ISDIR(st.st_mode) : S_ISREG(st.st_mode)))
			has |= trust_paths[i].bit;
	if (statvfs(*root ? root : "/", &vfs) == 0 && !(vfs.f_flag & ST_RDONLY))
		has |= TRUST_ROOT_WRITABLE;
	return has;
}

/* The regular file at path, at most max bytes, malloc'd into *buf (NUL
 * after it). 0, -ENOENT, -EFBIG (larger), or another -errno. */
static int read_bounded(const char *path, size_t max, char **buf, size_t *n)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY), e = 0;
	struct stat st;
	ssize_t got;

	*buf = NULL;
	*n = 0;
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		e = -errno;
	else if (!S_ISREG(st.st_mode))
		e = -EINVAL;
	else if ((uint64_t)st.st_size > max)
		e = -EFBIG;
	else if (!(*buf = malloc((size_t)st.st_size + 2)))
		e = -ENOMEM;
	/* One byte more than it said: a file that grew meanwhile is seen. */
	else if ((got = fd_io_read_full(fd, *buf, (size_t)st.st_size + 1)) < 0)
		e = (int)got;
	else if ((size_t)got > max)
		e = -EFBIG;
	else
		(*buf)[ *n = (size_t)got] = '\0';
	close(fd);
	if (e) {
		free(*buf);
		*buf = NULL;
	}
	return e;
}

/* The CA installed now (TRUST_CA_FILE), malloc'd; NULL when none. */
static char *installed(const char *root)
{
	char p[PATH_MAX], *have;
	size_t n;

	if (at_root(p, sizeof(p), root, TRUST_CA_FILE) ||
	    read_bounded(p, AGENT_TRUST_CA_MAX, &have, &n))
		return NULL;
	return have;
}

/* Whether old, the CA installed, is pem byte for byte, with its bundle. */
static bool already(const char *root, const char *old, const char *pem)
{
	char p[PATH_MAX];

	return old && strcmp(old, pem) == 0 &&
		at_root(p, sizeof(p), root, TRUST_BUNDLE_FILE) == 0 && access(p, F_OK) == 0;
}

/* Replace the file at path (a whole path) with buf. 0 or -errno. */
static int replace_path(char *path, const void *buf, size_t n)
{
	char *slash = strrchr(path, '/');
	int r;

	if (!slash || slash == path)
		return file_replace("/", slash ? slash + 1 : path, buf, n, 0644);
	*slash = '\0';
	r = file_replace(path, slash + 1, buf, n, 0644);
	*slash = '/';
	return r;
}

static int unlink_quiet(const char *path)
{
	return unlink(path) == 0 || errno == ENOENT ? 0 : -errno;
}

/* The /run files: written for a CA, removed for "". */
static int apply_run(const char *root, const char *pem, const char *merged, size_t m,
		     struct agent_err *err)
{
	char dir[PATH_MAX], p[PATH_MAX];
	int r = 0;

	if (at_root(dir, sizeof(dir), root, TRUST_RUN_DIR))
		return fail(err, ENAMETOOLONG, "%s", TRUST_RUN_DIR);
	if (!*pem) {
		if (at_root(p, sizeof(p), root, TRUST_CA_FILE) || (r = unlink_quiet(p)) < 0)
			return fail(err, r < 0 ? -r : ENAMETOOLONG, "removing %s", TRUST_CA_FILE);
		if (at_root(p, sizeof(p), root, TRUST_BUNDLE_FILE) || (r = unlink_quiet(p)) < 0)
			return fail(err, r < 0 ? -r : ENAMETOOLONG, "removing %s",
				    TRUST_BUNDLE_FILE);
		return 0;
	}
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return fail(err, errno, "creating %s", TRUST_RUN_DIR);
	if ((r = file_replace(dir, "egress-ca.pem", pem, strlen(pem), 0644)) < 0)
		return fail(err, -r, "writing %s", TRUST_CA_FILE);
	if ((r = file_replace(dir, "ca-bundle.pem", merged, m, 0644)) < 0)
		return fail(err, -r, "writing %s", TRUST_BUNDLE_FILE);
	return 0;
}

/* The system bundle (through its links: the file update-ca-* writes) and the anchors. */
static int apply_system(const char *root, const struct trust_plan *pl, const char *pem,
			const char *bundle, size_t n, const char *merged, size_t m,
			struct agent_err *err)
{
	char p[PATH_MAX], real[PATH_MAX];
	int r;

	if (pl->patch_system && (m != n || memcmp(bundle, merged, n) != 0)) {
		if (at_root(p, sizeof(p), root, pl->system_bundle))
			return fail(err, ENAMETOOLONG, "%s", pl->system_bundle);
		if (!realpath(p, real))
			return fail(err, errno, "resolving %s", pl->system_bundle);
		if ((r = replace_path(real, merged, m)) < 0)
			return fail(err, -r, "writing the image's CA bundle %s", pl->system_bundle);
	}
	for (size_t i = 0; i < pl->anchors_n; i++) {
		if (at_root(p, sizeof(p), root, pl->anchors[i]))
			return fail(err, ENAMETOOLONG, "%s", pl->anchors[i]);
		r = *pem ? replace_path(p, pem, strlen(pem)) : unlink_quiet(p);
		if (r < 0)
			return fail(err, -r, "%s %s", *pem ? "writing" : "removing",
				    pl->anchors[i]);
	}
	return 0;
}

int trust_ca_apply(const char *root, const char *pem, struct agent_err *err)
{
	struct trust_plan pl;
	char p[PATH_MAX], *bundle = NULL, *merged = NULL, *old = installed(root);
	size_t n = 0, m;
	int r = 0;

	if (*pem && already(root, old, pem))
		goto out;
	trust_plan_make(trust_probe(root), &pl);
	if (pl.system_bundle) {
		if (at_root(p, sizeof(p), root, pl.system_bundle)) {
			r = fail(err, ENAMETOOLONG, "%s", pl.system_bundle);
			goto out;
		}
		r = read_bounded(p, TRUST_BUNDLE_MAX, &bundle, &n);
		if (r == -EFBIG)
			r = fail(err, EFBIG,
				 "the image's CA bundle %s is over %u MiB; trim it or remove it",
				 pl.system_bundle, TRUST_BUNDLE_MAX >> 20);
		else if (r < 0)
			r = fail(err, -r, "reading the image's CA bundle %s", pl.system_bundle);
		if (r < 0)
			goto out;
	}
	merged = malloc(trust_bundle_merge_max(n, pem));
	if (!merged) {
		r = fail(err, ENOMEM, "the combined bundle");
		goto out;
	}
	/* The CA installed before goes, wherever update-ca-* copied it. */
	m = trust_bundle_merge(bundle ? bundle : "", n, old, pem, merged);
	r = apply_run(root, pem, merged, m, err);
	if (r == 0)
		r = apply_system(root, &pl, pem, bundle ? bundle : "", n, merged, m, err);
out:
	free(merged);
	free(bundle);
	free(old);
	return r;
}

bool trust_ca_installed(void)
{
	return access(TRUST_BUNDLE_FILE, F_OK) == 0;
}
