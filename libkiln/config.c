/*
 * config: kiln_vm_config, the public builder of a vm_config
 * (include/kiln/vm.h). Device strings are parsed by vmm/core/devspec.c,
 * so kiln-vmm's options and this API accept the same things with the
 * same messages.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#include "libkiln/handles.h"
#include "lib/netrules/net_rules.h"

_Static_assert(KILN_VM_FIREWALL_MAX == NET_RULES_TEXT_MAX, "the public limit is the parser's");

char *strs_add(struct strs *o, const char *s, size_t len)
{
	char *c;

	if (!s)
		return NULL;
	if (o->n == o->cap) {
		size_t cap = o->cap ? o->cap * 2 : 16;
		char **v = realloc(o->v, cap * sizeof(*v));

		if (!v)
			return NULL;
		o->v = v;
		o->cap = cap;
	}
	c = malloc(len + 1);
	if (!c)
		return NULL;
	memcpy(c, s, len);
	c[len] = '\0';
	o->v[o->n++] = c;
	return c;
}

void strs_free(struct strs *o)
{
	for (size_t i = 0; i < o->n; i++)
		free(o->v[i]);
	free(o->v);
	memset(o, 0, sizeof(*o));
}

int handle_err(char *buf, int rc, const struct err *e)
{
	snprintf(buf, ERR_MSG_MAX, "%s", e->msg[0] ? e->msg : strerror(-rc));
	return rc;
}

/* Copy *p into o (NULL stays NULL); 0 or -ENOMEM. */
static int own(struct strs *o, char **p)
{
	if (*p && !(*p = strs_add(o, *p, strlen(*p))))
		return -ENOMEM;
	return 0;
}

static int own_c(struct strs *o, const char **p)
{
	char *s = (char *)*p;
	int r = own(o, &s);

	*p = s;
	return r;
}

int config_clone(const struct vm_config *src, struct vm_config *dst, struct strs *o)
{
	int r = 0;

	*dst = *src;
	r |= own_c(o, &dst->kernel);
	r |= own_c(o, &dst->initrd);
	r |= own_c(o, &dst->cmdline);
	r |= own_c(o, &dst->restore_dir);
	for (int i = 0; i < dst->ndisk; i++) {
		r |= own(o, &dst->disk[i].path);
		r |= own(o, &dst->disk[i].overlay);
		r |= own(o, &dst->disk[i].serial);
	}
	for (int i = 0; i < dst->nshare; i++) {
		r |= own(o, &dst->share[i].host_dir);
		r |= own(o, &dst->share[i].remote);
		r |= own(o, &dst->share[i].tag);
	}
	for (int i = 0; i < dst->nnet; i++) {
		r |= own(o, &dst->net[i].tap);
		r |= own(o, &dst->net[i].mac);
		r |= own(o, &dst->net[i].ip);
		r |= own(o, &dst->net[i].gw);
		r |= own(o, &dst->net[i].dns);
		r |= own(o, &dst->net[i].resolver);
	}
	r |= own(o, &dst->vsock.uds);
	r |= own_c(o, &dst->egress_proxy);
	if (src->firewall && !(dst->firewall = strs_add(o, src->firewall, src->firewall_len)))
		r = -ENOMEM;
	return r ? -ENOMEM : 0;
}

int config_fail(kiln_vm_config *cfg, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cfg->err, sizeof(cfg->err), fmt, ap);
	va_end(ap);
	return -code;
}

kiln_vm_config *kiln_vm_config_new(void)
{
	kiln_vm_config *cfg = calloc(1, sizeof(*cfg));

	if (!cfg)
		return NULL;
	cfg->c.mem_mib = 128;
	cfg->c.cpus = 1;
	cfg->c.console_in_fd = cfg->c.console_out_fd = -1;
	cfg->c.log_fd = -1;
	cfg->c.rng = 1;
	cfg->c.kick_signal = SIGUSR1;
	return cfg;
}

void kiln_vm_config_free(kiln_vm_config *cfg)
{
	if (!cfg)
		return;
	vm_kvm_prep_free(cfg->c.prep);
	strs_free(&cfg->owned);
	free(cfg);
}

const char *kiln_vm_config_errmsg(const kiln_vm_config *cfg)
{
	return cfg->err;
}

/* Set *field to a copy of s (NULL: unset). */
static int set_str(kiln_vm_config *cfg, const char **field, const char *s)
{
	char *c = NULL;

	if (s && !(c = strs_add(&cfg->owned, s, strlen(s))))
		return config_fail(cfg, ENOMEM, "out of memory");
	*field = c;
	return 0;
}

int kiln_vm_config_set_kernel(kiln_vm_config *cfg, const char *path)
{
	return set_str(cfg, &cfg->c.kernel, path);
}

int kiln_vm_config_set_initrd(kiln_vm_config *cfg, const char *path)
{
	return set_str(cfg, &cfg->c.initrd, path);
}

int kiln_vm_config_set_cmdline(kiln_vm_config *cfg, const char *extra)
{
	return set_str(cfg, &cfg->c.cmdline, extra);
}

/* Memory and CPUs are checked at create (vm.c check_config), with the
 * host's limits and kiln-vmm's messages. */
int kiln_vm_config_set_memory(kiln_vm_config *cfg, uint64_t mib)
{
	cfg->c.mem_mib = mib;
	return 0;
}

int kiln_vm_config_set_cpus(kiln_vm_config *cfg, unsigned cpus)
{
	cfg->c.cpus = cpus > 4096 ? 4096 : (int)cpus;
	return 0;
}

