/* A container's checkpoint copied out and read back; see rt_ckpt.h. */
#include "api/runtime/rt_ckpt.h"

#include <dirent.h>
#include <stdbool.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/runtime/rt_dir.h"
#include "lib/base/file_copy.h"
#include "vmm/control/control_client.h"

#define SNAPSHOT_MS 300000 /* kiln-vmm writes the VM's RAM: slow in the nested harness */

int rt_ckpt_work_open(const char *jail, uint32_t id, int *fd, struct err *e)
{
	char path[RT_PATH_MAX];
	int jfd;

	*fd = -1;
	snprintf(path, sizeof(path), "%s/" RT_CKPT_WORK, jail);
	jfd = open(jail, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (jfd < 0)
		return err_set(e, errno, "the VM's jail directory %s: %s", jail, strerror(errno));
	close(jfd);
	rt_ckpt_work_remove(jail); /* what a failed checkpoint left */
	jfd = open(jail, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (jfd < 0)
		return err_set(e, errno, "the VM's jail directory %s: %s", jail, strerror(errno));
	if (mkdirat(jfd, RT_CKPT_WORK, 0700) < 0 && errno != EEXIST) {
		close(jfd);
		return err_set(e, errno, "%s: %s", path, strerror(errno));
	}
	*fd = openat(jfd, RT_CKPT_WORK, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	close(jfd);
	if (*fd < 0 || fchown(*fd, id, id) < 0 || fchmod(*fd, 0700) < 0)
		return err_set(e, errno, "%s: %s", path, strerror(errno));
	return 0;
}

void rt_ckpt_work_remove(const char *jail)
{
	char path[RT_PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/" RT_CKPT_WORK, jail);
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	rt_dir_clear(fd, RT_CKPT_SNAP);
	rt_dir_clear(fd, RT_CKPT_SNAP ".tmp"); /* kiln-vmm's own, were it cut short */
	close(fd);
	rmdir(path);
}

/* The files kiln-vmm writes into a snapshot of a VM without disks
 * (vmm/snapshot/snapshot_file.h, snapshot_workingset.h): no other name
 * reaches the engine's directory. */
static bool snapshot_name(const char *name)
{
	static const char *const names[] = { "state", "memory", "memory.z", "workingset" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(name, names[i]))
			return true;
	return false;
}

/* One file of the snapshot: a regular file (not followed) of the VM's
 * uid, with no other link, at most max bytes, copied. */
static int copy_one(int src, int dst, const char *name, const struct rt_ckpt_src *from,
		    struct err *e)
{
	int in = openat(src, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC), out, r;
	struct stat st;

	if (in < 0 || fstat(in, &st) < 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1 ||
	    st.st_uid != from->uid || (uint64_t)st.st_size > from->max_bytes) {
		r = err_set(e, in < 0 ? errno : EINVAL,
			    "%s: the snapshot's %.100s is not a file kiln-vmm wrote (a "
			    "regular file of its own, one link, at most the VM's RAM)",
			    from->what, name);
		if (in >= 0)
			close(in);
		return r;
	}
	out = openat(dst, name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (out < 0) {
		close(in);
		return err_set(e, errno, "%s: writing %.100s: %s", from->what, name,
			       strerror(errno));
	}
	r = file_copy_sparse(in, out, NULL);
	if (!r && fsync(out) < 0)
		r = -errno;
	close(in);
	close(out);
	return r < 0 ? err_set(e, -r, "%s: copying %.100s: %s", from->what, name, strerror(-r)) : 0;
}

static int copy_all(int src, int dst, const struct rt_ckpt_src *from, struct err *e)
{
	DIR *d = fdopendir(src);
	struct dirent *de;
	int n = 0, r = 0;

	if (!d) {
		close(src);
		return err_set(e, errno, "%s: reading the snapshot: %s", from->what,
			       strerror(errno));
	}
	while (!r && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (!snapshot_name(de->d_name) || ++n > RT_CKPT_FILES_MAX)
			r = err_set(e, EINVAL,
				    "%s: the snapshot holds \"%.100s\": not a file kiln-vmm "
				    "writes",
				    from->what, de->d_name);
		else
			r = copy_one(dirfd(d), dst, de->d_name, from, e);
	}
	closedir(d);
	return r;
}

/* criu's inventory: the file engines stat to call a checkpoint complete
 * (Podman's restore); kiln's is a note, never parsed. */
static int inventory(int dst, struct err *e)
{
	static const char note[] = "kiln: not a criu image; this checkpoint is a kiln-vmm "
				   "snapshot (see " RT_CKPT_STATE ")\n";

	return rt_file_replace(dst, RT_CKPT_INVENTORY, note, sizeof(note) - 1, 0600,
			       "checkpoint: " RT_CKPT_INVENTORY, e);
}

int rt_ckpt_copy(int workfd, int dstfd, const struct rt_ckpt_src *from, struct err *e)
{
	int src = openat(workfd, RT_CKPT_SNAP, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	return src < 0 ? err_set(e, errno, "the snapshot: %s", strerror(errno))
		       : copy_all(src, dstfd, from, e);
}

int rt_ckpt_snapshot(const char *jail, const char *what, struct err *e)
{
	char control[RT_JAIL_PATH_MAX + 16], dir[RT_JAIL_PATH_MAX + 32];
	struct control_cmd cmd = { .op = CTL_SNAPSHOT, .dir = dir };
	struct control_reply rep;
	struct err ce = { { 0 } };
	int r;

	snprintf(control, sizeof(control), "%s/control", jail);
	snprintf(dir, sizeof(dir), "%s/" RT_CKPT_WORK "/" RT_CKPT_SNAP, jail);
	r = control_client_run(control, &cmd, SNAPSHOT_MS, &rep, &ce);
	return r < 0 ? err_set(e, -r, "%s: kiln-vmm's snapshot: %s", what, ce.msg) : 0;
}

int rt_ckpt_export(int workfd, const char *image, const struct rt_state_rec *rec,
		   const struct rt_ckpt_src *from, struct err *e)
{
	int dst, r;
	char *s;

	if (mkdir(image, 0700) < 0 && errno != EEXIST)
		return err_set(e, errno, "--image-path %.200s: %s", image, strerror(errno));
	dst = open(image, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dst < 0)
		return err_set(e, errno, "--image-path %.200s: %s", image, strerror(errno));
	r = rt_ckpt_copy(workfd, dst, from, e);
	if (!r)
		r = inventory(dst, e);
	if (!r && rt_state_encode(rec, &s, e) == 0) {
		r = rt_file_replace(dst, RT_CKPT_STATE, s, strlen(s), 0600,
				    "checkpoint: " RT_CKPT_STATE, e);
		free(s);
	} else if (!r) {
		r = -ENOMEM;
	}
	close(dst);
	return r;
}

int rt_ckpt_read(const char *image, struct rt_state_rec *rec, struct err *e)
{
	char *buf;
	size_t n;
	int r;

	memset(rec, 0, sizeof(*rec));
	r = rt_file_read_in(image, "--image-path", RT_CKPT_STATE, false, RT_STATE_FILE_MAX,
			    "restore: --image-path's " RT_CKPT_STATE, &buf, &n, e);
	if (r == -ENOENT)
		return err_set(e, ENOENT,
			       "restore: --image-path %.200s holds no kiln checkpoint (no " RT_CKPT_STATE
			       "): give the directory kiln-runtime's checkpoint wrote",
			       image);
	if (r < 0)
		return r;
	r = rt_state_decode(buf, n, rec, e);
	free(buf);
	return r;
}
