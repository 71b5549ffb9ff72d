/*
 * kiln-image-import: turns an OCI image-layout tarball or a `docker save`
 * tarball into a bootable ext4 image (docs/api.md, "POST /v1/images").
 *
 *   kiln-image-import [--max-bytes N] [--max-entries N] [--devices] [--ref TAG] <ARCHIVE 3<KILN_INIT
 *   kiln-image-import --clean
 *
 * Runs in the current directory (kilnd's per-import work directory),
 * as the unprivileged import uid kilnd dropped it to (docs/security.md,
 * "Image import"): makes outer/ (the archive's files), stage/ (the image
 * tree), own.debugfs (ownership to apply) and image.ext4. On success one
 * JSON line on stdout: {"format", "manifest_digest", "config_digest",
 * "layers", "config", "digest", "size_bytes"}. On failure one line on
 * stderr; exit 2 when the archive is at fault (bad_archive), 1 otherwise.
 * Either way outer/ and stage/ are removed before it exits (--clean does
 * only that, for an importer that was killed), so kilnd, which is root,
 * never walks a tree an archive made.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "api/image-import/import_archive.h"
#include "api/image-import/import_ext4.h"
#include "api/image-import/import_own.h"
#include "api/image-import/import_seccomp.h"
#include "api/image-import/import_tree.h"
#include "api/image-import/oci_spec.h"
#include "lib/base/json_text.h"
#include "lib/base/num_parse.h"
#include "lib/digest/digest.h"

#define EXIT_BAD_ARCHIVE 2

struct opts {
	uint64_t max_bytes, max_entries;
	bool devices;
	bool clean_only;
	const char *ref; /* the tag to import from an OCI layout; NULL: its only one */
};

/* Open a file of the outer tree read-only, through no symlink. */
static int outer_open(struct import_tree *o, const char *path, struct err *e)
{
	const char *base;
	int dfd, fd, r;

	if ((r = tree_parent(o, path, 0, &dfd, &base, e)) < 0)
		return err_set(e, ENOENT, "the archive has no '%s'", path);
	fd = openat(dfd, base, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	close(dfd);
	if (fd < 0)
		return err_set(e, ENOENT, "the archive has no '%s'", path);
	return fd;
}

static bool outer_has(struct import_tree *o, const char *path)
{
	struct err e;
	int fd = outer_open(o, path, &e);

	if (fd >= 0)
		close(fd);
	return fd >= 0;
}

/* The digest of fd's whole content, then back to its start; a blob whose
 * expected digest is given must have it. */
static int check_digest(int fd, const char *path, const char *want, char *got, struct err *e)
{
	int r = digest_fd(fd, got);

	if (r < 0 || lseek(fd, 0, SEEK_SET) < 0)
		return err_set(e, EIO, "read '%s': %s", path, strerror(r < 0 ? -r : errno));
	if (want && want[0] && strcmp(want, got) != 0)
		return err_set(e, EINVAL,
			       "'%s': digest mismatch: expected %s, the blob hashes to %s", path,
			       want, got);
	return 0;
}

/* A JSON document of the outer tree (at most OCI_JSON_MAX bytes), its
 * digest checked when one is expected; *buf malloc'd. */
static int outer_json(struct import_tree *o, const char *path, const char *want, char **buf,
		      size_t *n, char *got, struct err *e)
{
	struct stat st;
	ssize_t k;
	int fd = outer_open(o, path, e), r;

	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > OCI_JSON_MAX) {
		close(fd);
		return err_set(e, EINVAL, "'%s' is larger than %u bytes: not an image document",
			       path, OCI_JSON_MAX);
	}
	if ((r = check_digest(fd, path, want, got, e)) < 0) {
		close(fd);
		return r;
	}
	*buf = malloc((size_t)st.st_size + 1);
	k = *buf ? read(fd, *buf, (size_t)st.st_size) : -1;
	close(fd);
	if (k != st.st_size) {
		free(*buf);
		return err_set(e, EIO, "read '%s' failed", path);
	}
	*n = (size_t)k;
	return 0;
}

