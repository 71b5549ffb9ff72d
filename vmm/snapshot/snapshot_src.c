#include "vmm/snapshot/snapshot_src.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/base/mount_clone.h"
#include "vmm/snapshot/snapshot_file.h"
#include "vmm/snapshot/snapshot_io.h"
#include "vmm/snapshot/snapshot_layer.h"
#include "vmm/snapshot/snapshot_mem.h"
#include "vmm/snapshot/snapshot_workingset.h"

const char *snap_src_name(enum snap_src_file f, char buf[16])
{
	switch (f) {
	case SNAP_SRC_STATE:
		return SNAP_STATE_FILE;
	case SNAP_SRC_MEM:
		return SNAP_MEM_FILE;
	case SNAP_SRC_MEMZ:
		return SNAP_MEMZ_FILE;
	case SNAP_SRC_LAYER:
		return SNAP_LAYER_FILE;
	case SNAP_SRC_WORKINGSET:
		return SNAP_WORKINGSET_FILE;
	default:
		snprintf(buf, 16, "disk%d", (int)f - SNAP_SRC_DISK0);
		return buf;
	}
}

/* Open every file of directory d (its own fd already in d->dirfd). */
static void open_files(struct snap_src_dir *d, int nfiles)
{
	struct stat st;
	char buf[16];

	for (int f = 0; f < SNAP_SRC_NFILES; f++) {
		int fd = f < nfiles
			? snap_file_openat(d->dirfd, snap_src_name((enum snap_src_file)f, buf))
			: -ENOENT;

		/* A hard link (to a file the VMM could not read, planted in
		 * its own snapshot): root's open must not read it for the jail. */
		if (fd >= 0 && (fstat(fd, &st) < 0 || (S_ISREG(st.st_mode) && st.st_nlink != 1))) {
			close(fd);
			fd = -EMLINK;
		}
		d->fd[f] = fd;
	}
}

static struct snap_src_dir *add_dir(struct snap_src *s, int dirfd, const char *name)
{
	struct snap_src_dir *d = &s->dirs[s->ndirs++];

	snprintf(d->name, sizeof(d->name), "%.63s", name); /* snap_layer_name_valid: at most 63 */
	d->dirfd = dirfd;
	return d;
}

/* A layer's parents are its siblings: open those a layer could name,
 * with the files a parent is read for (its id, its memory and layer). */
