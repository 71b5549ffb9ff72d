/* Tar streams into the staging tree; see import_archive.h. */
#include "api/image-import/import_archive.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>

#include "api/image-import/oci_path.h"
#include "lib/base/fd_io.h"

static struct archive *reader(int fd, struct err *e)
{
	struct archive *a = archive_read_new();

	if (!a) {
		err_set(e, ENOMEM, "libarchive: out of memory");
		return NULL;
	}
	archive_read_support_format_tar(a);
	archive_read_support_filter_gzip(a);
	/* OCI layers may be tar+zstd (image-spec layer.md); Debian's
	 * libarchive reads it through libzstd */
	archive_read_support_filter_zstd(a);
	if (archive_read_open_fd(a, fd, 1u << 16) != ARCHIVE_OK) {
		err_set(e, EINVAL, "not a tar archive (plain, gzip or zstd): %.200s",
			archive_error_string(a));
		archive_read_free(a);
		return NULL;
	}
	return a;
}

/* The bytes one pass decompresses are capped (a gzip bomb, or members
 * that are only skipped, must not run for hours): what the tar reader has
 * taken from the decompressor so far, plus the member's declared size
 * (skipping it decompresses that much), against the tree's byte cap. */
static int over_cap(struct archive *a, struct archive_entry *ent, const struct import_tree *t,
		    struct err *e)
{
	la_int64_t done = archive_filter_bytes(a, 0);
	uint64_t size = ent && archive_entry_size_is_set(ent) && archive_entry_size(ent) > 0
		? (uint64_t)archive_entry_size(ent)
		: 0;

	const char *name = ent ? archive_entry_pathname(ent) : NULL;

	if (!t->max_bytes || done < 0 ||
	    ((uint64_t)done <= t->max_bytes && size <= t->max_bytes - (uint64_t)done))
		return 0;
	return err_set(
		e, EFBIG,
		"%s%.200s%sthe archive decompresses to more than %llu bytes (the size cap): too large to import",
		name ? "member \"" : "", name ? name : "", name ? "\": " : "",
		(unsigned long long)t->max_bytes);
}

/* Copy the entry's data to fd; the tree's byte cap is checked as it goes. */
static int copy_data(struct archive *a, struct archive_entry *ent, int fd, struct import_tree *t,
		     uint64_t *size, struct err *e)
{
	const void *buf;
	size_t n;
	la_int64_t off;
	int r;

	*size = 0;
	while ((r = archive_read_data_block(a, &buf, &n, &off)) == ARCHIVE_OK) {
		if (off < 0 || (uint64_t)off != *size) {
			/* a sparse member: write the hole as a seek */
			if (off < 0 || lseek(fd, off, SEEK_SET) < 0)
				return err_set(e, EINVAL, "bad sparse offset");
			*size = (uint64_t)off;
		}
		if (over_cap(a, NULL, t, e) < 0)
			return -EFBIG;
		if (t->max_bytes && t->bytes + *size + n > t->max_bytes)
			return err_set(
				e, EFBIG,
				"more than %llu bytes of content (the size cap): the image is too large to import",
				(unsigned long long)t->max_bytes);
		if ((r = fd_io_write_all(fd, buf, n)) < 0)
			return err_set(e, -r, "write: %s", strerror(-r));
		*size += n;
	}
	if (r != ARCHIVE_EOF)
		return err_set(e, EINVAL, "truncated or corrupt data: %.200s",
			       archive_error_string(a));
	/* a sparse member may end in a hole */
	if (archive_entry_size_is_set(ent) && archive_entry_size(ent) > 0 &&
	    (uint64_t)archive_entry_size(ent) > *size) {
		if (t->max_bytes && t->bytes + (uint64_t)archive_entry_size(ent) > t->max_bytes)
			return err_set(e, EFBIG, "more than %llu bytes of content (the size cap)",
				       (unsigned long long)t->max_bytes);
		*size = (uint64_t)archive_entry_size(ent);
		if (ftruncate(fd, (off_t)*size) < 0)
			return err_set(e, errno, "truncate: %s", strerror(errno));
	}
	return 0;
}

static int next(struct archive *a, struct archive_entry **ent, const struct import_tree *t,
		struct err *e)
{
	int r = archive_read_next_header(a, ent);

	if (r == ARCHIVE_EOF)
		return over_cap(a, NULL, t, e) < 0 ? -EFBIG : 0;
	if (r != ARCHIVE_OK && r != ARCHIVE_WARN)
		return over_cap(a, NULL, t, e) < 0
			? -EFBIG
			: err_set(e, EINVAL, "bad tar header: %.200s", archive_error_string(a));
	return over_cap(a, *ent, t, e) < 0 ? -EFBIG : 1;
}

int import_outer(int fd, struct import_tree *t, struct err *e)
{
	struct archive *a = reader(fd, e);
	struct archive_entry *ent;
	unsigned members = 0;
	int r;

	if (!a)
		return -EINVAL;
	while ((r = next(a, &ent, t, e)) == 1) {
		const char *name = archive_entry_pathname(ent);
		char clean[OCI_PATH_MAX + 1];
		struct import_attr at = { .mode = S_IFREG | 0600 };
		struct err pe;
		uint64_t size;
		int ofd;

		if (++members > IMPORT_OUTER_MEMBERS_MAX) {
			r = err_set(e, EFBIG,
				    "the archive has more than %d members: not an image archive",
				    IMPORT_OUTER_MEMBERS_MAX);
			break;
		}
		if (!name) {
			r = err_set(e, EINVAL, "member %u has no name libarchive can read",
				    members);
			break;
		}
		if (oci_path_clean(name, clean, &pe) < 0) {
			r = err_set(e, EINVAL, "member \"%.200s\": %s", name, pe.msg);
			break;
		}
		if (archive_entry_filetype(ent) != AE_IFREG || archive_entry_hardlink(ent) ||
		    !clean[0])
			continue;
		if ((r = tree_file_open(t, clean, &at, &ofd, &pe)) == 0) {
			r = copy_data(a, ent, ofd, t, &size, &pe);
			if (r == 0)
				r = tree_file_done(t, ofd, size, &pe);
			else
				close(ofd);
		}
		if (r < 0) {
			r = err_set(e, -r, "member \"%.200s\": %s", name, pe.msg);
			break;
		}
	}
	archive_read_free(a);
	return r < 0 ? r : 0;
}