int kiln_vm_config_set_hugepages(kiln_vm_config *cfg, int on)
{
	cfg->c.hugepages = !!on;
	return 0;
}

int kiln_vm_config_set_console(kiln_vm_config *cfg, int in_fd, int out_fd)
{
	if (in_fd < -1 || out_fd < -1)
		return config_fail(cfg, EBADF, "console: bad file descriptor");
	cfg->c.console_in_fd = in_fd;
	cfg->c.console_out_fd = out_fd;
	return 0;
}

int kiln_vm_config_set_rng(kiln_vm_config *cfg, int on)
{
	cfg->c.rng = !!on;
	return 0;
}

int kiln_vm_config_set_kick_signal(kiln_vm_config *cfg, int signo)
{
	if (signo <= 0 || signo >= NSIG || signo == SIGKILL || signo == SIGSTOP ||
	    signo == SIGPIPE || signo == SIGCHLD)
		return config_fail(cfg, EINVAL, "kick signal: not a signal libkiln can use");
	cfg->c.kick_signal = signo;
	return 0;
}

int kiln_vm_config_set_seccomp(kiln_vm_config *cfg, enum kiln_seccomp_mode mode)
{
	if (mode != KILN_SECCOMP_KILL && mode != KILN_SECCOMP_LOG && mode != KILN_SECCOMP_OFF)
		return config_fail(cfg, EINVAL, "seccomp: mode %d is none of kill, log, off",
				   (int)mode);
	cfg->seccomp = mode;
	return 0;
}

int kiln_vm_config_set_time_origin(kiln_vm_config *cfg, uint64_t monotonic_ns)
{
	cfg->c.t0_ns = monotonic_ns;
	return 0;
}

int kiln_vm_prepare(kiln_vm_prepared **out, char *msg, size_t cap)
{
	struct vm_kvm_prep *p;
	struct err e = { { 0 } };
	int r = vm_kvm_prepare(&p, &e);

	*out = r < 0 ? NULL : (kiln_vm_prepared *)p;
	if (r < 0 && msg && cap)
		snprintf(msg, cap, "%s", e.msg);
	return r;
}

int kiln_vm_config_set_prepared(kiln_vm_config *cfg, kiln_vm_prepared *p)
{
	if (cfg->c.prep == (struct vm_kvm_prep *)p)
		return 0;
	vm_kvm_prep_free(cfg->c.prep);
	cfg->c.prep = (struct vm_kvm_prep *)p;
	return 0;
}

void kiln_vm_prepared_free(kiln_vm_prepared *p)
{
	vm_kvm_prep_free((struct vm_kvm_prep *)p);
}

int kiln_vm_prepared_fds(const kiln_vm_prepared *p, int *fds, int cap)
{
	const struct vm_kvm_prep *k = (const struct vm_kvm_prep *)p;

	if (cap < 2)
		return -ENOSPC;
	fds[0] = k->kvm_fd;
	fds[1] = k->vm_fd;
	return 2;
}

int kiln_vm_config_set_log(kiln_vm_config *cfg, int fd, unsigned flags)
{
	if (fd < -1)
		return config_fail(cfg, EBADF, "log: bad file descriptor");
	if (fd < 0)
		flags = 0;
	cfg->c.log_fd = fd;
	cfg->c.firewall_log = !!(flags & KILN_LOG_FIREWALL);
	cfg->c.verbose = !!(flags & KILN_LOG_UNHANDLED);
	cfg->c.device_log = !!(flags & KILN_LOG_DEVICE);
	return 0;
}

int kiln_vm_config_set_firewall(kiln_vm_config *cfg, const char *json, size_t len)
{
	struct net_rules_err re = { 0 };
	struct net_rules *rules = NULL;
	char *copy;

	if (!json) {
		cfg->c.firewall = NULL;
		cfg->c.firewall_len = 0;
		cfg->firewall_http = 0;
		return 0;
	}
	if (len > NET_RULES_TEXT_MAX)
		return config_fail(cfg, EFBIG, "firewall: a rule set is at most %d bytes",
				   KILN_VM_FIREWALL_MAX);
	if (net_rules_parse_text(json, len, &rules, &re) < 0)
		return config_fail(cfg, EINVAL, "%s", re.msg);
	cfg->firewall_http = rules->http != NULL;
	net_rules_free(rules);
	if (!(copy = strs_add(&cfg->owned, json, len)))
		return config_fail(cfg, ENOMEM, "out of memory");
	cfg->c.firewall = copy;
	cfg->c.firewall_len = len;
	return 0;
}

int kiln_vm_config_set_egress_proxy(kiln_vm_config *cfg, const char *path)
{
	char *copy;

	if (!path) {
		cfg->c.egress_proxy = NULL;
		return 0;
	}
	if (!path[0] || strlen(path) >= sizeof(((struct sockaddr_un *)0)->sun_path))
		return config_fail(cfg, ENAMETOOLONG,
				   "egress-proxy '%s': not a Unix socket path (1 to %zu bytes)",
				   path, sizeof(((struct sockaddr_un *)0)->sun_path) - 1);
	if (!(copy = strs_add(&cfg->owned, path, strlen(path))))
		return config_fail(cfg, ENOMEM, "out of memory");
	cfg->c.egress_proxy = copy;
	return 0;
}

int kiln_vm_config_needs_egress_proxy(const kiln_vm_config *cfg)
{
	return cfg->firewall_http && !cfg->c.egress_proxy;
}
