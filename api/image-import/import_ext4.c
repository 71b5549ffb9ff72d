/* Tree to bootable ext4; see import_ext4.h. */
#include "api/image-import/import_ext4.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "api/image-import/oci_path.h"
#include "lib/base/fd_io.h"

/* Make dir unless something is there already (an image's own /tmp, or a
 * symlink it chose, stays). */
static int ensure_dir(struct import_tree *t, const char *path, uid_t uid, mode_t mode,
		      struct err *e)
{
	struct import_attr a = {
		.uid = uid, .gid = uid, .mode = S_IFDIR | mode, .mtime = IMPORT_NO_MTIME
	};
	struct stat st;

	if (fstatat(t->root, path, &st, AT_SYMLINK_NOFOLLOW) == 0)
		return 0;
	return tree_mkdir(t, path, &a, e);
}

/* Where sbin/kiln-init goes: sbin, or the directory a top-level sbin
 * symlink names (merged /usr: sbin -> usr/sbin), when that is inside. */
static int sbin_dir(struct import_tree *t, char *dir, struct err *e)
{
	char target[OCI_PATH_MAX + 1];
	/* kiln-init is written into it: its mtime is now's */
	const struct import_attr a = { .mode = S_IFDIR | 0755, .mtime = IMPORT_NO_MTIME };

	if (tree_readlink(t, "sbin", target, sizeof(target)) < 0) {
		snprintf(dir, OCI_PATH_MAX + 1, "sbin");
		return ensure_dir(t, "sbin", 0, 0755, e);
	}
	if (oci_path_clean(target[0] == '/' ? target + 1 : target, dir, e) < 0 || !dir[0])
		return err_set(
			e, EINVAL,
			"/sbin is a symlink to '%.200s', which kiln-init cannot be installed through",
			target);
	return tree_mkdir(t, dir, &a, e);
}

int import_inject_init(struct import_tree *t, int init_fd, struct err *e)
{
	static const struct {
		const char *path;
		uid_t uid;
		mode_t mode;
	} dirs[] = {
		{ "proc", 0, 0555 }, { "sys", 0, 0555 },          { "dev", 0, 0755 },
		{ "run", 0, 0755 },  { "tmp", 0, 01777 },         { "root", 0, 0700 },
		{ "home", 0, 0755 }, { "home/user", 1000, 0755 }, { "workspace", 1000, 0755 },
		{ "etc", 0, 0755 },
	};
	const struct import_attr exe = { .mode = S_IFREG | 0755 }, lnk = { .mode = S_IFLNK | 0777 };
	char dir[OCI_PATH_MAX + 1], path[OCI_PATH_MAX + 16];
	char buf[1u << 16];
	struct err why;
	int fd, r;
	ssize_t n;

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		if ((r = ensure_dir(t, dirs[i].path, dirs[i].uid, dirs[i].mode, &why)) < 0)
			return err_set(e, -r, "/%s: %s", dirs[i].path, why.msg);
	if ((r = sbin_dir(t, dir, e)) < 0)
		return r;
	snprintf(path, sizeof(path), "%s/kiln-init", dir);
	if ((r = tree_file_open(t, path, &exe, &fd, e)) < 0)
		return r;
	if (lseek(init_fd, 0, SEEK_SET) < 0) {
		close(fd);
		return err_set(e, errno, "kiln-init: %s", strerror(errno));
	}
	while ((n = read(init_fd, buf, sizeof(buf))) > 0)
		if ((r = fd_io_write_all(fd, buf, (size_t)n)) < 0)
			break;
	if (n < 0 || r < 0) {
		close(fd);
		return err_set(e, EIO, "copying kiln-init failed");
	}
	if ((r = tree_file_done(t, fd, 2u << 20, e)) < 0)
		return r;
	/* exactly as rootfs/build-minimal: /init and /sbin/init name it */
	if ((r = tree_symlink(t, "init", "/sbin/kiln-init", &lnk, e)) < 0)
		return r;
	snprintf(path, sizeof(path), "%s/init", dir);
	return tree_symlink(t, path, "/sbin/kiln-init", &lnk, e);
}

uint64_t import_image_bytes(const struct import_tree *t)
{
	uint64_t b = (t->bytes + t->entries * 4096) / 4 * 5 + ((uint64_t)IMPORT_HEADROOM_MIB << 20);

	return (b + (1u << 20) - 1) & ~(uint64_t)((1u << 20) - 1);
}

static int run(char *const argv[], struct err *e)
{
	int st, devnull;
	pid_t pid = fork();

	if (pid < 0)
		return err_set(e, errno, "fork: %s", strerror(errno));
	if (pid == 0) {
		devnull = open("/dev/null", O_RDWR);
		if (devnull >= 0) {
			dup2(devnull, 0);
			dup2(devnull, 1);
			dup2(devnull, 2);
		}
		execvp(argv[0], argv);
		_exit(127);
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return err_set(e, errno, "waitpid: %s", strerror(errno));
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return err_set(e, EIO,
			       "%s failed (%s %d): is e2fsprogs installed (scripts/install-deps)?",
			       argv[0], WIFEXITED(st) ? "exit" : "signal",
			       WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
	return 0;
}

int import_make_ext4(const char *stage_dir, const char *script, const char *out, uint64_t bytes,
		     uint64_t inodes, struct err *e)
{
	char n[32];
	int fd = open(out, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644), r;

	if (fd < 0)
		return err_set(e, errno, "create '%s': %s", out, strerror(errno));
	r = ftruncate(fd, (off_t)bytes);
	close(fd);
	if (r < 0)
		return err_set(e, errno, "size '%s' to %llu bytes: %s", out,
			       (unsigned long long)bytes, strerror(errno));
	snprintf(n, sizeof(n), "%llu", (unsigned long long)inodes);
	if ((r = run((char *const[]){ "mkfs.ext4", "-q", "-F", "-b", "4096", "-N", n, "-L", "kiln",
				      "-d", (char *)stage_dir, (char *)out, NULL },
		     e)) < 0)
		return r;
	return run((char *const[]){ "debugfs", "-w", "-f", (char *)script, (char *)out, NULL }, e);
}
