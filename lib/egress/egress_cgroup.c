/* Egress programs on a cgroup through bpf(2); see egress_cgroup.h. */
#include "lib/egress/egress_cgroup.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/bpf.h>

#include "lib/egress/egress_prog.h"

/* The hooks: every way a socket of the cgroup names a destination. */
static const struct hook {
	enum bpf_attach_type type;
	bool v6;
	const char *name; /* EGRESS_PROG_NAME + a suffix */
} hooks[] = {
	{ BPF_CGROUP_INET4_CONNECT, false, EGRESS_PROG_NAME "_c4" },
	{ BPF_CGROUP_INET6_CONNECT, true, EGRESS_PROG_NAME "_c6" },
	{ BPF_CGROUP_UDP4_SENDMSG, false, EGRESS_PROG_NAME "_s4" },
	{ BPF_CGROUP_UDP6_SENDMSG, true, EGRESS_PROG_NAME "_s6" },
};
#define N_HOOKS (sizeof(hooks) / sizeof(hooks[0]))
/* Programs of one hook on one cgroup we look at when replacing ours. */
#define QUERY_MAX 64
#define LOG_SIZE 4096

static int sys_bpf(int cmd, union bpf_attr *a)
{
	long r = syscall(SYS_bpf, cmd, a, sizeof(*a));

	return r < 0 ? -errno : (int)r;
}

/* Load one program; its descriptor, or -errno with the verifier's first words in e. */
static int load(const struct bpf_insn *insns, int n, const struct hook *h, struct err *e)
{
	static const char license[] = "Apache-2.0";
	char *log = calloc(1, LOG_SIZE);
	union bpf_attr a;
	int fd;

	memset(&a, 0, sizeof(a));
	a.prog_type = BPF_PROG_TYPE_CGROUP_SOCK_ADDR;
	a.expected_attach_type = h->type;
	a.insns = (uint64_t)(uintptr_t)insns;
	a.insn_cnt = (uint32_t)n;
	a.license = (uint64_t)(uintptr_t)license;
	snprintf(a.prog_name, sizeof(a.prog_name), "%s", h->name);
	if (log) {
		a.log_buf = (uint64_t)(uintptr_t)log;
		a.log_size = LOG_SIZE;
		a.log_level = 1;
	}
	fd = sys_bpf(BPF_PROG_LOAD, &a);
	if (fd == -ENOSPC && log) {
		/* Only the log overflowed: load again without it. */
		a.log_buf = 0;
		a.log_size = 0;
		a.log_level = 0;
		fd = sys_bpf(BPF_PROG_LOAD, &a);
	}
	if (fd < 0) {
		char *nl = log ? strchr(log, '\n') : NULL;

		if (nl)
			*nl = '\0';
		err_set(e, -fd, "egress: the kernel refused the %s program: %s%s%s%.200s%s",
			h->name, strerror(-fd),
			fd == -EPERM ? " (it needs root: CAP_BPF and CAP_NET_ADMIN)" : "",
			log && log[0] ? " (verifier: " : "", log ? log : "",
			log && log[0] ? ")" : "");
	}
	free(log);
	return fd;
}

/* The program `id` is one of ours: its name says so. */
static bool is_ours(uint32_t id)
{
	struct bpf_prog_info info;
	union bpf_attr a;
	bool ours = false;
	int fd;

	memset(&a, 0, sizeof(a));
	a.prog_id = id;
	fd = sys_bpf(BPF_PROG_GET_FD_BY_ID, &a);
	if (fd < 0)
		return false;
	memset(&info, 0, sizeof(info));
	memset(&a, 0, sizeof(a));
	a.info.bpf_fd = (uint32_t)fd;
	a.info.info_len = sizeof(info);
	a.info.info = (uint64_t)(uintptr_t)&info;
	if (sys_bpf(BPF_OBJ_GET_INFO_BY_FD, &a) == 0)
		ours = strncmp(info.name, EGRESS_PROG_NAME, strlen(EGRESS_PROG_NAME)) == 0;
	close(fd);
	return ours;
}