static void open_siblings(struct snap_src *s)
{
	struct dirent *de;
	DIR *dir;
	int fd = dup(s->updir);

	if (fd < 0)
		return;
	if (lseek(fd, 0, SEEK_SET) < 0 || !(dir = fdopendir(fd))) {
		close(fd);
		return;
	}
	while ((de = readdir(dir)) && s->ndirs <= SNAP_SRC_SIBLINGS) {
		int dfd;

		if (!snap_layer_name_valid(de->d_name) ||
		    (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN))
			continue;
		dfd = openat(s->updir, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (dfd >= 0)
			open_files(add_dir(s, dfd, de->d_name), SNAP_SRC_LAYER + 1);
	}
	closedir(dir);
}

/*
 * The folder holding the snapshot as a read-only mount of its own
 * (lib/base/mount_clone.h), and the snapshot's directory found again in
 * it: the directory descriptors kept for the restore thread, in the jail,
 * then lead nowhere above that folder, whatever a hostile snapshot makes
 * the parser do with them (".." from a descriptor of the host's tree is
 * the host's /). *fd (the snapshot's directory) and *up are replaced;
 * without the privilege to clone (no jail to keep) they stay as they are.
 */
static int clone_folder(int *fd, int *up, const char *path, struct err *e)
{
	struct stat st, again;
	char real[PATH_MAX], *name;
	int cloned, root, dir, r;

	/* The directory's own name in its folder ("snap/.", "..", a trailing
	 * slash); the inode check below makes sure it is the one opened. */
	if (!realpath(path, real) || fstat(*fd, &st) < 0)
		return err_set(e, errno, "--restore %s: %s", path, strerror(errno));
	name = strrchr(real, '/') + 1;
	if (!*name)
		return err_set(
			e, EINVAL,
			"--restore %s: the host's / is no snapshot directory: give the snapshot's own",
			path);
	if ((r = mount_clone_dir(up, 1, "--restore: the snapshot's folder", &cloned, e)) < 0 ||
	    !cloned)
		return r;
	/* An O_PATH root: open it for reading (siblings are listed). */
	root = openat(*up, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	dir = root < 0 ? -1 : openat(root, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dir < 0 || fstat(dir, &again) < 0 || again.st_dev != st.st_dev ||
	    again.st_ino != st.st_ino) {
		r = err_set(e, ESTALE,
			    "--restore %s: the snapshot's directory changed while it was opened",
			    path);
		if (dir >= 0)
			close(dir);
		if (root >= 0)
			close(root);
		return r;
	}
	close(*up);
	close(*fd);
	*up = root;
	*fd = dir;
	return 0;
}

int snap_src_open(struct snap_src *s, const char *path, struct err *e)
{
	/* No symlink as the last component: a jailed VMM owns the directory
	 * its snapshots are made in and could plant one there. */
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), r;
	struct stat st;

	memset(s, 0, sizeof(*s));
	s->updir = -1;
	if (fd < 0 && (errno == ELOOP || errno == ENOTDIR) && lstat(path, &st) == 0 &&
	    S_ISLNK(st.st_mode))
		return err_set(e, ELOOP,
			       "--restore %s: a symbolic link (give the snapshot directory itself)",
			       path);
	if (fd < 0)
		return err_set(e, errno, "--restore %s: %s", path, strerror(errno));
	s->updir = openat(fd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	/* Without its folder a root restore would hold a directory of the
	 * host's tree across the jail: refused. */
	if (s->updir < 0 && geteuid() == 0) {
		r = err_set(e, errno, "--restore %s: its folder: %s", path, strerror(errno));
		close(fd);
		return r;
	}
	if (s->updir >= 0 && (r = clone_folder(&fd, &s->updir, path, e)) < 0) {
		close(s->updir);
		s->updir = -1;
		close(fd);
		return r;
	}
	s->dirs = calloc(SNAP_SRC_SIBLINGS + 1, sizeof(*s->dirs));
	if (!s->dirs) {
		if (s->updir >= 0)
			close(s->updir);
		s->updir = -1;
		close(fd);
		return err_set(e, ENOMEM, "out of memory");
	}
	open_files(add_dir(s, fd, ""), SNAP_SRC_NFILES);
	if (s->updir >= 0 && s->dirs[0].fd[SNAP_SRC_LAYER] != -ENOENT)
		open_siblings(s);
	return 0;
}

int snap_src_take(struct snap_src *s, int dir, enum snap_src_file f, struct err *e)
{
	char buf[16];
	const char *name = snap_src_name(f, buf);
	int fd;

	if (dir < 0 || dir >= s->ndirs || (unsigned)f >= SNAP_SRC_NFILES)
		return err_set(e, EINVAL, "snapshot: no file %s in directory %d", name, dir);
	fd = s->dirs[dir].fd[f];
	s->dirs[dir].fd[f] = -EBADF; /* handed over: a second take is a bug, refused */
	return snap_file_check(fd, name, e);
}

int snap_src_sibling(struct snap_src *s, const char *name, struct err *e)
{
	int fd;

	for (int i = 1; i < s->ndirs; i++)
		if (!strcmp(s->dirs[i].name, name))
			return i;
	if (s->updir < 0)
		return err_set(e, ENOENT, "restore: the folder of the snapshot cannot be opened");
	if (s->ndirs > SNAP_SRC_SIBLINGS || !snap_layer_name_valid(name))
		return err_set(e, ENOENT,
			       "restore: layered on snapshot '%s', which cannot be opened", name);
	fd = openat(s->updir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return err_set(e, errno,
			       "restore: layered on snapshot '%s', which cannot be opened: %s",
			       name, strerror(errno));
	open_files(add_dir(s, fd, name), SNAP_SRC_LAYER + 1);
	return s->ndirs - 1;
}

void snap_src_close(struct snap_src *s)
{
	if (!s->dirs)
		return;
	for (int i = 0; i < s->ndirs; i++) {
		for (int f = 0; f < SNAP_SRC_NFILES; f++)
			if (s->dirs[i].fd[f] >= 0)
				close(s->dirs[i].fd[f]);
		if (s->dirs[i].dirfd >= 0)
			close(s->dirs[i].dirfd);
	}
	if (s->updir >= 0)
		close(s->updir);
	free(s->dirs);
	memset(s, 0, sizeof(*s));
	s->updir = -1;
}