/* Which format, and the image's blobs: into im, with the manifest's digest. */
static int read_manifest(struct import_tree *o, const char *ref, struct oci_image *im,
			 const char **format, char *manifest_digest, struct err *e)
{
	struct oci_blob mb;
	char *buf = NULL, got[DIGEST_STR_LEN];
	size_t n;
	int r;

	if (outer_has(o, "oci-layout") && outer_has(o, "index.json")) {
		*format = "oci";
		if ((r = outer_json(o, "index.json", NULL, &buf, &n, got, e)) < 0)
			return r;
		r = oci_index_parse(buf, n, ref, &mb, e);
		free(buf);
		if (r < 0 || (r = outer_json(o, mb.path, mb.digest, &buf, &n, got, e)) < 0)
			return r;
		r = oci_manifest_parse(buf, n, im, e);
		free(buf);
		snprintf(manifest_digest, DIGEST_STR_LEN, "%s", mb.digest);
		return r;
	}
	if (outer_has(o, "manifest.json") && ref)
		return err_set(
			e, EINVAL,
			"ref '%.80s': a ref picks a tag of an OCI layout's index.json, and this is a docker save archive (manifest.json, one image): leave the ref out",
			ref);
	if (outer_has(o, "manifest.json")) {
		*format = "docker";
		if ((r = outer_json(o, "manifest.json", NULL, &buf, &n, got, e)) < 0)
			return r;
		r = oci_docker_manifest_parse(buf, n, im, e);
		free(buf);
		snprintf(manifest_digest, DIGEST_STR_LEN, "%s", got);
		return r;
	}
	return err_set(
		e, EINVAL,
		"neither an OCI image layout (oci-layout, index.json) nor a docker save archive (manifest.json)");
}

static int apply_layers(struct import_tree *o, struct import_tree *t, const struct oci_image *im,
			bool devices, struct err *e)
{
	for (size_t i = 0; i < im->nlayers; i++) {
		const struct oci_blob *b = &im->layers[i];
		char got[DIGEST_STR_LEN];
		struct err le;
		int fd = outer_open(o, b->path, &le), r;

		if (fd < 0)
			return err_set(e, EINVAL, "layer %zu (%s): %s", i + 1,
				       b->digest[0] ? b->digest : b->path, le.msg);
		r = check_digest(fd, b->path, b->digest, got, &le);
		if (r == 0)
			r = import_layer(fd, t, devices, &le);
		close(fd);
		if (r < 0)
			return err_set(e, -r, "layer %zu (%s): %s", i + 1,
				       b->digest[0] ? b->digest : got, le.msg);
	}
	return 0;
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "max-bytes", required_argument, 0, 'b' },
		{ "max-entries", required_argument, 0, 'n' },
		{ "devices", no_argument, 0, 'd' },
		{ "clean", no_argument, 0, 'c' },
		{ "ref", required_argument, 0, 'r' },
		{ 0, 0, 0, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		if (c == 'b' && num_parse_u64(optarg, 10, 1, UINT64_MAX, &o->max_bytes) == 0)
			continue;
		if (c == 'n' && num_parse_u64(optarg, 10, 1, UINT64_MAX, &o->max_entries) == 0)
			continue;
		if (c == 'r' && optarg[0] && strlen(optarg) <= OCI_REF_MAX) {
			o->ref = optarg;
			continue;
		}
		if (c == 'd' || c == 'c') {
			*(c == 'd' ? &o->devices : &o->clean_only) = true;
			continue;
		}
		fprintf(stderr,
			"usage: kiln-image-import [--max-bytes N] [--max-entries N] [--devices] [--ref TAG] <ARCHIVE 3<KILN_INIT\n"
			"       kiln-image-import --clean   (remove outer/ and stage/)\n");
		return -1;
	}
	return 0;
}

static int tree_open(struct import_tree *t, const char *dir, struct err *e)
{
	if (mkdir(dir, 0700) < 0)
		return err_set(e, errno, "mkdir '%s' in the work directory: %s", dir,
			       strerror(errno));
	t->root = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return t->root < 0 ? err_set(e, errno, "open '%s': %s", dir, strerror(errno)) : 0;
}

/* Remove outer/ and stage/ (whatever the archive put there: never followed). */
static int clean(void)
{
	struct import_tree cwd = { .root = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC) };
	struct err e;
	int r = cwd.root < 0 ? -errno : 0;

	if (r == 0 && (r = tree_remove(&cwd, "outer", &e)) == 0)
		r = tree_remove(&cwd, "stage", &e);
	if (r < 0)
		fprintf(stderr, "cleaning the work directory failed: %s\n",
			r == -errno ? strerror(errno) : e.msg);
	if (cwd.root >= 0)
		close(cwd.root);
	return r < 0 ? 1 : 0;
}

static int import(const struct opts *op);