/* Detach the kiln programs of hook h from the cgroup, but `keep` (an id, or 0). 0 or -errno. */
static int detach_ours(int cgroup, const struct hook *h, uint32_t keep, struct err *e)
{
	uint32_t ids[QUERY_MAX];
	union bpf_attr a;
	int r;

	memset(&a, 0, sizeof(a));
	a.query.target_fd = (uint32_t)cgroup;
	a.query.attach_type = h->type;
	a.query.prog_ids = (uint64_t)(uintptr_t)ids;
	a.query.prog_cnt = QUERY_MAX;
	if ((r = sys_bpf(BPF_PROG_QUERY, &a)) < 0)
		return err_set(e, -r, "egress: cannot list the cgroup's %s programs: %s", h->name,
			       strerror(-r));
	for (uint32_t i = 0; i < a.query.prog_cnt && i < QUERY_MAX; i++) {
		union bpf_attr d;
		int fd;

		if (ids[i] == keep || !is_ours(ids[i]))
			continue;
		memset(&d, 0, sizeof(d));
		d.prog_id = ids[i];
		fd = sys_bpf(BPF_PROG_GET_FD_BY_ID, &d);
		if (fd < 0)
			continue; /* gone meanwhile */
		memset(&d, 0, sizeof(d));
		d.target_fd = (uint32_t)cgroup;
		d.attach_bpf_fd = (uint32_t)fd;
		d.attach_type = h->type;
		r = sys_bpf(BPF_PROG_DETACH, &d);
		close(fd);
		if (r < 0 && r != -ENOENT)
			return err_set(e, -r, "egress: cannot detach an earlier %s program: %s",
				       h->name, strerror(-r));
	}
	return 0;
}

static uint32_t prog_id(int fd)
{
	struct bpf_prog_info info;
	union bpf_attr a;

	memset(&info, 0, sizeof(info));
	memset(&a, 0, sizeof(a));
	a.info.bpf_fd = (uint32_t)fd;
	a.info.info_len = sizeof(info);
	a.info.info = (uint64_t)(uintptr_t)&info;
	return sys_bpf(BPF_OBJ_GET_INFO_BY_FD, &a) == 0 ? info.id : 0;
}

/* Load, attach and swap in one hook's program. */
static int apply_hook(int cgroup, const struct hook *h, const struct egress_policy *p,
		      struct bpf_insn *insns, struct err *e)
{
	union bpf_attr a;
	int n, fd, r;

	n = egress_prog_build(p, h->v6, insns);
	if (n < 0)
		return err_set(
			e, -n,
			"egress: the table of %zu entries does not fit one program (egress_prog.h); use fewer rules",
			p->n);
	fd = load(insns, n, h, e);
	if (fd < 0)
		return fd;
	memset(&a, 0, sizeof(a));
	a.target_fd = (uint32_t)cgroup;
	a.attach_bpf_fd = (uint32_t)fd;
	a.attach_type = h->type;
	a.attach_flags = BPF_F_ALLOW_MULTI;
	r = sys_bpf(BPF_PROG_ATTACH, &a);
	if (r < 0) {
		close(fd);
		return err_set(e, -r,
			       "egress: cannot attach the %s program to the sandbox's cgroup: %s",
			       h->name, strerror(-r));
	}
	r = detach_ours(cgroup, h, prog_id(fd), e);
	close(fd); /* the attachment holds the program now */
	return r;
}

int egress_cgroup_apply(int cgroup, const struct egress_policy *p, struct err *e)
{
	struct bpf_insn *insns = calloc(EGRESS_INSNS_MAX(p->n), sizeof(*insns));
	int r = 0;

	if (!insns)
		return err_set(e, ENOMEM, "egress: out of memory");
	for (size_t i = 0; i < N_HOOKS && r == 0; i++)
		r = apply_hook(cgroup, &hooks[i], p, insns, e);
	free(insns);
	return r;
}

bool egress_cgroup_holds(int cgroup)
{
	uint32_t ids[QUERY_MAX];
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.query.target_fd = (uint32_t)cgroup;
	a.query.attach_type = BPF_CGROUP_INET4_CONNECT;
	a.query.query_flags = BPF_F_QUERY_EFFECTIVE;
	a.query.prog_ids = (uint64_t)(uintptr_t)ids;
	a.query.prog_cnt = QUERY_MAX;
	if (sys_bpf(BPF_PROG_QUERY, &a) < 0)
		return false;
	for (uint32_t i = 0; i < a.query.prog_cnt && i < QUERY_MAX; i++)
		if (is_ours(ids[i]))
			return true;
	return false;
}

int egress_cgroup_clear(int cgroup, struct err *e)
{
	for (size_t i = 0; i < N_HOOKS; i++) {
		int r = detach_ours(cgroup, &hooks[i], 0, e);

		if (r)
			return r;
	}
	return 0;
}

int egress_cgroup_probe(struct err *e)
{
	/* An empty table that allows everything: the smallest program the kernel must take. */
	struct egress_policy p = { .default_allow = true };
	struct bpf_insn insns[EGRESS_INSNS_FIXED];
	int n = egress_prog_build(&p, false, insns), fd;

	fd = load(insns, n, &hooks[0], e);
	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}