/* Pass 1: the layer's whiteouts. */
static int whiteouts(struct archive *a, struct import_tree *t, struct err *e)
{
	struct archive_entry *ent;
	int r;

	while ((r = next(a, &ent, t, e)) == 1) {
		const char *name = archive_entry_pathname(ent);
		char clean[OCI_PATH_MAX + 1], target[OCI_PATH_MAX + 1];
		enum oci_whiteout kind;
		struct err pe;

		if (!name)
			return err_set(e, EINVAL, "a member has no name libarchive can read");
		if (oci_path_clean(name, clean, &pe) < 0 ||
		    oci_whiteout(clean, &kind, target, &pe) < 0)
			return err_set(e, EINVAL, "member \"%.200s\": %s", name, pe.msg);
		if (kind == OCI_WH_FILE)
			r = tree_remove(t, target, &pe);
		else if (kind == OCI_WH_OPAQUE)
			r = tree_empty_dir(t, target, &pe);
		if (kind != OCI_WH_NONE && r < 0)
			return err_set(e, -r, "member \"%.200s\": %s", name, pe.msg);
	}
	return r;
}

static int member(struct archive *a, struct archive_entry *ent, const char *clean,
		  struct import_tree *t, bool devices, struct err *e)
{
	const char *link = archive_entry_hardlink(ent);
	struct import_attr at = {
		.uid = (uid_t)archive_entry_uid(ent),
		.gid = (gid_t)archive_entry_gid(ent),
		.mode = archive_entry_mode(ent),
		.mtime = archive_entry_mtime(ent),
	};
	char lclean[OCI_PATH_MAX + 1];
	struct err le;
	uint64_t size;
	int fd, r;

	if (archive_entry_uid(ent) < 0 || archive_entry_uid(ent) > UINT32_MAX - 1 ||
	    archive_entry_gid(ent) < 0 || archive_entry_gid(ent) > UINT32_MAX - 1)
		return err_set(e, EINVAL, "owner %lld:%lld is out of range",
			       (long long)archive_entry_uid(ent),
			       (long long)archive_entry_gid(ent));
	if (link) {
		if ((r = oci_path_clean(link, lclean, &le)) < 0)
			return err_set(e, -r, "hard link to \"%.200s\": %s", link, le.msg);
		return tree_hardlink(t, clean, lclean, e);
	}
	switch (archive_entry_filetype(ent)) {
	case AE_IFDIR:
		return tree_mkdir(t, clean, &at, e);
	case AE_IFREG:
		if ((r = tree_file_open(t, clean, &at, &fd, e)) < 0)
			return r;
		if ((r = copy_data(a, ent, fd, t, &size, e)) < 0) {
			close(fd);
			return r;
		}
		futimens(fd,
			 (struct timespec[2]){ { .tv_sec = at.mtime }, { .tv_sec = at.mtime } });
		return tree_file_done(t, fd, size, e);
	case AE_IFLNK:
		if (!archive_entry_symlink(ent))
			return err_set(e, EINVAL, "symlink without a target");
		return tree_symlink(t, clean, archive_entry_symlink(ent), &at, e);
	case AE_IFIFO:
		return tree_fifo(t, clean, &at, e);
	case AE_IFCHR:
	case AE_IFBLK:
		if (!devices)
			return err_set(
				e, EPERM,
				"device node (refused: only root may ask for them, with devices=1)");
		return tree_device(t, clean, &at, archive_entry_rdevmajor(ent),
				   archive_entry_rdevminor(ent), e);
	case AE_IFSOCK:
		return 0; /* a socket in a layer is a leftover: nothing to keep */
	default:
		return err_set(e, EINVAL, "unknown member type 0%o",
			       (unsigned)archive_entry_filetype(ent));
	}
}

int import_layer(int fd, struct import_tree *t, bool devices, struct err *e)
{
	struct archive *a;
	struct archive_entry *ent;
	int r;

	if (lseek(fd, 0, SEEK_SET) < 0 || !(a = reader(fd, e)))
		return -EINVAL;
	r = whiteouts(a, t, e);
	archive_read_free(a);
	if (r < 0)
		return r;
	if (lseek(fd, 0, SEEK_SET) < 0 || !(a = reader(fd, e)))
		return -EINVAL;
	while ((r = next(a, &ent, t, e)) == 1) {
		const char *name = archive_entry_pathname(ent);
		char clean[OCI_PATH_MAX + 1];
		struct err pe;

		if (!name || oci_path_clean(name, clean, &pe) < 0)
			return archive_read_free(a),
			       err_set(e, EINVAL, "member \"%.200s\": %s", name ? name : "?",
				       name ? pe.msg : "unreadable name");
		if (oci_is_whiteout_name(clean))
			continue;
		if ((r = member(a, ent, clean, t, devices, &pe)) < 0) {
			err_set(e, -r, "member \"%.200s\": %s", name, pe.msg);
			break;
		}
	}
	archive_read_free(a);
	return r < 0 ? r : 0;
}
