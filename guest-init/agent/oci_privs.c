/* A container process's limits, capabilities and confinement; see oci_privs.h. */
#include "guest-init/agent/oci_privs.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/capability.h>

int oci_sysctl_path(const char *key, char *out, size_t sz)
{
	static const char pre[] = "/proc/sys/";
	size_t n = strlen(key);

	if (sizeof(pre) + n > sz)
		return -1;
	memcpy(out, pre, sizeof(pre) - 1);
	for (size_t i = 0; i <= n; i++)
		out[sizeof(pre) - 1 + i] = key[i] == '.' ? '/' : key[i];
	return 0;
}

size_t oci_int_text(int v, char buf[12])
{
	char digits[11];
	unsigned u = v < 0 ? 0u - (unsigned)v : (unsigned)v;
	size_t n = 0, k = 0;

	do
		digits[n++] = (char)('0' + u % 10);
	while ((u /= 10) && n < sizeof(digits));
	if (v < 0)
		buf[k++] = '-';
	while (n)
		buf[k++] = digits[--n];
	return k;
}

int oci_set_rlimits(const struct agent_ctr_privs *pv, size_t *failed)
{
	for (size_t i = 0; i < pv->nrlimits; i++) {
		const struct agent_rlimit *l = &pv->rlimits[i];
		struct rlimit r = { .rlim_cur = l->soft, .rlim_max = l->hard };

		*failed = i;
		if (syscall(SYS_prlimit64, 0, l->resource, &r, NULL) < 0)
			return -1;
	}
	return 0;
}

/* s (n bytes) into the file at path, opened without following a link. */
static int write_file(const char *path, const char *s, size_t n)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	ssize_t w;
	int e;

	if (fd < 0)
		return -1;
	w = write(fd, s, n);
	e = errno;
	close(fd);
	if (w == (ssize_t)n)
		return 0;
	errno = w < 0 ? e : EIO;
	return -1;
}

int oci_set_oom_score(const struct agent_ctr_privs *pv)
{
	char buf[12];

	if (!pv->has_oom_score_adj)
		return 0;
	return write_file("/proc/self/oom_score_adj", buf, oci_int_text(pv->oom_score_adj, buf));
}

int oci_write_sysctls(const struct agent_sysctl *s, size_t n, size_t *failed)
{
	char path[16 + AGENT_SYSCTL_KEY_MAX];

	for (size_t i = 0; i < n; i++) {
		*failed = i;
		if (oci_sysctl_path(s[i].key, path, sizeof(path)) < 0) {
			errno = ENAMETOOLONG;
			return -1;
		}
		if (write_file(path, s[i].value, strlen(s[i].value)) < 0)
			return -1;
	}
	return 0;
}

/* runc's: bound on itself, then read-only with its submounts; a path
 * that is not there is skipped. */
int oci_readonly_paths(const char *const *paths, size_t n, size_t *failed)
{
	struct mount_attr attr = { .attr_set = MOUNT_ATTR_RDONLY };

	for (size_t i = 0; i < n; i++) {
		*failed = i;
		if (mount(paths[i], paths[i], NULL, MS_BIND | MS_REC, NULL) < 0) {
			if (errno == ENOENT)
				continue;
			return -1;
		}
		if (syscall(SYS_mount_setattr, AT_FDCWD, paths[i], AT_RECURSIVE, &attr,
			    sizeof(attr)) < 0)
			return -1;
	}
	return 0;
}

/* runc's: /dev/null bound over a file, an empty read-only tmpfs over a
 * directory; a path that is not there is skipped. */
int oci_mask_paths(const char *const *paths, size_t n, size_t *failed)
{
	for (size_t i = 0; i < n; i++) {
		struct stat st;
		int r;

		*failed = i;
		if (stat(paths[i], &st) < 0) {
			if (errno == ENOENT)
				continue;
			return -1;
		}
		if (S_ISDIR(st.st_mode))
			r = mount("tmpfs", paths[i], "tmpfs",
				  MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
		else
			r = mount("/dev/null", paths[i], NULL, MS_BIND, NULL);
		if (r < 0)
			return -1;
	}
	return 0;
}

int oci_caps_bound(const struct agent_ctr_privs *pv)
{
	if (!pv->has_caps)
		return 0;
	for (int cap = 0; cap < 64; cap++) {
		if (pv->caps[AGENT_CAP_BOUNDING] & (1ull << cap))
			continue;
		/* EINVAL: past the kernel's last capability, none above it */
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0) {
			if (errno == EINVAL)
				break;
			return -1;
		}
	}
	return prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0);
}

int oci_caps_set(const struct agent_ctr_privs *pv)
{
	const uint64_t *c = pv->caps;
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];

	if (!pv->has_caps)
		return 0;
	for (int i = 0; i < 2; i++)
		d[i] = (struct __user_cap_data_struct){
			.effective = (uint32_t)(c[AGENT_CAP_EFFECTIVE] >> (32 * i)),
			.permitted = (uint32_t)(c[AGENT_CAP_PERMITTED] >> (32 * i)),
			.inheritable = (uint32_t)(c[AGENT_CAP_INHERITABLE] >> (32 * i)),
		};
	if (prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0) < 0 || syscall(SYS_capset, &h, d) < 0 ||
	    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0)
		return -1;
	for (int cap = 0; cap < 64; cap++)
		if ((c[AGENT_CAP_AMBIENT] & (1ull << cap)) &&
		    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, cap, 0, 0) < 0)
			return -1;
	return 0;
}

int oci_no_new_privs(const struct agent_ctr_privs *pv)
{
	return pv->no_new_privileges ? prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) : 0;
}