int main(int argc, char **argv)
{
	struct opts op = { .max_bytes = 16ull << 30, .max_entries = 1000000 };
	struct err e;
	int rc;

	if (parse_opts(argc, argv, &op) < 0)
		return 1;
	/* Confined before the first byte of the archive is read. */
	if (import_seccomp_load(&e) < 0) {
		fprintf(stderr, "%s\n", e.msg);
		return 1;
	}
	setenv("PATH", "/usr/sbin:/usr/bin:/sbin:/bin", 1);
	/* a write past RLIMIT_FSIZE then fails with EFBIG (the archive's
	 * fault, exit 2) instead of killing the importer */
	signal(SIGXFSZ, SIG_IGN);
	if (op.clean_only)
		return clean();
	rc = import(&op);
	return clean() && rc == 0 ? 1 : rc;
}

static int import(const struct opts *opp)
{
	struct opts op = *opp;
	struct import_tree outer = { .root = -1 }, stage = { .root = -1 };
	static struct oci_image im;
	char manifest_digest[DIGEST_STR_LEN] = "", config_digest[DIGEST_STR_LEN] = "",
	     digest[DIGEST_STR_LEN];
	const char *format = "";
	char *cbuf = NULL;
	json_t *config = NULL, *out;
	FILE *own;
	struct err e;
	size_t cn;
	int r, fd;
	uint64_t bytes;

	/* the outer archive's files are capped like the layers' content: a
	 * gzip outer or sparse members must not fill the disk */
	outer.max_bytes = op.max_bytes;
	stage.max_bytes = op.max_bytes;
	stage.max_entries = op.max_entries;
	stage.keep_attrs = true;
	if (tree_open(&outer, "outer", &e) < 0 || tree_open(&stage, "stage", &e) < 0) {
		fprintf(stderr, "%s\n", e.msg);
		return 1;
	}
	/* the archive's fault from here to the config */
	r = import_outer(0, &outer, &e);
	if (r == 0)
		r = read_manifest(&outer, op.ref, &im, &format, manifest_digest, &e);
	if (r == 0)
		r = outer_json(&outer, im.config.path, im.config.digest, &cbuf, &cn, config_digest,
			       &e);
	if (r == 0) {
		r = oci_config_parse(cbuf, cn, &config, &e);
		free(cbuf);
	}
	if (r == 0)
		r = apply_layers(&outer, &stage, &im, op.devices, &e);
	if (r < 0) {
		fprintf(stderr, "%s\n", e.msg);
		return r == -ENOSPC || r == -EIO ? 1 : EXIT_BAD_ARCHIVE;
	}
	/* kiln's own part */
	if ((r = import_inject_init(&stage, 3, &e)) < 0) {
		fprintf(stderr, "installing kiln-init: %s\n", e.msg);
		return r == -EINVAL || r == -ELOOP ? EXIT_BAD_ARCHIVE : 1;
	}
	/* the tree is complete: its owners, modes and directory times */
	if (!(own = fopen("own.debugfs", "wx"))) {
		fprintf(stderr, "create own.debugfs failed: %s\n", strerror(errno));
		return 1;
	}
	r = import_own_script(&stage, own, &e);
	import_attrs_free(&stage.attrs);
	if (fclose(own) != 0 && r == 0)
		r = err_set(&e, EIO, "write own.debugfs failed: %s", strerror(errno));
	if (r < 0) {
		fprintf(stderr, "%s\n", e.msg);
		return 1;
	}
	bytes = import_image_bytes(&stage);
	if ((r = import_make_ext4("stage", "own.debugfs", "image.ext4", bytes,
				  stage.entries + stage.entries / 4 + 4096, &e)) < 0) {
		fprintf(stderr, "%s\n", e.msg);
		return 1;
	}
	fd = open("image.ext4", O_RDONLY | O_CLOEXEC);
	if (fd < 0 || digest_fd(fd, digest) < 0) {
		fprintf(stderr, "hashing image.ext4 failed\n");
		return 1;
	}
	close(fd);
	out = json_pack("{s:s,s:s,s:s,s:I,s:o,s:s,s:I}", "format", format, "manifest_digest",
			manifest_digest, "config_digest", config_digest, "layers",
			(json_int_t)im.nlayers, "config", config, "digest", digest, "size_bytes",
			(json_int_t)bytes);
	if (!out || json_text_stdio(out, stdout, JSON_COMPACT) < 0 || puts("") == EOF ||
	    fflush(stdout) != 0) {
		fprintf(stderr, "writing the result failed\n");
		return 1;
	}
	json_decref(out);
	return 0;
}
