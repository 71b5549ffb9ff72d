/* The calling process's cgroup v2 directory; see cgroup_self.h. */
#include "lib/base/cgroup_self.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

int cgroup_self_dir(char *dir, size_t cap)
{
	char line[PATH_MAX + 256], mnt[PATH_MAX] = "", own[PATH_MAX] = "";
	FILE *f = fopen("/proc/self/mountinfo", "re");

	while (f && !mnt[0] && fgets(line, sizeof(line), f))
		if (strstr(line, " - cgroup2 ") && sscanf(line, "%*s %*s %*s %*s %4095s", mnt) != 1)
			mnt[0] = '\0';
	if (f)
		fclose(f);
	f = fopen("/proc/self/cgroup", "re");
	while (f && !own[0] && fgets(line, sizeof(line), f))
		if (strncmp(line, "0::/", 4) == 0) {
			size_t n = strcspn(line + 3, "\n");

			if (n < sizeof(own)) {
				memcpy(own, line + 3, n);
				own[n] = '\0';
			}
		}
	if (f)
		fclose(f);
	if (!mnt[0] || !own[0])
		return -ENOENT;
	/* A path in /proc/self/cgroup is never "..", but it is the kernel's text: say no to odd ones. */
	if (strstr(own, "/..") || strstr(own, "\n"))
		return -EINVAL;
	if ((size_t)snprintf(dir, cap, "%s%s", mnt, strcmp(own, "/") ? own : "") >= cap)
		return -ENAMETOOLONG;
	return 0;
}
