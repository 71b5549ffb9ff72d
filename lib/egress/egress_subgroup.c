/* A cgroup with the default egress table for passt; see egress_subgroup.h. */
#include "lib/egress/egress_subgroup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/base/cgroup_self.h"
#include "lib/base/num_parse.h"
#include "lib/egress/egress_cgroup.h"
#include "lib/netrules/net_host_addrs.h"

#define PREFIX "kiln-passt-"

int egress_host_resolver(struct net_addr *out)
{
	FILE *f = fopen("/etc/resolv.conf", "re");
	char line[256], word[64];
	int r = -ENOENT;

	while (f && r && fgets(line, sizeof(line), f))
		if (sscanf(line, " nameserver %63s", word) == 1 && net_addr_parse(word, out) == 0 &&
		    out->family == NET_AF4)
			r = 0;
	if (f)
		fclose(f);
	return r;
}

/*
 * This process's pid as /proc (the host's, until the jail) names it: a
 * standalone `kiln-vmm --jail` creates its VM as pid 1 of a pid namespace
 * of its own, where getpid() would give every such kiln-vmm the same name.
 */
static long proc_pid(void)
{
	char link[32];
	ssize_t n = readlink("/proc/self", link, sizeof(link) - 1);
	uint64_t pid;

	if (n <= 0)
		return getpid();
	link[n] = '\0';
	return num_parse_u64(link, 10, 1, INT_MAX, &pid) ? getpid() : (long)pid;
}

/* Remove the empty kiln-passt-<pid> cgroups of kiln-vmms that are gone. */
static void prune(int dirfd)
{
	int fd = dup(dirfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(d))) {
		char proc[32];
		uint64_t pid;

		if (strncmp(de->d_name, PREFIX, strlen(PREFIX)) ||
		    num_parse_u64(de->d_name + strlen(PREFIX), 10, 1, INT_MAX, &pid))
			continue;
		/* Through /proc, as the name was made; a live one may be
		 * someone else's pid now: left for a later start. */
		snprintf(proc, sizeof(proc), "/proc/%llu", (unsigned long long)pid);
		if (access(proc, F_OK) < 0 && errno == ENOENT)
			unlinkat(dirfd, de->d_name, AT_REMOVEDIR); /* only empty cgroups go */
	}
	closedir(d);
}

/* The default table (egress_subgroup.h) on the cgroup dirfd/name, and its cgroup.procs opened. */
static int attach(int dirfd, const char *name, const struct net_addr *resolver, int *procs_fd,
		  struct err *e)
{
	struct net_addr *host = NULL, res;
	struct egress_policy p;
	char procs[64];
	size_t n = 0;
	int cg, r;

	if (!resolver && egress_host_resolver(&res) == 0)
		resolver = &res;
	if ((r = net_host_addrs(&host, &n, e)))
		return r;
	r = egress_policy_build(NULL, host, n, resolver, &p, e);
	free(host);
	if (r)
		return r;
	cg = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cg < 0)
		r = err_set(e, errno, "egress: cannot open the cgroup %s made for passt: %s", name,
			    strerror(errno));
	else
		r = egress_cgroup_apply(cg, &p, e);
	egress_policy_free(&p);
	if (!r) {
		snprintf(procs, sizeof(procs), "%s/cgroup.procs", name);
		*procs_fd = openat(dirfd, procs, O_WRONLY | O_CLOEXEC);
		if (*procs_fd < 0)
			r = err_set(e, errno, "egress: cannot open %s: %s", procs, strerror(errno));
	}
	if (cg >= 0)
		close(cg);
	return r;
}

int egress_subgroup_open(const struct net_addr *resolver, int *procs_fd, struct err *e)
{
	char dir[PATH_MAX], name[32];
	int dirfd, r;

	*procs_fd = -1;
	e->msg[0] = '\0';
	if (geteuid() != 0)
		return err_set(e, 0, "not root"), 0;
	if (cgroup_self_dir(dir, sizeof(dir)))
		return err_set(e, 0, "no cgroup v2 file system mounted"), 0;
	dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return err_set(e, 0, "cannot open its cgroup %s: %s", dir, strerror(errno)), 0;
	if (egress_cgroup_holds(dirfd)) {
		close(dirfd);
		return 0; /* kilnd's, on the sandbox's cgroup */
	}
	if (egress_cgroup_probe(e)) {
		close(dirfd);
		return 0;
	}
	prune(dirfd);
	snprintf(name, sizeof(name), PREFIX "%ld", proc_pid());
	/* Like no cgroup v2 at all (a read-only cgroupfs in a container): said, not fatal. */
	if (mkdirat(dirfd, name, 0755) < 0 && errno != EEXIST) {
		err_set(e, 0, "cannot make a cgroup for passt in %s: %s", dir, strerror(errno));
		close(dirfd);
		return 0;
	}
	r = attach(dirfd, name, resolver, procs_fd, e);
	if (r)
		unlinkat(dirfd, name, AT_REMOVEDIR);
	close(dirfd);
	return r ? r : 1;
}
