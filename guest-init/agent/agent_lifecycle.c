/*
 * The guest as a whole (docs/agent-protocol.md, sections 7.1, 7.2, 7.6):
 * ping, info, configure, sync_clock, shutdown.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/random.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "guest-init/agent/agent_serve.h"
#include "guest-init/sys/netconf.h"
#include "guest-init/sys/trust_ca.h"

void agent_serve_ping(struct agent *a, struct agent_conn *c, struct agent_msg *m)
{
	struct agent_line l;

	(void)a;
	(void)m;
	agent_conn_send_line(c, &l, agent_line_pong(&l));
}

/* MemTotal and MemAvailable in bytes; zeros when /proc is not mounted. */
static void meminfo(uint64_t *total, uint64_t *avail)
{
	FILE *f = fopen("/proc/meminfo", "re");
	char line[128];
	unsigned long long kb;

	*total = *avail = 0;
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "MemTotal: %llu kB", &kb) == 1)
			*total = (uint64_t)kb * 1024;
		else if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
			*avail = (uint64_t)kb * 1024;
	}
	fclose(f);
}

void agent_serve_info(struct agent *a, struct agent_conn *c, struct agent_msg *m)
{
	struct agent_info info = { 0 };
	struct utsname u;
	char host[HOST_NAME_MAX + 1] = "";
	struct timespec ts;
	struct agent_line l;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	(void)m;
	if (uname(&u) == 0)
		info.kernel = u.release;
	if (gethostname(host, sizeof(host) - 1) == 0)
		info.hostname = host;
	info.cpus = cpus > 0 ? (uint32_t)cpus : 1;
	meminfo(&info.mem_total, &info.mem_available);
	clock_gettime(CLOCK_BOOTTIME, &ts);
	info.uptime_ms = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
	clock_gettime(CLOCK_REALTIME, &ts);
	info.time_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	info.processes = agent_procs_running(&a->procs);
	agent_conn_send_line(c, &l, agent_line_info(&l, &info));
}

void agent_serve_configure(struct agent *a, struct agent_conn *c, struct agent_msg *m)
{
	struct agent_err err;

	/* Serialised: two configures at once must not interleave their
	 * writes of one bundle. */
	pthread_mutex_lock(&a->trust_lock);
	if (netconf_apply(&m->u.conf, a->resolv_conf, &err) < 0 ||
	    (m->u.conf.trust_ca && trust_ca_apply(a->trust_root, m->u.conf.trust_ca, &err) < 0)) {
		pthread_mutex_unlock(&a->trust_lock);
		agent_conn_send_err(c, &err);
		return;
	}
	pthread_mutex_unlock(&a->trust_lock);
	agent_reply_ok(c);
}

/*
 * Mix host-given bytes into the kernel's pool, credit them, and reseed the
 * CRNG now: after a restore, every fork of one snapshot would otherwise
 * draw the same random numbers until the kernel reseeds on its own.
 */
static int add_entropy(const char *hex)
{
	struct {
		struct rand_pool_info info;
		uint8_t buf[AGENT_ENTROPY_MAX];
	} r;
	size_t n = strlen(hex) / 2; /* agent_proto checked: even, hex, <= max */
	int fd, err = 0;

	for (size_t i = 0; i < n; i++)
		sscanf(hex + 2 * i, "%2hhx", &r.buf[i]);
	r.info.entropy_count = (int)(n * 8);
	r.info.buf_size = (int)n;
	fd = open("/dev/urandom", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	if (ioctl(fd, RNDADDENTROPY, &r.info) < 0 || ioctl(fd, RNDRESEEDCRNG) < 0)
		err = errno;
	close(fd);
	explicit_bzero(&r, sizeof(r));
	return err;
}

void agent_serve_sync_clock(struct agent *a, struct agent_conn *c, struct agent_msg *m)
{
	struct timespec before,
		now = { .tv_sec = m->u.clock.time_ns / 1000000000,
			.tv_nsec = m->u.clock.time_ns % 1000000000 };
	struct agent_kv kv[2];
	struct agent_line l;
	int e;

	(void)a;
	if (m->u.clock.entropy && (e = add_entropy(m->u.clock.entropy))) {
		agent_reply_error(c, agent_errno_code(e), "sync_clock: adding entropy: %s",
				  strerror(e));
		return;
	}
	clock_gettime(CLOCK_REALTIME, &before);
	if (clock_settime(CLOCK_REALTIME, &now) < 0) {
		e = errno;
		agent_reply_error(c, agent_errno_code(e), "sync_clock: setting the clock: %s",
				  strerror(e));
		return;
	}
	/* time_ns is range-checked (2000..2100), so neither side overflows. */
	kv[0] = AGENT_INT("delta_ns",
			  m->u.clock.time_ns -
				  ((int64_t)before.tv_sec * 1000000000 + before.tv_nsec));
	kv[1] = AGENT_BOOL("reseeded", m->u.clock.entropy != NULL);
	agent_conn_send_line(c, &l, agent_line_ok(&l, kv, 2));
}

void agent_serve_shutdown(struct agent *a, struct agent_conn *c, struct agent_msg *m)
{
	agent_reply_ok(c);
	/* "and the agent closes the connection": the host sees EOF now and
	 * closes its end once it read the reply; only then may the reset
	 * drop what vsock still holds (the descriptor goes with the machine). */
	agent_conn_linger(c, AGENT_SHUTDOWN_LINGER_MS);
	shutdown(c->fd, SHUT_RDWR);
	shutdown_run(a->shutdown, m->u.grace_ms);
}
