/* The image importer's namespaces; see import_ns.h. */
#include "api/kilnd/images/import_ns.h"

#include <errno.h>
#include <sched.h>
#include <stddef.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static const char *const import_hidden[] = { "/tmp", "/var/tmp", "/dev/shm", "/run" };

int confine_ns_enter(const struct confine_ns *ns, const char **step)
{
	*step = "unshare (namespaces)";
	if (unshare(CLONE_NEWNS | ns->clone_flags) < 0)
		return -errno;
	/* nothing mounted here propagates back to the host */
	*step = "make every mount private";
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return -errno;
	for (size_t i = 0; i < ns->nhidden; i++) {
		*step = ns->hidden[i];
		if (mount("tmpfs", ns->hidden[i], "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
			  IMPORT_NS_TMPFS_SIZE ",mode=1777") < 0 &&
		    errno != ENOENT)
			return -errno;
	}
	/* The working directory, also when a mount above now hides its path,
	 * bound beneath a new tmpfs and entered there: ".." leads into that
	 * tmpfs, not to the host's directories around the work dir. */
	*step = ns->work;
	if ((mkdir(ns->work, 0700) < 0 && errno != EEXIST) ||
	    mount(".", ns->work, NULL, MS_BIND, NULL) < 0 || chdir(ns->work) < 0)
		return -errno;
	*step = NULL;
	return 0;
}

int import_ns_enter(const char **step)
{
	static const struct confine_ns ns = { CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS,
					      import_hidden,
					      sizeof(import_hidden) / sizeof(import_hidden[0]),
					      IMPORT_NS_WORK };

	return confine_ns_enter(&ns, step);
}

int import_ns_drop(uid_t id)
{
	if (syscall(SYS_setgroups, 0, NULL) < 0 || syscall(SYS_setresgid, id, id, id) < 0 ||
	    syscall(SYS_setresuid, id, id, id) < 0)
		return -errno;
	return 0;
}
